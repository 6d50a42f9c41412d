"""The workloads of bench/bench.py: each builds the vkml graph and the equivalent PyTorch code.

A workload is a function ``(ctx) -> Case``. The arithmetic is written once where vkml and
PyTorch share the names (``lib`` is the ``vkml`` or the ``torch`` module), so both sides run
the very same operations. Inputs are the same numpy data uploaded to both sides.

    >>> ctx = Context(vkml.best_device(), torch.device("cpu"), quick=True)   # doctest: +SKIP
    >>> case = WORKLOADS["add"](ctx)                                         # doctest: +SKIP
    >>> case.vkml().realize(); case.torch()                                  # doctest: +SKIP
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import vkml

F32, F16 = "float32", "float16"


@dataclass
class Work:
    """How much a workload moves or computes: rate = amount / time."""

    amount: float
    unit: str  # "B" (bytes through device memory, each input read once, each output written once) or "FLOP"


@dataclass
class Case:
    """One workload at one size: the vkml graph builder, the PyTorch peer(s), and the bookkeeping.

    ``torch`` maps a peer's label (``"eager"``, ``"torch.compile"``) to its callable; each peer
    gives one row of the table; both sides do the same ``work``.
    """

    size: str
    vkml: Callable[[], object]
    torch: dict[str, Callable[[], object]]
    work: Work | None
    tolerance: float = 1e-5
    note: str = ""


@dataclass
class Context:
    """The devices, the size mode, and a cache of inputs shared between workloads."""

    device: object  # the vkml device
    torch_device: object  # torch.device
    quick: bool
    seed: int = 0
    torch_compile: bool = False
    _inputs: dict = field(default_factory=dict)

    def array(self, shape: tuple[int, ...], dtype: str = F32, positive: bool = False, tag: str = "") -> np.ndarray:
        """Reproducible random data in [-1, 1) (or [0.5, 2) when ``positive``); never zeros."""
        key = ("array", shape, dtype, positive, tag)
        if key not in self._inputs:
            rng = np.random.default_rng([self.seed, zlib.crc32(repr(key).encode())])
            data = rng.random(int(np.prod(shape)), dtype=np.float32).reshape(shape)
            data = data * 1.5 + 0.5 if positive else data * 2 - 1
            self._inputs[key] = data.astype(dtype, copy=False)
        return self._inputs[key]

    def pair(self, shape: tuple[int, ...], dtype: str = F32, positive: bool = False, tag: str = ""):
        """The same random data as a realized vkml tensor and a torch tensor on the compared devices."""
        key = ("pair", shape, dtype, positive, tag)
        if key not in self._inputs:
            import torch

            data = self.array(shape, dtype, positive, tag)
            ours = vkml.tensor(data, device=self.device).realize()
            theirs = torch.from_numpy(data).to(self.torch_device)
            self._inputs[key] = (ours, theirs)
        return self._inputs[key]

    def forget_inputs(self) -> None:
        self._inputs.clear()


def _n(ctx: Context, full: int, quick: int) -> int:
    return quick if ctx.quick else full


def _elements(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def _compiled(ctx: Context, fn: Callable) -> dict[str, Callable]:
    """``{"torch.compile": compiled fn}`` when asked for and torch.compile works here, else {}."""
    if not ctx.torch_compile:
        return {}
    import torch

    try:
        compiled = torch.compile(fn)
        compiled()  # the compile happens here; a missing compiler fails here
    except Exception:  # no C++ compiler / Triton: the row is left out and the note says why
        return {}
    return {"torch.compile": compiled}


# ---------------------------------------------------------------------------- bandwidth


def add(ctx: Context) -> Case:
    """float32 a + b: two reads and a write per element."""
    n = _n(ctx, 1 << 28, 1 << 20)
    (a, ta), (b, tb) = ctx.pair((n,), tag="a"), ctx.pair((n,), tag="b")
    return Case(_elements(n), lambda: a + b, {"eager": lambda: ta + tb}, Work(3 * 4 * n, "B"))


def chain8(lib, a, b):
    """Eight elementwise ops over two inputs; one fused kernel in vkml, eight kernels in eager PyTorch."""
    x = a * b
    x = x + a
    x = x * 0.5
    x = x - b
    x = lib.maximum(x, a)
    x = x * x
    x = x + 1.0
    return x * b


def chain(ctx: Context) -> Case:
    import torch

    n = _n(ctx, 1 << 28, 1 << 20)
    (a, ta), (b, tb) = ctx.pair((n,), tag="a"), ctx.pair((n,), tag="b")
    peers = {"eager": lambda: chain8(torch, ta, tb)}
    peers.update(_compiled(ctx, lambda: chain8(torch, ta, tb)))
    note = "" if len(peers) > 1 or not ctx.torch_compile else "torch.compile did not run here"
    return Case(_elements(n), lambda: chain8(vkml, a, b), peers, Work(3 * 4 * n, "B"), tolerance=1e-6, note=note)


def total(ctx: Context) -> Case:
    """Sum of every element: one read per element."""
    n = _n(ctx, 1 << 28, 1 << 20)
    a, ta = ctx.pair((n,), tag="a")
    return Case(_elements(n), lambda: a.sum(), {"eager": lambda: ta.sum()}, Work(4 * n, "B"), tolerance=1e-5)


def sum_axis0(ctx: Context) -> Case:
    """Column sums (``grad.sum(0)``, a bias gradient): the reduced axis is strided, the kept one contiguous."""
    rows, cols = (1024, 1024) if ctx.quick else (8192, 8192)
    x, tx = ctx.pair((rows, cols), tag="rows")
    return Case(
        f"{rows}×{cols}", lambda: x.sum(0), {"eager": lambda: tx.sum(0)}, Work(4 * rows * cols, "B"), tolerance=1e-5
    )


def softmax(ctx: Context) -> Case:
    rows, cols = (512, 1024) if ctx.quick else (8192, 8192)
    x, tx = ctx.pair((rows, cols), tag="rows")
    import torch

    return Case(
        f"{rows}×{cols}",
        lambda: vkml.softmax(x, -1),
        {"eager": lambda: torch.softmax(tx, -1)},
        Work(2 * 4 * rows * cols, "B"),
        tolerance=1e-5,
    )


def layer_norm_vkml(x, weight, bias, eps: float = 1e-5):
    """LayerNorm over the last dim: ``vkml.nn.functional.layer_norm`` where it exists, else the same composite."""
    library = getattr(vkml.nn.functional, "layer_norm", None)
    if library is not None:
        return library(x, (x.shape[-1],), weight, bias, eps)
    mean = x.mean(-1, keepdim=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdim=True)
    return centred * vkml.rsqrt(variance + eps) * weight + bias


def layer_norm(ctx: Context) -> Case:
    import torch

    rows, cols = (512, 1024) if ctx.quick else (8192, 8192)
    x, tx = ctx.pair((rows, cols), tag="rows")
    w, tw = ctx.pair((cols,), tag="ln_weight")
    b, tb = ctx.pair((cols,), tag="ln_bias")
    return Case(
        f"{rows}×{cols}",
        lambda: layer_norm_vkml(x, w, b),
        {"eager": lambda: torch.nn.functional.layer_norm(tx, (cols,), tw, tb, 1e-5)},
        Work(2 * 4 * rows * cols, "B"),
        tolerance=1e-5,
        note="vkml: mean, centred mean of squares, rsqrt, output: one kernel where a row fits one chunk; torch: F.layer_norm",
    )


# ---------------------------------------------------------------------------- matmul


def _matmul(ctx: Context, n: int, dtype: str, layout: str = "nn") -> Case:
    """C = A @ B, n×n by n×n; ``layout`` "nt" is A @ B.T (``nn.Linear``'s forward), "tn" A.T @ B (its weight gradient)."""

    a, ta = ctx.pair((n, n), dtype, tag="mm_a")
    b, tb = ctx.pair((n, n), dtype, tag="mm_b")
    note = (
        "torch: TF32 off"
        if dtype == F32
        else "float16 in, float32 accumulate, float16 out; torch: reduced-precision reduction off"
    )
    if layout != "nn":
        note = f"{'A @ B.T' if layout == 'nt' else 'A.T @ B'}; {note}"
    product = {"nn": lambda x, y: x @ y, "nt": lambda x, y: x @ y.T, "tn": lambda x, y: x.T @ y}[layout]
    return Case(
        f"{n}² {dtype}",
        lambda: product(a, b),
        {"eager": lambda: product(ta, tb)},
        Work(2.0 * n * n * n, "FLOP"),
        tolerance=1e-5 if dtype == F32 else 2e-3,
        note=note,
    )


def matmul_f32_4096(ctx: Context) -> Case:
    return _matmul(ctx, _n(ctx, 4096, 256), F32)


def matmul_f32_4096_nt(ctx: Context) -> Case:
    return _matmul(ctx, _n(ctx, 4096, 256), F32, "nt")


def matmul_f32_4096_tn(ctx: Context) -> Case:
    return _matmul(ctx, _n(ctx, 4096, 256), F32, "tn")


def matmul_f32_8192(ctx: Context) -> Case:
    return _matmul(ctx, _n(ctx, 8192, 512), F32)


def matmul_f16_8192(ctx: Context) -> Case:
    return _matmul(ctx, _n(ctx, 8192, 512), F16)


def _skinny(ctx: Context, body: Callable, shapes: tuple, flop_shape: tuple[int, int, int], what: str) -> Case:
    """One of issue 7's skinny products of the MLP step (bench/bench_matmul_skinny.py compares their tiles)."""
    pairs = [ctx.pair(shape, tag=f"skinny{i}") for i, shape in enumerate(shapes)]
    ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    import torch

    m, n, k = flop_shape
    return Case(
        what,
        lambda: body(vkml, *ours),
        {"eager": lambda: body(torch, *theirs)},
        Work(2.0 * m * n * k, "FLOP"),
        tolerance=1e-5,
        note="torch: TF32 off; vkml: one kernel (the product and its epilogue)",
    )


def matmul_skinny_k2(ctx: Context) -> Case:
    """relu(x @ w1.T + b1): the MLP's first layer, K = 2 (the time is the 4096² stores)."""
    b = _n(ctx, 4096, 256)
    return _skinny(ctx, lambda lib, x, w, c: lib.relu(x @ w.T + c), ((b, 2), (b, 2), (b,)), (b, b, 2), f"{b}x2 @ 2x{b}")


def matmul_skinny_k3(ctx: Context) -> Case:
    """(g @ w3) * (h > 0): the gradient through the last layer and a relu, K = 3."""
    b = _n(ctx, 4096, 256)
    return _skinny(ctx, lambda lib, g, w, h: (g @ w) * (h > 0), ((b, 3), (3, b), (b, b)), (b, b, 3), f"{b}x3 @ 3x{b}")


def matmul_skinny_n3(ctx: Context) -> Case:
    """h @ w3.T + b3: the MLP's last layer, N = 3 with K = 4096."""
    b = _n(ctx, 4096, 256)
    return _skinny(ctx, lambda lib, h, w, c: h @ w.T + c, ((b, b), (3, b), (3,)), (b, 3, b), f"{b}x{b} @ {b}x3")


def matmul_skinny_tn3(ctx: Context) -> Case:
    """h.T @ g: the last layer's weight gradient, N = 3 with K = 4096 and a transposed A."""
    b = _n(ctx, 4096, 256)
    return _skinny(ctx, lambda lib, h, g: h.T @ g, ((b, b), (b, 3)), (b, 3, b), f"{b}x{b}.T @ {b}x3")


def matmul_skinny_m2(ctx: Context) -> Case:
    """x.T @ g1: the first layer's weight gradient, M = 2 with K = 4096."""
    b = _n(ctx, 4096, 256)
    return _skinny(ctx, lambda lib, x, g: x.T @ g, ((b, 2), (b, b)), (2, b, b), f"{b}x2.T @ {b}x{b}")


# ---------------------------------------------------------------------------- op suite

# (name, arity, positive input, body) — body(lib, a, b) with the same names on both sides.
OP_SUITE: tuple[tuple[str, int, bool, Callable], ...] = (
    ("add", 2, False, lambda lib, a, b: a + b),
    ("mul", 2, False, lambda lib, a, b: a * b),
    ("div", 2, True, lambda lib, a, b: a / b),
    ("maximum", 2, False, lambda lib, a, b: lib.maximum(a, b)),
    ("where", 2, False, lambda lib, a, b: lib.where(a > b, a, b)),
    ("exp", 1, False, lambda lib, a, b: lib.exp(a)),
    ("log", 1, True, lambda lib, a, b: lib.log(a)),
    ("sqrt", 1, True, lambda lib, a, b: lib.sqrt(a)),
    ("tanh", 1, False, lambda lib, a, b: lib.tanh(a)),
    ("sigmoid", 1, False, lambda lib, a, b: lib.sigmoid(a)),
    ("relu", 1, False, lambda lib, a, b: lib.relu(a)),
    ("gelu", 1, False, lambda lib, a, b: lib.nn.functional.gelu(a)),
    ("pow", 1, True, lambda lib, a, b: lib.pow(a, 1.5)),
    ("sum_rows", 1, False, lambda lib, a, b: a.sum(-1)),
    ("amax_rows", 1, False, lambda lib, a, b: lib.amax(a, -1)),
    ("mean_rows", 1, False, lambda lib, a, b: a.mean(-1)),
    ("softmax_rows", 1, False, lambda lib, a, b: lib.softmax(a, -1)),
    ("argmax_rows", 1, False, lambda lib, a, b: lib.argmax(a, -1)),
)


def _op_case(name: str, arity: int, positive: bool, body: Callable) -> Callable[[Context], Case]:
    def make(ctx: Context) -> Case:
        import torch

        n = _n(ctx, 1 << 24, 1 << 16)
        shape = (n // 1024, 1024)
        a, ta = ctx.pair(shape, positive=positive, tag="op_a")
        b, tb = ctx.pair(shape, positive=positive, tag="op_b")
        reduces = name.endswith("_rows")
        bytes_moved = 4 * n * arity + (4 * n // 1024 if reduces else 4 * n)
        return Case(
            f"{_elements(n)} ({shape[0]}×{shape[1]})",
            lambda: body(vkml, a, b),
            {"eager": lambda: body(torch, ta, tb)},
            Work(bytes_moved, "B"),
            tolerance=1e-5,
        )

    make.__doc__ = f"op suite: {name}"
    return make


# ---------------------------------------------------------------------------- registry

WORKLOADS: dict[str, Callable[[Context], Case]] = {
    "add": add,
    "chain8": chain,
    "sum": total,
    "sum_axis0": sum_axis0,
    "softmax": softmax,
    "layer_norm": layer_norm,
    "matmul_f32_4096": matmul_f32_4096,
    "matmul_f32_4096_nt": matmul_f32_4096_nt,
    "matmul_f32_4096_tn": matmul_f32_4096_tn,
    "matmul_f32_8192": matmul_f32_8192,
    "matmul_f16_8192": matmul_f16_8192,
    "matmul_skinny_k2": matmul_skinny_k2,
    "matmul_skinny_k3": matmul_skinny_k3,
    "matmul_skinny_n3": matmul_skinny_n3,
    "matmul_skinny_tn3": matmul_skinny_tn3,
    "matmul_skinny_m2": matmul_skinny_m2,
}
OP_WORKLOADS: dict[str, Callable[[Context], Case]] = {f"op:{name}": _op_case(name, *rest) for name, *rest in OP_SUITE}
