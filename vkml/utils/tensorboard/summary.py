"""The summary protocol buffers ``SummaryWriter`` writes (tensorboard's protos, PyTorch's layout of them)."""

from __future__ import annotations

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData


def to_numpy(value) -> np.ndarray:
    """A vkml tensor, a numpy array, a list or a number as an ndarray (the writer's only conversion)."""
    if hasattr(value, "_node"):  # a vkml Tensor (this module sits below it)
        value = value.detach()
        return value.float().numpy() if value.dtype.name == "bfloat16" else value.numpy()
    return np.asarray(value)


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    array = to_numpy(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(
            f"Tensor should contain one element (0 dimensions). Was given size: {array.size} and "
            f"{array.ndim} dimensions."
        )
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    proto = (
        TensorProto(double_val=[number], dtype="DT_DOUBLE")
        if double_precision
        else TensorProto(float_val=[number], dtype="DT_FLOAT")
    )
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def histogram_raw(tag: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> Summary:  # noqa: A002
    hist = HistogramProto(
        min=min, max=max, num=num, sum=sum, sum_squares=sum_squares, bucket_limit=bucket_limits, bucket=bucket_counts
    )
    return Summary(value=[Summary.Value(tag=tag, histo=hist)])


def histogram(tag: str, values, bins, max_bins: int | None = None) -> Summary:
    """TensorBoard's histogram of ``values``: numpy's counts over ``bins`` (merged down to ``max_bins``),
    trimmed to the buckets from the first to the last non-empty one plus an empty one on the left (TensorBoard
    keeps only right limits)."""
    values = to_numpy(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        if len(counts) % group:
            counts = np.pad(counts, (0, group - len(counts) % group))
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:  # every value outside the bins
        raise ValueError("The histogram is empty, please file a bug report.")
    first, last = int(nonzero[0]), int(nonzero[-1]) + 1
    counts = counts[first - 1 : last] if first > 0 else np.concatenate([[0], counts[:last]])
    limits = limits[first : last + 1]
    hist = HistogramProto(
        min=values.min(),
        max=values.max(),
        num=len(values),
        sum=values.sum(),
        sum_squares=values.dot(values),
        bucket_limit=limits.tolist(),
        bucket=counts.tolist(),
    )
    return Summary(value=[Summary.Value(tag=tag, histo=hist)])


def to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """An image array in ``dataformats`` (letters of N, C, H, W, each once) as H × W × C with C of 3 or 4
    (a grey image repeated into three channels); a batch becomes one grid image, as PyTorch's."""
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {dataformats}")
    if len(dataformats) != array.ndim:
        raise AssertionError(
            f"size of input tensor and input format are different. tensor shape: {array.shape}, "
            f"input_format: {dataformats}"
        )
    dataformats = dataformats.upper()
    if array.ndim == 4:
        array = _grid(array.transpose([dataformats.index(c) for c in "NCHW"]))
        return array.transpose(1, 2, 0)
    if array.ndim == 3:
        array = array.transpose([dataformats.index(c) for c in "HWC"])
        return np.concatenate([array] * 3, 2) if array.shape[2] == 1 else array
    array = array.transpose([dataformats.index(c) for c in "HW"])
    return np.stack([array] * 3, 2)


def _grid(images: np.ndarray, columns: int = 8) -> np.ndarray:
    """N × C × H × W images side by side, ``columns`` to a row (PyTorch's ``make_grid`` for tensorboard)."""
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, 1)
    if images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, c, h, w = images.shape
    columns = min(n, columns)
    rows = int(np.ceil(float(n) / columns))
    canvas = np.zeros((c, h * rows, w * columns), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, columns)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = images[i]
    return canvas


def image(tag: str, value, dataformats: str = "NCHW") -> Summary:
    """A PNG of ``value``: floats in [0, 1] scaled by 255, uint8 as they are; out-of-range values clipped."""
    from PIL import Image  # PyTorch's writer needs Pillow for images too

    array = to_hwc(to_numpy(value), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    array = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = array.shape
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    encoded = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=buffer.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=encoded)])


def text(tag: str, string: str) -> Summary:
    plugin = SummaryMetadata.PluginData(plugin_name="text", content=TextPluginData(version=0).SerializeToString())
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[string.encode(encoding="utf_8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    return Summary(
        value=[Summary.Value(tag=tag + "/text_summary", metadata=SummaryMetadata(plugin_data=plugin), tensor=proto)]
    )


def hparams(hparam_dict: dict, metric_dict: dict, domain_discrete: dict | None = None) -> tuple:
    """The hparams plugin's experiment, session-start and session-end summaries, as PyTorch writes them."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domain_discrete = domain_discrete or {}
    if not isinstance(domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(
                f"parameter: hparam_domain_discrete[{k}] should be a list of same type as hparam_dict[{k}]."
            )
    infos = []
    start = plugin_data_pb2.SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if hasattr(v, "_node"):
            v = float(to_numpy(v).reshape(-1)[0])
        # PyTorch's order: a bool is an int first, so it is logged as a number
        if isinstance(v, (int, float)):
            field, kind = "number_value", "DATA_TYPE_FLOAT64"
        elif isinstance(v, str):
            field, kind = "string_value", "DATA_TYPE_STRING"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(start.hparams[k], field, v)
        domain = None
        if k in domain_discrete:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domain_discrete[k]])
        infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind), domain_discrete=domain))

    def summary(tag: str, **content) -> Summary:
        data = plugin_data_pb2.HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString())
        return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])

    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
    experiment = summary(
        metadata.EXPERIMENT_TAG, experiment=api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    )
    started = summary(metadata.SESSION_START_INFO_TAG, session_start_info=start)
    ended = summary(
        metadata.SESSION_END_INFO_TAG,
        session_end_info=plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS")),
    )
    return experiment, started, ended
