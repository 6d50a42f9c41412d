"""Host time of the demo's training step, uncaptured and replayed by ``vkml.jit`` (docs/jit.md).

    .venv/bin/python bench/bench_jit.py [--device vulkan:0] [--width 64 --batch 60] [--steps 200] [--fresh]

The step is the demo's (vkml/demo.py: 2 → width → width → 3, ReLU, dropout 0.1, Adam,
cross-entropy) without its ``loss.item()``; ``--width 4096 --batch 4096`` is issue 7's MLP;
``--fresh`` feeds it batches uploaded anew every step (a data loader's) instead of windows of
one dataset tensor. For each side it prints, per step: the host's wall time from the call to
its return with the device idle at each call (a ``synchronize()`` before, untimed), the calling
thread's CPU time for the same (what the host spends, whatever else the machine runs; mean and
median), of which the driver's submissions (vkResetFences + vkQueueSubmit, per call: runs and
transfer copies alike), the wall time of a step back to back (the device's time included:
``synchronize()`` after the last), and the submissions a step makes. It also checks that both
sides' losses have the same bits.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkml  # noqa: E402
import vkml.nn.functional as F  # noqa: E402
from vkml import debug, demo  # noqa: E402


class _SubmitTimer:
    """Thread CPU time of the driver's submission (``Recordings.submit`` and ``submit_again``:
    vkResetFences and vkQueueSubmit, with their few lines of bookkeeping) while installed; None off Vulkan."""

    def __init__(self, device):
        self.recordings = getattr(device, "recordings", None)
        self.seconds, self.calls = 0.0, 0
        if self.recordings is not None:
            # a replay that submits a kept command buffer goes through submit_again, a recording through submit
            for name in ("submit", "submit_again"):
                setattr(self.recordings, name, self._timed(getattr(self.recordings, name)))

    def _timed(self, original):
        def timed(*args, **kwargs):
            c0 = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - c0
                self.calls += 1

        return timed

    def stop(self) -> None:
        if self.recordings is not None:
            del self.recordings.submit, self.recordings.submit_again  # the class's methods again

    def us_per_call(self):
        return 1e6 * self.seconds / self.calls if self.calls else None


def _side(device, width: int, batch: int, steps: int, jitted: bool, fresh: bool = False) -> dict:
    x_all, y_all = demo.make_spirals(points_per_class=max(300, batch))
    batches = 3
    x = vkml.tensor(x_all[: batch * batches], device=device)
    y = vkml.tensor(y_all[: batch * batches], device=device)
    model = demo.make_model(device, width=width)
    opt = vkml.optim.Adam(model.parameters(), lr=0.01)

    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = vkml.jit(step) if jitted else step
    views = [(x[i * batch : (i + 1) * batch], y[i * batch : (i + 1) * batch]) for i in range(batches)]

    def batch_of(i: int):
        """Step ``i``'s batch: a window of the dataset's tensors, or (``fresh``) new tensors uploaded
        from the host, as a data loader's batches are."""
        if not fresh:
            return views[i % batches]
        rows = slice((i % batches) * batch, (i % batches + 1) * batch)
        return vkml.tensor(x_all[rows], device=device), vkml.tensor(y_all[rows], device=device)

    losses = [f(*batch_of(i)).item() for i in range(4 * batches + 2)]  # warm-up: compiles, captures
    wall = cpu = 0.0
    cpus = []
    submit = _SubmitTimer(device)
    for i in range(steps):
        args = batch_of(i)
        device.synchronize()
        w0, c0 = time.perf_counter(), time.thread_time()
        loss = f(*args)
        cpus.append(time.thread_time() - c0)
        wall += time.perf_counter() - w0
        if i % 16 == 0:
            losses.append(loss.item())  # reading the loss passes cross_entropy's label check
    submit.stop()
    cpu = sum(cpus)
    device.synchronize()
    debug.reset_counters()
    start = time.perf_counter()
    for i in range(steps):
        loss = f(*batch_of(i))
        if i % 16 == 15:
            losses.append(loss.item())  # a loop that logs its loss now and then (unread checks pile up)
    device.synchronize()
    back_to_back = (time.perf_counter() - start) / steps
    submissions = debug.counters()["submissions"] / steps
    return {
        "idle_wall_us": 1e6 * wall / steps,
        "thread_cpu_us": 1e6 * cpu / steps,
        "thread_cpu_median_us": 1e6 * float(np.median(cpus)),
        "submit_us": submit.us_per_call(),
        "back_to_back_us": 1e6 * back_to_back,
        "submissions": submissions,
        "losses": np.array(losses, np.float32).view(np.uint32),
        "stats": getattr(f, "stats", None),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--width", type=int, default=demo.WIDTH)
    parser.add_argument("--batch", type=int, default=demo.BATCH)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--fresh", action="store_true", help="upload each batch anew, as a data loader's")
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    print(f"{device.name}: width {args.width}, batch {args.batch}, {args.steps} steps")
    sides = {
        name: _side(device, args.width, args.batch, args.steps, name == "jit", args.fresh) for name in ("plain", "jit")
    }
    for name, r in sides.items():
        print(
            f"  {name:5}  host {r['idle_wall_us']:9.1f} us (thread CPU {r['thread_cpu_us']:8.1f} us, median "
            f"{r['thread_cpu_median_us']:8.1f} us)  back to back {r['back_to_back_us']:9.1f} us/step  "
            f"{r['submissions']:.2f} submissions/step"
        )
        if r["submit_us"] is not None:
            print(f"         of which the driver's submission (Recordings.submit): {r['submit_us']:.1f} us a call")
    print(f"  jit stats: {sides['jit']['stats']}")
    same = np.array_equal(sides["plain"]["losses"], sides["jit"]["losses"])
    print(f"  losses bit for bit equal: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
