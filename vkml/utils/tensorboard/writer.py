"""``SummaryWriter`` and ``FileWriter`` with ``torch.utils.tensorboard``'s names, arguments and files."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto import event_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _summary


class FileWriter:
    """Writes events and summaries into one event file of ``log_dir`` (tensorboard's asynchronous writer).

    >>> FileWriter("runs/x").get_logdir()  # doctest: +SKIP
    'runs/x'
    """

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = ""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()


class SummaryWriter:
    """Writes scalars, histograms, images, text and hyper-parameters for TensorBoard, as
    ``torch.utils.tensorboard.SummaryWriter``: the same folders (``runs/<date>_<host><comment>`` by default,
    one folder per tag of ``add_scalars``, one per run of ``add_hparams``), the same summaries.

    >>> from vkml.utils.tensorboard import SummaryWriter  # doctest: +SKIP
    >>> with SummaryWriter(comment="_lr0.1") as writer:  # doctest: +SKIP
    ...     for step in range(3):
    ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(
        self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10, flush_secs: int = 120,
        filename_suffix: str = "",
    ):  # fmt: skip
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir, self.purge_step = log_dir, purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        # TensorBoard's default bins ('tensorflow'): ±1e-12 growing by 1.1 up to 1e20, and 0
        limits, v = [], 1e-12
        while v < 1e20:
            limits.append(v)
            v *= 1.1
        self.default_bins = [-v for v in reversed(limits)] + [0] + limits

    def _get_file_writer(self) -> FileWriter:
        """The writer of ``log_dir``'s own event file; made again after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # hides the events of a crashed run from that step on
                self.file_writer.add_event(event_pb2.Event(step=self.purge_step, file_version="brain.Event:2"))
                start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
                self.file_writer.add_event(event_pb2.Event(step=self.purge_step, session_log=start))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(
        self, tag, scalar_value, global_step=None, walltime=None, new_style: bool = False,
        double_precision: bool = False,
    ) -> None:  # fmt: skip
        """One number (a Python number or a one-element tensor) at ``global_step``."""
        made = _summary.scalar(tag, scalar_value, new_style, double_precision)
        self._get_file_writer().add_summary(made, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict: dict, global_step=None, walltime=None) -> None:
        """Several numbers on one chart: each tag's values go to a folder of its own under ``log_dir``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            folder = root + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(folder)
            if writer is None:
                writer = self.all_writers[folder] = FileWriter(
                    folder, self.max_queue, self.flush_secs, self.filename_suffix
                )
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None) -> None:
        """A histogram of ``values``' elements (``bins``: 'tensorflow', or any of numpy.histogram's)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(
        self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts, global_step=None, walltime=None
    ) -> None:  # noqa: A002
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        made = _summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(made, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats: str = "CHW") -> None:
        """One image: floats in [0, 1] or uint8, laid out as ``dataformats`` (CHW, HWC, HW, ...)."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats: str = "NCHW") -> None:
        """A batch of images, written as one grid image (eight to a row)."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close: bool = True, walltime=None) -> None:
        """A matplotlib figure (or a list of them) rendered to an image."""
        import numpy as np

        figures = figure if isinstance(figure, list) else [figure]
        images = []
        for fig in figures:
            fig.canvas.draw()
            rgba = np.asarray(fig.canvas.buffer_rgba(), dtype=np.uint8)
            images.append(rgba[:, :, :3].transpose(2, 0, 1))
            if close:
                import matplotlib.pyplot as plt

                plt.close(fig)
        if isinstance(figure, list):
            self.add_images(tag, np.stack(images), global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, images[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string: str, global_step=None, walltime=None) -> None:
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """Hyper-parameters and their metrics for the HPARAMS tab, in a run folder of their own under ``log_dir``."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        made = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        folder = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=folder) as run:
            for one in made:
                run.file_writer.add_summary(one, global_step)
            for k, v in metric_dict.items():
                run.add_scalar(k, v, global_step)

    def _unsupported(self, name: str):
        raise NotImplementedError(
            f"SummaryWriter.{name} is not supported by vkml.utils.tensorboard (scalars, histograms, images, "
            "figures, text and hyper-parameters are)"
        )

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """PyTorch traces the model with its JIT to draw it; vkml has no such tracer: raises NotImplementedError."""
        self._unsupported("add_graph")

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default", metadata_header=None):
        self._unsupported("add_embedding")

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        self._unsupported("add_video")

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._unsupported("add_audio")

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None, walltime=None):
        self._unsupported("add_pr_curve")

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None, walltime=None):
        self._unsupported("add_mesh")

    def add_custom_scalars(self, layout):
        self._unsupported("add_custom_scalars")

    def flush(self) -> None:
        """Writes every pending event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flushes and closes every event file (a second close does nothing, as PyTorch's)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
