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
    # A float64 computation of the result, for rows whose float32 sums cancel (long gradient chains): the
    # row then passes where vkml is within ``tolerance`` of PyTorch or no further from it than 2x PyTorch's
    # own distance from float64 (both orders are within their bounds; neither side is "the" answer).
    reference: Callable[[], object] | None = None


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


def window_offset(ctx: Context) -> Case:
    """Sum of squares of a 65,536-element window at a new offset every call (issue 20: no compile per offset).

    The offset is a kernel parameter, so after the first call no kernel is lowered or compiled again; before,
    each offset was a new kernel (PyTorch/vkml 0.001).
    """
    n, width = _n(ctx, 1 << 24, 1 << 20), 65536
    x, tx = ctx.pair((n,), tag="a")
    offset = [0]  # vkml's calls move it; PyTorch's take the window vkml took last (the results compare)

    def ours():
        offset[0] = (offset[0] + 1) % (n - width)
        return (x[offset[0] : offset[0] + width] ** 2).sum()

    def theirs():
        return (tx[offset[0] : offset[0] + width] ** 2).sum()

    return Case(
        f"{width} of {_elements(n)}",
        ours,
        {"eager": theirs},
        Work(4 * width, "B"),
        tolerance=1e-5,
        note="a fresh offset each call: a parameter, not a new kernel",
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
    "window_offset": window_offset,
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


# ---------------------------------------------------------------------------- layers (issues 18 and 20)


def _conv_flop(batch: int, cin: int, cout: int, height: int, width: int, taps: int = 9) -> float:
    """2·N·O·H·W·C·taps: a stride-1, same-padded convolution's multiply-adds, counted twice."""
    return 2.0 * batch * cout * height * width * cin * taps


def _conv_shape(ctx: Context) -> tuple[int, int, int]:
    """(batch, channels, side) of the conv rows: ResNet's first stage, or a lavapipe-sized stand-in."""
    return (2, 8, 12) if ctx.quick else (64, 64, 56)


def _conv2d(ctx: Context, dtype: str) -> Case:
    """3×3 convolution, stride 1, padding 1, no bias: ResNet's stage-1 layer."""
    import torch

    batch, channels, side = _conv_shape(ctx)
    x, tx = ctx.pair((batch, channels, side, side), dtype, tag="conv_x")
    w, tw = ctx.pair((channels, channels, 3, 3), dtype, tag="conv_w")
    return Case(
        f"{batch}×{channels}×{side}² 3×3 {dtype}",
        lambda: vkml.nn.functional.conv2d(x, w, padding=1),
        {"eager": lambda: torch.nn.functional.conv2d(tx, tw, padding=1)},
        Work(_conv_flop(batch, channels, channels, side, side), "FLOP"),
        tolerance=1e-5 if dtype == F32 else 2e-3,
        note="torch: TF32 off" if dtype == F32 else "float16 in and out",
    )


def conv2d_f32(ctx: Context) -> Case:
    return _conv2d(ctx, F32)


def conv2d_f16(ctx: Context) -> Case:
    return _conv2d(ctx, F16)


def basic_blocks(lib, x, params):
    """ResNet basic blocks: relu(x + bn(conv(relu(bn(conv(x)))))), batch statistics (training mode).

    ``params`` holds (w1, g1, b1, w2, g2, b2) per block; no running statistics, so that the
    repetitions change no state and both sides do the same work each time.
    """
    F = lib.nn.functional
    for w1, g1, b1, w2, g2, b2 in params:
        y = F.relu(F.batch_norm(F.conv2d(x, w1, padding=1), None, None, g1, b1, training=True))
        y = F.batch_norm(F.conv2d(y, w2, padding=1), None, None, g2, b2, training=True)
        x = F.relu(x + y)
    return x


def _block_inputs(ctx: Context, blocks: int = 2):
    batch, channels, side = _conv_shape(ctx)
    x = ctx.pair((batch, channels, side, side), tag="block_x")
    params = []
    for i in range(blocks):
        for j in (1, 2):
            params.append(ctx.pair((channels, channels, 3, 3), tag=f"block{i}_w{j}"))
            params.append(ctx.pair((channels,), positive=True, tag=f"block{i}_g{j}"))
            params.append(ctx.pair((channels,), tag=f"block{i}_b{j}"))
    ours = [tuple(p[0] for p in params[k : k + 6]) for k in range(0, len(params), 6)]
    theirs = [tuple(p[1] for p in params[k : k + 6]) for k in range(0, len(params), 6)]
    return (batch, channels, side), x, ours, theirs


def resnet_block_fwd(ctx: Context) -> Case:
    """Two ResNet basic blocks, forward, batch statistics."""
    import torch

    (batch, channels, side), (x, tx), ours, theirs = _block_inputs(ctx)
    return Case(
        f"2 blocks, {batch}×{channels}×{side}²",
        lambda: basic_blocks(vkml, x, ours),
        {"eager": lambda: basic_blocks(torch, tx, theirs)},
        Work(4 * _conv_flop(batch, channels, channels, side, side), "FLOP"),
        tolerance=1e-4,
        note="conv3x3-BN-ReLU-conv3x3-BN + x, ReLU; BN on batch statistics; FLOP: the 4 convs only; torch: TF32 off",
    )


def resnet_block_train(ctx: Context) -> Case:
    """Two ResNet basic blocks, forward and backward: the gradients of every weight for a given output gradient."""
    import torch

    (batch, channels, side), (x, tx), ours, theirs = _block_inputs(ctx)
    g, tg = ctx.pair((batch, channels, side, side), tag="block_grad")
    ours_flat = [p.detach().requires_grad_() for block in ours for p in block]
    theirs_flat = [p.detach().requires_grad_() for block in theirs for p in block]

    def step(lib, x, flat, g):
        out = basic_blocks(lib, x, [tuple(flat[k : k + 6]) for k in range(0, len(flat), 6)])
        return lib.autograd.grad(out, flat, g)

    def reference():
        wide = [p.detach().double().requires_grad_() for p in theirs_flat]
        return step(torch, tx.double(), wide, tg.double())

    return Case(
        f"2 blocks, {batch}×{channels}×{side}²",
        lambda: step(vkml, x, ours_flat, g),
        {"eager": lambda: step(torch, tx, theirs_flat, tg)},
        Work(3 * 4 * _conv_flop(batch, channels, channels, side, side), "FLOP"),
        tolerance=1e-4,
        reference=reference,
        note="forward + autograd.grad of all 12 weights; compared: the first conv's weight gradient; "
        "FLOP: the 4 convs' forward, input- and weight-gradient",
    )


def _activation(ctx: Context) -> tuple[tuple[int, int, int, int], object, object]:
    shape = (2, 8, 24, 24) if ctx.quick else (64, 64, 112, 112)
    return (shape, *ctx.pair(shape, tag="act"))


def batch_norm_train(ctx: Context) -> Case:
    """BatchNorm2d's training forward: batch statistics, affine, running statistics updated."""
    import torch

    shape, x, tx = _activation(ctx)
    channels = shape[1]
    w, tw = ctx.pair((channels,), positive=True, tag="bn_weight")
    b, tb = ctx.pair((channels,), tag="bn_bias")
    # Running statistics of their own per side: each repetition moves them, as nn.BatchNorm2d does.
    stats = (vkml.zeros(channels, device=ctx.device), vkml.ones(channels, device=ctx.device))
    torch_stats = (torch.zeros(channels, device=ctx.torch_device), torch.ones(channels, device=ctx.torch_device))

    def ours():
        # The updated statistics are realized with the output: PyTorch updates them eagerly, and
        # vkml left alone would defer them, chaining one more pending update per repetition.
        return (vkml.nn.functional.batch_norm(x, *stats, w, b, training=True), *stats)

    def theirs():
        return (torch.nn.functional.batch_norm(tx, *torch_stats, tw, tb, training=True), *torch_stats)

    elements = int(np.prod(shape))
    return Case(
        "×".join(map(str, shape)),
        ours,
        {"eager": theirs},
        Work(2 * 4 * elements, "B"),
        tolerance=1e-5,
        note="running statistics updated and realized too; rate: the input read once, the output written once",
    )


def max_pool2d(ctx: Context) -> Case:
    """3×3 max pool, stride 2, padding 1: ResNet's stem pool."""
    import torch

    shape, x, tx = _activation(ctx)
    elements = int(np.prod(shape))
    out_elements = shape[0] * shape[1] * ((shape[2] + 1) // 2) * ((shape[3] + 1) // 2)
    return Case(
        "×".join(map(str, shape)),
        lambda: vkml.nn.functional.max_pool2d(x, 3, 2, 1),
        {"eager": lambda: torch.nn.functional.max_pool2d(tx, 3, 2, 1)},
        Work(4 * (elements + out_elements), "B"),
        tolerance=0.0,
        note="rate: the input read once, the output written once",
    )


def _sdpa(ctx: Context, seq: int, dtype: str, causal: bool) -> Case:
    """F.scaled_dot_product_attention(q, k, v), B4 H8 D64: issue 18's attention rows."""
    import torch

    shape = (1, 2, min(seq, 128), 64) if ctx.quick else (4, 8, seq, 64)
    (q, tq), (k, tk), (v, tv) = (ctx.pair(shape, dtype, tag=f"sdpa_{name}") for name in "qkv")
    batch, heads, length, dim = shape
    flop = 4.0 * batch * heads * length * length * dim  # q @ k.T and weights @ v
    return Case(
        f"B{batch} H{heads} T{length} D{dim} {dtype}{' causal' if causal else ''}",
        lambda: vkml.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
        {"eager": lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)},
        Work(flop / 2 if causal else flop, "FLOP"),
        tolerance=1e-5 if dtype == F32 else 2e-3,
        note="torch: its own backend choice (flash / memory-efficient / math); FLOP of causal rows: the unmasked half",
    )


def sdpa_f16_1024(ctx: Context) -> Case:
    return _sdpa(ctx, 1024, F16, causal=False)


def sdpa_f32_1024(ctx: Context) -> Case:
    return _sdpa(ctx, 1024, F32, causal=False)


def sdpa_f16_4096_causal(ctx: Context) -> Case:
    return _sdpa(ctx, 4096, F16, causal=True)


# Run after the matmuls (bench.py's ORDER), so that --deadline cuts them before the cheap rows.
LAYER_WORKLOADS: dict[str, Callable[[Context], Case]] = {
    "conv2d_f32": conv2d_f32,
    "conv2d_f16": conv2d_f16,
    "resnet_block_fwd": resnet_block_fwd,
    "resnet_block_train": resnet_block_train,
    "batch_norm_train": batch_norm_train,
    "max_pool2d": max_pool2d,
    "sdpa_f16_1024": sdpa_f16_1024,
    "sdpa_f32_1024": sdpa_f32_1024,
    "sdpa_f16_4096_causal": sdpa_f16_4096_causal,
}
WORKLOADS.update(LAYER_WORKLOADS)
