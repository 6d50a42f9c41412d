"""``scaled_dot_product_attention`` with ``torch.nn.functional``'s name, arguments and masking rules.

One fused kernel (vkml/kernels/attention.py) computes the forward pass: the (L, S) scores never
reach memory. It saves each row's log-sum-exp, from which two fused backward kernels
(vkml/kernels/attention_backward.py) recompute the weights block by block; dropout draws its keep
masks inside the kernels. dropout_p = 1, float64 and a mask that requires grad take the composite
path (``softmax(q @ kᵀ · scale + mask) @ v``); inputs with broadcast batch dims take a composite
backward (the same formulas as tensor ops).

>>> import vkml
>>> q = vkml.ones(1, 2, 4)
>>> scaled_dot_product_attention(q, q, q).shape
(1, 2, 4)
"""

from __future__ import annotations

import functools
import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from .. import config as vkml_config
from ..dsl.kernel import KernelCall, KernelOutput
from ..frontend import autograd, creation, sdpa_backends
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..frontend.autograd import is_grad_enabled
from ..frontend.autograd_api import Function
from ..frontend.autograd_api import grad as autograd_grad
from ..frontend.operators import _wrap
from ..graph import build as lazy
from ..graph.node import Node, Op
from ..ir import types as T
from ..kernels import attention as fused
from ..kernels import attention_backward as fused_backward
from ..kernels import attention_cm2 as fused_cm2
from ..kernels import attention_coopmat as fused_coopmat
from ..kernels.index import WIDE_INDEX_EXTENT
from ..kernels.tuning import tuning_for


def _check_inputs(query, key, value, attn_mask, dropout_p: float, is_causal: bool, enable_gqa: bool) -> None:
    op = "scaled_dot_product_attention"
    qs, ks, vs = query.shape, key.shape, value.shape  # each read makes a Size: read once
    if len(qs) < 2 or len(ks) < 2 or len(vs) < 2:
        raise RuntimeError(
            f"'{op}': expected query, key, and value to all be at least 2 dimensional, got query.dim: "
            f"{len(qs)} key.dim: {len(ks)} and value.dim: {len(vs)}"
        )
    operands = [query, key, value] + ([attn_mask] if attn_mask is not None else [])
    lazy.check_devices(op, [t.node for t in operands])  # the fused kernel reads them all in one dispatch
    if not (query.dtype.is_float and query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            f"'{op}': expected query, key, and value to have the same float dtype, got query.dtype: "
            f"{query.dtype.name}, key.dtype: {key.dtype.name}, and value.dtype: {value.dtype.name}"
        )
    if ks[-1] != qs[-1]:
        raise RuntimeError(
            f"'{op}': query and key must have the same last dim (embedding size), got shapes {qs} and {ks}"
        )
    if ks[-2] != vs[-2]:
        raise RuntimeError(
            f"'{op}': key and value must have the same sequence length (dim -2), got shapes {ks} and {vs}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"'{op}': dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"'{op}': explicit attn_mask should not be set when is_causal=True")
    if attn_mask is not None and attn_mask.dtype not in (T.bool_, T.float32, query.dtype):
        raise RuntimeError(
            f"'{op}': expected attn_mask dtype to be bool or float or to match query dtype, got attn_mask.dtype: "
            f"{attn_mask.dtype.name} and query.dtype: {query.dtype.name}"
        )
    if enable_gqa:
        if len(qs) < 3 or len(ks) < 3 or len(vs) < 3:
            raise RuntimeError(f"'{op}': enable_gqa=True needs a heads dim (-3) on query, key and value")
        heads = qs[-3]
        if heads % ks[-3] or heads % vs[-3]:
            raise RuntimeError(
                f"'{op}': number of heads in key ({ks[-3]}) and value ({vs[-3]}) must divide "
                f"the number of heads in query ({heads})"
            )

    try:  # with enable_gqa, key and value heads are repeated to query's count
        batch = _broadcast_batch(qs, ks, vs, enable_gqa)
    except ValueError:
        raise RuntimeError(f"'{op}': batch dims of query {qs}, key {ks} and value {vs} do not broadcast") from None
    scores = (*batch, qs[-2], ks[-2])
    if attn_mask is not None and not _broadcasts_to(attn_mask.shape, scores):
        raise RuntimeError(f"'{op}': attn_mask of shape {attn_mask.shape} does not broadcast to the scores' {scores}")


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _repeat_heads(x, heads: int):
    """Each head of ``x`` (dim -3) repeated ``heads // x.shape[-3]`` times in place: torch's repeat_interleave."""
    groups = heads // x.shape[-3]
    if groups == 1:
        return x
    lead, (h, s, e) = x.shape[:-3], x.shape[-3:]
    spread = functions.expand(functions.unsqueeze(x, -3), *lead, h, groups, s, e)
    return functions.reshape(spread, *lead, h * groups, s, e)


def causal_mask(target_len: int, source_len: int, device):
    """A (target_len, source_len) bool tensor, True where column <= row: torch's ``tril`` causal mask."""
    rows = functions.unsqueeze(creation.arange(target_len, device=device), 1)
    cols = functions.unsqueeze(creation.arange(source_len, device=device), 0)
    return cols <= rows


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
):
    """softmax(query @ keyᵀ · scale + mask) @ value over the last two dims, batch dims broadcast.

    ``attn_mask`` is bool (True = take part in attention, as PyTorch) or float (added to the
    scores); ``is_causal`` masks column > row (top-left aligned when L != S); ``scale``
    defaults to 1/sqrt(E); ``enable_gqa`` repeats each key/value head for its group of query
    heads. ``dropout_p`` > 0 drops attention weights with vkml's generator (as ``F.dropout``),
    whatever the module's training mode, as PyTorch. A row whose every score is -inf (all
    masked) gives zeros, as PyTorch's math path (its ``_safe_softmax``), not NaN.

    One fused kernel computes the forward pass without writing the (L, S) scores to memory (a
    flash-attention scheme: each workgroup walks the keys in blocks with a running max and sum).
    The backward pass is two fused kernels (dQ; dK and dV) that recompute the weights block by
    block from the saved log-sum-exp. Dropout is drawn inside the kernels by ``F.dropout``'s
    rule (the composite path's masks for the same seed). ``dropout_p`` = 1, float64 inputs, a
    float mask that requires grad, head sizes whose tiles exceed the device's shared memory, and
    tensors of 2^31 elements or more take the composite path (scores in memory); inputs whose
    batch dims broadcast (GQA's fewer key/value heads aside) take a composite backward.
    ``torch.nn.attention.sdpa_kernel`` and ``torch.backends.cuda.enable_*_sdp`` choose between the two:
    ``SDPBackend.MATH`` is the composite, the fused names (flash, memory-efficient, cuDNN) the fused
    kernel; with neither available for a call it raises PyTorch's "No viable backend" RuntimeError.

    Precision: the fused kernel computes in float32 whatever the input dtype (float16 and
    bfloat16 are rounded once, at the output): scores as ascending-order dot products times
    ``scale``, exp and log within 1 ulp, the online softmax's rescalings, and one division per
    output. The order differs from the composite's, so the bits differ from it and from
    PyTorch; tests/test_attention_fused.py checks against PyTorch in float64 within
    atol = rtol = 2e-6 (float32 inputs) and 1e-3 (float16, one rounding of the result), and
    the gradients within 1e-5 (float32) and 2e-3 (float16). The bits are the same on every
    device and every run, with one exception (below).

    Order of the operations, fixed by the shapes alone: a score is Σₑ q·k in ascending e from
    -0.0 (each product and sum rounded), times ``scale``, plus a float mask. Heads whose tiles
    fit in 32 KiB of shared memory (E = Ev = 64 and smaller; ``tiled_shared_bytes`` in
    vkml/kernels/attention.py) take the register-tiled kernels: keys in ascending blocks of 32;
    a block's row max is the max of each lane's two keys (c, then c + 16) then a pairwise tree
    over the 16 lanes; each lane keeps its own share of the row sum (l·α + (p_c + p_(c+16))),
    and the lanes' shares meet in the same tree once, at the end; an output column adds the
    block's Σ p·v (ascending keys from -0.0) to its rescaled sum (acc·α + block). Larger heads
    and ``VKML_ATTENTION_TILED=0`` take the untiled kernels (blocks of 16 keys, the row sum
    through the tree each block; other bits, the same bounds). The backward sums dQ over key
    blocks, dK and dV over query blocks (32 tiled, 16 untiled; each block in ascending order
    from -0.0, the blocks in ascending order, GQA's heads in turn). A device with less than
    32 KiB of shared memory takes the composite path for heads that take the tiled kernels.

    The exception:

    On a device with cooperative matrices (VK_KHR_cooperative_matrix's 16×16×16 float16 shape,
    32-wide subgroups) float16 inputs take a forward whose q @ kᵀ and weights @ v
    products run on matrix units (vkml/kernels/attention_coopmat.py; ``VKML_ATTENTION_COOPMAT=0``
    keeps the scalar kernel). Its weights are rounded to float16 before they multiply v, as
    flash attention does (the row sums take them in float32), and the device sums the products
    of each 16-block in its own order, so its bits differ from the CPU's, within
    |out - exact| <= (2^-10 + 4γ_(E+16)·|scale|·maxⱼ Σₑ|qₑ·kⱼₑ|)·Σⱼ wⱼ·|vⱼ| + 2^-25·Σⱼ|vⱼ| + ½ ulp(out)
    of the exact attention (w the exact weights, j over the unmasked keys, E the head dim
    rounded up to a multiple of 16, γ_n = n·2^-24 / (1 - n·2^-24); the 2^-25 term is the
    absolute rounding of weights below float16's normal range); the same bits on every run. tests/test_attention_coopmat.py
    checks the CPU-interpreted kernel within it. Masks, causal masking, dropout and GQA work
    there as in the scalar kernel; float32 and bfloat16 inputs keep the scalar kernel (Vulkan
    has no TF32), and so does the backward (from this forward's output and log-sum-exp, its
    gradients stay within the 2e-3 above). Where the device also has VK_NV_cooperative_matrix2
    (workgroup-scope matrices with row reductions, conversions and per-element functions), float16
    calls with head dims of 64 or 128, no mask but the causal one and no dropout (broadcast batch
    dims and GQA too) take a flash-attention forward on workgroup-scope matrices instead
    (vkml/kernels/attention_cm2.py; ``VKML_ATTENTION_CM2=0`` keeps the kernel above): the same
    float16 weights, the same bound, the row sums and products in the device's order;
    tests/test_attention_cm2.py checks the CPU-interpreted kernel within it. The CPU and lavapipe
    (no cooperative matrices) run the scalar kernel everywhere.

    That kernel's weights are cheaper exponentials, within the same bound for rows of up to 2^16
    keys. It takes the scores in log2 units (``scale``·log2(e), rounded) with an integer running
    maximum m, so a weight is P = c·2^x·(1 + e), x = s - m <= 1, by a cubic with |e| < 2^-13.6
    (c ≈ 18.1, a factor of every weight that cancels in O / l), +0.0 for x <= -126.5, and every
    rescaling α = 2^(m_old - m) is an exact power of two. Error analysis: a key's computed weight
    fl16(P_j) / l, l = Σ P in float32, is off from w_j relatively by (a) the float16 rounding, 2^-11
    (below 2^-14 the 2^-25 absolute term instead; l > 1, as the row's largest P is at least
    c·(1 - 2^-13.6), only shrinks it); (b) e_j less the mean of the e in l, at most
    2·2^-13.6 = 2^-12.6; (c) the roundings of x (one subtraction) and of log2(e)·scale (a factor
    common to all scores, which moves a weight by its distance from the row's mean exponent, below
    18 + |x| for 2^16 keys): 2^-24·ln 2·(2·126.5 + 2·(126.5 + 18)) < 2^-15.4 for the normal
    x > -126.5, and a dropped weight (x <= -126.5, below 2^-126) is its own float16 rounding, left
    to the absolute term; (d) the float32 sums, in the device's order: the row sum and P V of a
    block of 128 keys plus one rounding per block for l·α + rowsum and O·α + P V (the products with
    α are exact): γ_(128+S/128) for l and 2γ_(144+S/128) for O (the matrix units' allowance), 2^-13.1
    at S = 2^16; (e) out = O·(1 / l), the reciprocal by Newton's method within 2^-22, the product
    2^-24. (b) to (e) add up to 3.0·10^-4 < 2^-11, which with (a) is the bound's 2^-10; each score's
    device error and its product with the scale are the c_s term's, as for the kernel above.
    tests/test_attention_cm2.py checks e on every float32 reduced argument (``-m exhaustive``) and
    the routines' bits on the device against the interpreter.

    >>> q = vkml.ones(2, 3)
    >>> scaled_dot_product_attention(q, q, q, is_causal=True).shape  # doctest: +SKIP
    (2, 3)
    """
    plan = _plan(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    scale_factor = plan.scale if scale is None else float(scale)
    fused_allowed, composite_allowed = sdpa_backends.allowed()  # sdpa_kernel / enable_*_sdp
    if fused_allowed and plan.fuses:
        words = vkrandom.default_generator.next_key() if dropout_p > 0.0 else None  # keep_mask's draw
        options = _Options(scale_factor, bool(is_causal), enable_gqa, float(dropout_p), words, plan)
        out = _FusedAttention.apply(query, key, value, attn_mask, options)
    elif not composite_allowed:
        raise RuntimeError(sdpa_backends.NO_BACKEND)
    else:
        out = _composite(query, key, value, attn_mask, dropout_p, is_causal, scale_factor, enable_gqa)
    return _shown_as_cpu_flash(out, query, key, value, attn_mask, dropout_p)


def _shown_as_cpu_flash(out, query, key, value, attn_mask, dropout_p: float):
    """``out`` with the node PyTorch's CPU build records where it takes its flash kernel (4-D inputs, no
    dropout, a mask that needs no gradient): ``ScaledDotProductFlashAttentionForCpuBackward0`` with edges
    to query, key and value. Elsewhere PyTorch's math path records its many nodes; vkml's stay."""
    if out._ctx is None or dropout_p > 0.0 or not query.ndim == key.ndim == value.ndim == 4:
        return out
    if attn_mask is not None and attn_mask.requires_grad:
        return out
    edges = (autograd.edge(query), autograd.edge(key), autograd.edge(value))
    return autograd.show(out, "ScaledDotProductFlashAttentionForCpuBackward0", edges)


def _composite(
    query,
    key,
    value,
    attn_mask,
    dropout_p: float,
    is_causal: bool,
    scale_factor: float,
    enable_gqa: bool,
    generator=None,
):
    """The composite path: the (L, S) scores and weights are written to memory between two matmuls.

    ``generator``: where dropout's key comes from (default: the default generator)."""
    if enable_gqa:
        key = _repeat_heads(key, query.shape[-3])
        value = _repeat_heads(value, query.shape[-3])
    scores = functions.matmul(query, functions.transpose(key, -2, -1)) * scale_factor
    if is_causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], query.device)
    if attn_mask is not None and attn_mask.dtype is T.bool_:
        scores = functions.where(attn_mask, scores, float("-inf"))
    elif attn_mask is not None:  # a float32 mask on float16 scores is rounded to float16 first, as PyTorch
        scores = scores + functions.cast(attn_mask, scores.dtype)
    weights = functions.softmax(scores, -1)
    if attn_mask is not None:
        # PyTorch's _safe_softmax: a row with no finite score attends to nothing (zeros, not NaN).
        empty = functions.amax(scores, -1, keepdim=True) == float("-inf")
        weights = functions.where(empty, 0.0, weights)
    if dropout_p == 1.0:
        weights = weights * 0.0
    elif dropout_p > 0.0:  # F.dropout's rule, written here since functional.py re-exports this module
        keep = vkrandom.keep_mask(weights.shape, dropout_p, weights.device, generator)
        weights = functions.where(keep, weights * (1.0 / (1.0 - dropout_p)), 0.0)
    return functions.matmul(weights, value)


def _fuses(query, key, value, attn_mask, dropout_p: float, enable_gqa: bool) -> bool:
    """Whether the fused kernel computes this call (else the composite does; the docstring says when)."""
    if dropout_p == 1.0 or query.dtype not in (T.float32, T.float16, T.bfloat16):
        return False
    if attn_mask is not None and attn_mask.requires_grad:
        return False
    sizes = (query.shape[-2], key.shape[-2], query.shape[-1], value.shape[-1])
    if 0 in sizes or 0 in query.shape or 0 in key.shape or 0 in value.shape:
        return False
    features = getattr(query.device, "features", None)
    if features is not None and fused.shared_bytes(sizes[2], sizes[3]) > features.max_compute_shared_memory_size:
        return False
    batch = _batch_shape(query, key, value, enable_gqa)
    biggest = max(query.numel(), key.numel(), value.numel(), math.prod(batch) * sizes[0] * max(sizes[1], sizes[3]))
    return biggest < WIDE_INDEX_EXTENT


def _batch_shape(query, key, value, enable_gqa: bool) -> tuple:
    return _broadcast_batch(query.node.shape, key.node.shape, value.node.shape, enable_gqa)


@functools.lru_cache(maxsize=256)
def _broadcast_batch(query: tuple, key: tuple, value: tuple, enable_gqa: bool) -> tuple:
    """The batch dims of attention over operands of these shapes (``_check_inputs`` checked they broadcast)."""

    def batch_of(shape) -> tuple:
        return shape[:-3] + (query[-3],) if enable_gqa else shape[:-2]

    return tuple(np.broadcast_shapes(query[:-2], batch_of(key), batch_of(value)))


def _operand(shape: tuple, batch: tuple, gqa: bool = False) -> fused.Operand:
    """How a contiguous tensor of ``shape`` (batch dims, then two) is read over ``batch``: per batch dim
    its stride (0 where it broadcasts) and, with ``gqa``, the heads dim (the last) divided by the groups."""
    lead = (1,) * (len(batch) - (len(shape) - 2)) + tuple(shape[:-2])
    strides, step = [], shape[-1] * shape[-2]
    for size in reversed(lead):
        strides.append(step if size > 1 else 0)
        step *= size
    divisors = [1] * len(batch)
    if gqa and lead[-1] > 1:
        divisors[-1] = batch[-1] // lead[-1]
    return fused.Operand(tuple(reversed(strides)), tuple(divisors))


def _mask_strides(shape: tuple, rank: int) -> tuple:
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    strides, step = [], 1
    for size in reversed(padded):
        strides.append(step if size > 1 else 0)
        step *= size
    return tuple(reversed(strides))


@dataclass(frozen=True)
class _Options:
    """A fused call's arguments besides the tensors; ``words``: dropout's generator key (None without dropout)."""

    scale: float
    is_causal: bool
    enable_gqa: bool
    dropout_p: float = 0.0
    words: tuple | None = None
    plan: _Plan | None = field(default=None, compare=False, repr=False)  # the forward's (set by every fused call)

    def params(self) -> dict:
        """The kernels' parameters: ``scale``, and dropout's key, probability and 1 / (1 - p)."""
        if self.words is None:
            return {"scale": self.scale}
        key0, key1, offset = (w % (1 << 32) for w in self.words)
        p = self.dropout_p
        return {
            "scale": self.scale,
            "key0": key0,
            "key1": key1,
            "offset": offset,
            "dropout_p": p,
            "keep_scale": 1 / (1 - p),
        }


class _Structure:
    """A plan cache key part that hashes once: a node's label holds it, and every node built hashes its label."""

    __slots__ = ("key", "hash")

    def __init__(self, key: tuple):
        self.key, self.hash = key, hash(key)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other) -> bool:
        return self is other or (type(other) is _Structure and self.hash == other.hash and self.key == other.key)

    def __repr__(self) -> str:
        return f"_Structure({self.key!r})"


class _Plan:
    """What a call computes from its operands' shapes, dtypes and devices, its flags and the switches alone:
    the checks passed, the default scale, whether the fused kernel takes it and, where it does, the forward's
    kernel, grid, structure and output specs (``_plan`` keeps one per such key)."""

    __slots__ = (
        "features",
        "fuses",
        "scale",
        "shape",
        "kernel",
        "grid",
        "structure",
        "outputs",
        "input_names",
        "output_names",
        "out_specs",
    )

    def __init__(self, query, key, value, attn_mask, dropout_p, enable_gqa, is_causal):
        self.features = getattr(query.node.device, "features", None)
        self.scale = 1.0 / math.sqrt(query.node.shape[-1])
        self.fuses = _fuses(query, key, value, attn_mask, dropout_p, enable_gqa)
        if not self.fuses:
            return
        words = (0, 0, 0) if dropout_p > 0.0 else None  # only whether there is a key counts here
        shape = _attention_shape(
            query, key, value, attn_mask, _Options(self.scale, bool(is_causal), enable_gqa, 0.0, words)
        )
        L, Ev = shape.query_len, shape.value_dim
        specs = {"out": ((*shape.batch, L, Ev), query.dtype), "lse": ((*shape.batch, L), T.float32)}
        kernel, grid, structure = fused.cached_forward_kernel(shape), shape.grid, ("attention", shape)
        features = getattr(query.device, "features", None)
        if fused_cm2.applies(features, shape):  # float16 flash attention on workgroup-scope matrices
            subgroup = features.subgroup_size if features is not None else 32  # None: the CPU interpreter (tests)
            kernel, grid = fused_cm2.cached_forward_kernel(shape, subgroup_size=subgroup), fused_cm2.grid(shape)
            structure = ("attention cm2", shape)
        elif fused_coopmat.applies(features, shape):  # float16 on matrix units: within the page's bound
            config = fused_coopmat.config_of(features, shape)
            kernel, grid = fused_coopmat.cached_forward_kernel(shape, config), fused_coopmat.grid(shape, config)
            structure = ("attention coopmat", shape, config)
        self.shape, self.kernel, self.grid = shape, kernel, grid
        self.structure = _Structure(structure)
        self.outputs = tuple(_Structure((self.structure, i)) for i in range(len(specs)))
        params = ("scale",) if words is None else ("scale", "key0", "key1", "offset", "dropout_p", "keep_scale")
        self.input_names = (*_inputs(query, key, value, attn_mask), *params)
        self.output_names, self.out_specs = tuple(specs), tuple(specs.values())


# (operands' shapes, dtypes and devices, the mask's and whether it requires grad, dropout_p, the flags, the raw
# switches VKML_ATTENTION_TILED, VKML_ATTENTION_COOPMAT and VKML_ATTENTION_CM2) -> _Plan. A key holds the
# switches as the environment spells them, so a changed switch takes effect on the next call; a model calls
# attention with few keys.
_PLANS: dict[tuple, _Plan] = {}
_PLANS_ENTRIES = 256


def _plan(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa) -> _Plan:
    """``_check_inputs`` (raising its errors) and the call's ``_Plan``; a key seen before skips both."""
    try:
        q, k, v = query.node, key.node, value.node
        mask = None if attn_mask is None else attn_mask.node
        cache_key = (
            q.shape,
            k.shape,
            v.shape,
            q.dtype,
            k.dtype,
            v.dtype,
            q.device,
            k.device,
            v.device,
            None if mask is None else (mask.shape, mask.dtype, mask.device, attn_mask.requires_grad),
            dropout_p,
            bool(is_causal),
            bool(enable_gqa),
            vkml_config._env("VKML_ATTENTION_TILED"),
            vkml_config._env("VKML_ATTENTION_COOPMAT"),
            vkml_config._env("VKML_ATTENTION_CM2"),
            # the device's features by identity (the plan holds them, so the id is not reused while it lives)
            # and the kernel choice's function: what a test may replace between calls
            id(getattr(q.device, "features", None)),
            fused_coopmat.applies,
            fused_cm2.applies,
        )
        found = _PLANS.get(cache_key)
        if type(dropout_p) not in (float, int):  # a value the checks convert: checked every call
            raise TypeError
    except (AttributeError, TypeError):  # not tensors, an unhashable argument: the checks say what is wrong
        cache_key = found = None
    if found is not None:
        return found
    _check_inputs(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    found = _Plan(query, key, value, attn_mask, dropout_p, enable_gqa, is_causal)
    if cache_key is not None:
        if len(_PLANS) >= _PLANS_ENTRIES:
            _PLANS.clear()
        _PLANS[cache_key] = found
    return found


class _Replay:
    """A generator that hands out one saved key: the composite paths drop what the forward kernel dropped."""

    def __init__(self, words: tuple):
        self.words = words

    def next_key(self) -> tuple:
        return self.words


# (operands' shapes and dtypes, the mask's, the options the code depends on, device) -> AttentionShape:
# a model calls attention with few shapes, and each call needs it (forward, backward, whether it fuses)
_SHAPES: dict[tuple, fused.AttentionShape] = {}
_SHAPES_ENTRIES = 256


def _attention_shape(query, key, value, attn_mask, options: _Options) -> fused.AttentionShape:
    """What the fused kernels' code depends on, for these operands (``_attention_shape_of``'s, cached)."""
    q, k, v = query.node, key.node, value.node
    mask = None if attn_mask is None else attn_mask.node
    cache_key = (
        q.shape,
        k.shape,
        v.shape,
        q.dtype,
        None if mask is None else (mask.shape, mask.dtype),
        options.is_causal,
        options.enable_gqa,
        options.words is not None,
        q.device,
        fused.tiled_applies(q.shape[-1], v.shape[-1]),  # VKML_ATTENTION_TILED may change between calls
    )
    found = _SHAPES.get(cache_key)
    if found is None:
        if len(_SHAPES) >= _SHAPES_ENTRIES:
            _SHAPES.clear()
        found = _SHAPES[cache_key] = _attention_shape_of(query, key, value, attn_mask, options)
    return found


def _attention_shape_of(query, key, value, attn_mask, options: _Options) -> fused.AttentionShape:
    """What the fused kernels' code depends on, for these operands."""
    is_causal, enable_gqa = options.is_causal, options.enable_gqa
    batch = _batch_shape(query, key, value, enable_gqa)
    mask_kind, mask_dtype, mask_strides = "none", None, ()
    if attn_mask is not None:
        mask_kind = "bool" if attn_mask.dtype is T.bool_ else "float"
        mask_dtype, mask_strides = attn_mask.dtype, _mask_strides(attn_mask.shape, len(batch) + 2)
    return fused.AttentionShape(
        dtype=query.dtype,
        batch=batch,
        query_len=query.shape[-2],
        key_len=key.shape[-2],
        head_dim=query.shape[-1],
        value_dim=value.shape[-1],
        query=_operand(query.shape, batch),
        key=_operand(key.shape, batch, enable_gqa),
        value=_operand(value.shape, batch, enable_gqa),
        causal=bool(is_causal),
        mask=mask_kind,
        mask_dtype=mask_dtype,
        mask_strides=mask_strides,
        subgroup=min(tuning_for(query.device).subgroup, fused.LANES),
        dropout=options.words is not None,
        tiled=fused.tiled_applies(query.shape[-1], value.shape[-1]),
    )


class _Call(KernelCall):
    """One dispatch of a fused kernel. The scheduler steps it as a plan's own kernel (vkml/schedule/scheduler.py
    ``_call_step``): its outputs are the plan's buffers and its parameters read from each call, so a call of the
    same structure replays the plan and its recording. An output not realized with it (the forward's
    log-sum-exp, which the backward reads after ``out`` was realized on its own) becomes a buffer of that
    realize's submission, not a second dispatch."""

    def __init__(self, structure: tuple, *args):
        super().__init__(*args)
        self.structure = structure  # what the kernel's code and buffers depend on: the plan cache's key
        self.outputs: tuple | None = None  # each output's structure, made once (a _Plan's), else per read


class _Output(KernelOutput):
    """Output ``index`` of a ``_Call``: its structure keys the plan cache (a new call of the same structure,
    other values of its parameters, replays the plan; ``bind`` lowers each call's own node)."""

    __slots__ = ()

    @property
    def structure(self):
        outputs = self.call.outputs
        return (self.call.structure, self.index) if outputs is None else outputs[self.index]


def _dispatch(structure: tuple, kernel, grid, inputs: dict, params: dict, out_specs: dict, device) -> list:
    """Lazy tensors for the outputs of one dispatch of ``kernel`` (a graph node each, run by the scheduler
    in the realize's one submission); ``inputs``: buffer name -> Tensor, ``out_specs``: name -> (shape, dtype)."""
    call = _Call(structure, kernel, grid, [*inputs, *params], list(out_specs), list(out_specs.values()), params)
    srcs = tuple(t.node for t in inputs.values())
    outs = [
        Node(Op.KERNEL, srcs, _Output(call, i), shape, dtype, device)
        for i, (shape, dtype) in enumerate(out_specs.values())
    ]
    call.out_nodes = [weakref.ref(n) for n in outs]
    return [_wrap(n) for n in outs]


def _nodes(call: _Call, outputs: tuple, srcs: tuple) -> list:
    """``_dispatch``'s lazy tensors for a call whose output structures (``_Structure``s) a plan made once."""
    call.outputs = outputs
    device = srcs[0].device
    nodes = [
        Node(Op.KERNEL, srcs, _Output(call, i), shape, dtype, device) for i, (shape, dtype) in enumerate(call.out_specs)
    ]
    call.out_nodes = [weakref.ref(n) for n in nodes]
    return [_wrap(n) for n in nodes]


class _BackwardPlan:
    """The fused backward's launch for one ``_backward_plan`` key: whether it applies and, where it does, each
    kernel's structure, kernel, grid, buffer names and output specs."""

    __slots__ = ("features", "fuses", "calls")

    def __init__(self, query, key, value, attn_mask, options: _Options):
        self.features = getattr(query.node.device, "features", None)
        shape = _attention_shape(query, key, value, attn_mask, options)
        self.fuses = _backward_fuses(query, key, value, shape)
        if not self.fuses:
            return
        L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
        dq_kernel, dkv_kernel = fused_backward.cached_kernels(shape)
        params = options.params()
        names = (*_inputs(query, key, value, attn_mask, grad=None, lse=None, delta=None), *params)
        self.calls = []
        for name, kernel, keys, specs in (
            ("attention dq", dq_kernel, False, {"dq": ((*shape.batch, L, E), T.float32)}),
            (
                "attention dkv",
                dkv_kernel,
                True,
                {"dk": ((*key.shape[:-2], S, E), T.float32), "dv": ((*value.shape[:-2], S, Ev), T.float32)},
            ),
        ):
            structure = _Structure((name, shape))
            outputs = tuple(_Structure((structure, i)) for i in range(len(specs)))
            grid = fused_backward.grid_of(shape, keys=keys)
            self.calls.append((structure, outputs, kernel, grid, names, tuple(specs), tuple(specs.values())))


# (operands' shapes and dtypes, the mask's, the options the code depends on, device and its features, the raw
# VKML_ATTENTION_TILED) -> _BackwardPlan: read where a backward takes the fused kernels, once per key.
_BACKWARD_PLANS: dict[tuple, _BackwardPlan] = {}


def _backward_plan(query, key, value, attn_mask, options: _Options) -> _BackwardPlan:
    q, k, v = query.node, key.node, value.node
    mask = None if attn_mask is None else attn_mask.node
    cache_key = (
        q.shape,
        k.shape,
        v.shape,
        q.dtype,
        None if mask is None else (mask.shape, mask.dtype),
        options.is_causal,
        options.enable_gqa,
        options.words is not None,
        q.device,
        vkml_config._env("VKML_ATTENTION_TILED"),  # as the forward's key: a changed switch takes effect
        id(getattr(q.device, "features", None)),  # the plan holds them: the id is not reused while it lives
    )
    found = _BACKWARD_PLANS.get(cache_key)
    if found is None:
        if len(_BACKWARD_PLANS) >= _PLANS_ENTRIES:
            _BACKWARD_PLANS.clear()
        found = _BACKWARD_PLANS[cache_key] = _BackwardPlan(query, key, value, attn_mask, options)
    return found


def _inputs(query, key, value, attn_mask, **more) -> dict:
    named = {"q": query, "k": key, "v": value}
    named.update({k: v for k, v in more.items() if k != "mask"})
    if attn_mask is not None:
        named["mask"] = attn_mask
    return named


def _fused_forward(query, key, value, attn_mask, options: _Options):
    """The fused kernel's output (..., L, Ev) and each row's log-sum-exp (..., L, float32), as lazy tensors,
    from the call's ``_Plan`` (its kernel, grid, structure and output specs, made once per plan key)."""
    plan = options.plan
    call = _Call(
        plan.structure, plan.kernel, plan.grid, plan.input_names, plan.output_names, plan.out_specs, options.params()
    )
    inputs = (query, key, value) if attn_mask is None else (query, key, value, attn_mask)
    return _nodes(call, plan.outputs, tuple([t.node for t in inputs]))


def _backward_fuses(query, key, value, shape: fused.AttentionShape) -> bool:
    """Whether the fused backward kernels apply: no broadcast batch dims (GQA's fewer key/value heads
    aside), and tiles that fit the device's shared memory."""
    kv_batch = shape.batch[:-1] + (shape.batch[-1] // fused_backward.groups_of(shape),) if shape.batch else ()
    if query.shape[:-2] != shape.batch or key.shape[:-2] != kv_batch or value.shape[:-2] != kv_batch:
        return False
    features = getattr(query.device, "features", None)
    need = fused_backward.shared_bytes(shape)
    return features is None or need <= features.max_compute_shared_memory_size


def _fused_backward(query, key, value, attn_mask, out, lse, grad, options: _Options):
    """(dq, dk, dv) in float32 from the two backward kernels (vkml/kernels/attention_backward.py)."""
    shape = _attention_shape(query, key, value, attn_mask, options)
    L, S, E, Ev = shape.query_len, shape.key_len, shape.head_dim, shape.value_dim
    grad = functions.cast(grad, query.dtype)
    delta = functions.sum(functions.cast(grad, T.float32) * functions.cast(out, T.float32), -1)
    inputs = _inputs(query, key, value, attn_mask, grad=grad, lse=lse, delta=delta)
    dq_kernel, dkv_kernel = fused_backward.cached_kernels(shape)
    device = query.device
    (d_query,) = _dispatch(
        ("attention dq", shape),
        dq_kernel,
        fused_backward.grid_of(shape, keys=False),
        inputs,
        options.params(),
        {"dq": ((*shape.batch, L, E), T.float32)},
        device,
    )
    d_key, d_value = _dispatch(
        ("attention dkv", shape),
        dkv_kernel,
        fused_backward.grid_of(shape, keys=True),
        inputs,
        options.params(),
        {"dk": ((*key.shape[:-2], S, E), T.float32), "dv": ((*value.shape[:-2], S, Ev), T.float32)},
        device,
    )
    return d_query, d_key, d_value


def _planned_backward(plan: _BackwardPlan, query, key, value, attn_mask, out, lse, grad, options: _Options) -> list:
    """``_fused_backward``'s (dq, dk, dv), launched from the plan: the same kernels, grids and structures."""
    dtype = query.dtype
    grad = functions.cast(grad, dtype)
    delta = functions.sum(functions.cast(grad, T.float32) * functions.cast(out, T.float32), -1)
    # _inputs' order: q, k, v, the named extras, then the mask
    operands = (
        (query, key, value, grad, lse, delta) if attn_mask is None else (query, key, value, grad, lse, delta, attn_mask)
    )
    srcs = tuple([t.node for t in operands])
    grads = []
    for structure, outputs, kernel, grid, names, output_names, out_specs in plan.calls:
        call = _Call(structure, kernel, grid, names, output_names, out_specs, options.params())
        grads += _nodes(call, outputs, srcs)
    return grads


def _sum_to(grad, shape: tuple):
    """``grad`` summed over the dims it broadcast ``shape`` along (PyTorch's sum_to_size)."""
    extra = grad.ndim - len(shape)
    if extra:
        grad = functions.sum(grad, tuple(range(extra)))
    dims = tuple(d for d, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    if dims:
        grad = functions.sum(grad, dims, keepdim=True)
    return grad


def _sum_heads(grad, heads: int):
    """A gradient over repeated heads (dim -3 of ``heads * groups``) summed back per head."""
    groups = grad.shape[-3] // heads
    if groups == 1:
        return grad
    lead, s, e = grad.shape[:-3], grad.shape[-2], grad.shape[-1]
    return functions.sum(functions.reshape(grad, *lead, heads, groups, s, e), -3)


class _FusedAttention(Function):
    """The fused forward kernel; the backward recomputes the weights from the saved log-sum-exp.

    With P = exp(S - lse) (zeros in a row with no unmasked key), D = rowsum(dO · O):
    dV = Pᵀ dO, dS = P · (dO Vᵀ - D), dQ = dS K · scale, dK = dSᵀ Q · scale, in float32, each
    summed over the batch dims (and GQA head groups) its input broadcast along: by the two
    backward kernels, or as composite ops where a batch dim broadcasts.
    """

    @staticmethod
    def forward(ctx, query, key, value, attn_mask, options):
        out, lse = _fused_forward(query, key, value, attn_mask, options)
        ctx.save_for_backward(query, key, value, attn_mask, out, lse)
        ctx.options = options
        return out

    @staticmethod
    def backward(ctx, grad):
        query, key, value, attn_mask, out, lse = ctx.saved_tensors
        options = ctx.options
        if is_grad_enabled():  # create_graph=True: a gradient that is itself differentiable
            grads = _recorded_backward(query, key, value, attn_mask, grad, options)
        elif (plan := _backward_plan(query, key, value, attn_mask, options)).fuses:
            dtype = query.dtype
            grads = [
                functions.cast(g, dtype)
                for g in _planned_backward(plan, query, key, value, attn_mask, out, lse, grad, options)
            ]
        else:
            grads = _composite_backward(query, key, value, attn_mask, out, lse, grad, options)
        return (*grads, None, None)


def _recorded_backward(query, key, value, attn_mask, grad, options: _Options) -> list:
    """The gradients through the composite forward, recorded (for higher derivatives; the kernels' are not)."""
    # Self-attention passes one tensor as several of query, key and value (``sdpa(x, x, x)``).
    # Differentiating the composite with respect to it gives its whole gradient, over every use;
    # the engine sums what backward returns per argument, so that gradient goes to its first
    # place only (None at the others), or it would count once per place.
    firsts = {}
    for place, t in enumerate((query, key, value)):
        if t.requires_grad:
            firsts.setdefault(id(t.grad_fn) if t.grad_fn is not None else id(t), (place, t))
    replay = None if options.words is None else _Replay(options.words)
    out = _composite(
        query, key, value, attn_mask, options.dropout_p, options.is_causal, options.scale, options.enable_gqa, replay
    )
    places = list(firsts.values())
    found = autograd_grad(out, [t for _, t in places], grad, create_graph=True, allow_unused=True)
    grads = [None, None, None]
    for (place, _), g in zip(places, found):
        grads[place] = g
    return grads


def _composite_backward(query, key, value, attn_mask, out, lse, grad, options: _Options) -> list:
    """The backward of inputs with broadcast batch dims: the same formulas as composite ops."""
    scale, is_causal, enable_gqa = options.scale, options.is_causal, options.enable_gqa
    dtype = query.dtype
    q, k, v, o, g = (functions.cast(t, T.float32) for t in (query, key, value, out, grad))
    if enable_gqa:
        k, v = _repeat_heads(k, q.shape[-3]), _repeat_heads(v, q.shape[-3])
    scores = functions.matmul(q, functions.transpose(k, -2, -1)) * scale
    if is_causal:
        attn_mask = causal_mask(q.shape[-2], k.shape[-2], q.device)
    if attn_mask is not None and attn_mask.dtype is T.bool_:
        scores = functions.where(attn_mask, scores, float("-inf"))
    elif attn_mask is not None:  # rounded to the query's dtype first, as the forward kernel
        scores = scores + functions.cast(functions.cast(attn_mask, dtype), T.float32)
    lse = functions.unsqueeze(lse, -1)
    weights = functions.where(lse == float("-inf"), 0.0, (scores - lse).exp())
    kept_weights, d_weights = weights, functions.matmul(g, functions.transpose(v, -2, -1))
    if options.words is not None:  # the forward kernel's dropout: the same key, the same kept weights
        keep = vkrandom.keep_mask(weights.shape, options.dropout_p, weights.device, _Replay(options.words))
        keep_scale = options.params()["keep_scale"]
        kept_weights = functions.where(keep, weights * keep_scale, 0.0)
        d_weights = functions.where(keep, d_weights * keep_scale, 0.0)
    d_value = functions.matmul(functions.transpose(kept_weights, -2, -1), g)
    rows = functions.sum(g * o, -1, keepdim=True)
    d_scores = weights * (d_weights - rows)
    d_query = functions.matmul(d_scores, k) * scale
    d_key = functions.matmul(functions.transpose(d_scores, -2, -1), q) * scale
    if enable_gqa:
        d_key, d_value = _sum_heads(d_key, key.shape[-3]), _sum_heads(d_value, value.shape[-3])
    return [functions.cast(_sum_to(d, t.shape), dtype) for d, t in ((d_query, query), (d_key, key), (d_value, value))]
