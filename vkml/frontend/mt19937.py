"""PyTorch's CPU random stream, drawn on the host: the Mersenne Twister and the distributions over it.

``torch.manual_seed(s)`` seeds a 32-bit MT19937 (``init_genrand`` with the seed's low 32 bits);
every CPU random op of PyTorch reads that engine's 32-bit words (``random()``) or pairs of them
(``random64()``: first word high). This module holds the same engine (numpy's ``MT19937``, whose
legacy seeding is ``init_genrand`` and whose raw output is the tempered word) and turns its words
into values with PyTorch's CPU arithmetic, so ``vkml.manual_seed(s)`` followed by the same calls
gives PyTorch's numbers. Every function here is vectorised numpy over the words, except where
PyTorch's algorithm is itself sequential (the Box–Muller cache of the scalar normal path, at most
15 values; ``randperm``'s Fisher–Yates swaps; the gamma sampler's rejection loop per element).

The state is PyTorch's too (``CPUGeneratorImplState``, 5056 bytes): ``state_bytes`` and
``load_state_bytes`` read and write the layout ``torch.get_rng_state()`` gives.

>>> e = Engine(0)
>>> [round(float(v), 7) for v in e.uniform32(3)]
[0.4962566, 0.7682218, 0.0884774]
"""

from __future__ import annotations

import functools
import math

import numpy as np

N = 624  # words of MT19937 state
STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState)
_TAIL = 24 + 8 * N  # where the normal-sample caches start in the state bytes
_F32 = np.float32


class Engine:
    """One MT19937 stream with PyTorch's two Box–Muller caches (the double one is what CPU ops use)."""

    def __init__(self, seed: int):
        self.seed(seed)

    def seed(self, seed: int) -> None:
        self.initial_seed = seed
        self._bits = None  # seeded on the first draw: numpy.random loads then, not with `import vkml`
        self.fresh = True  # PyTorch's ``next_`` is 0 until the first draw regenerates the state
        self.next_double_normal: float | None = None
        self.next_float_normal: float | None = None

    @property
    def bits(self):
        """numpy's ``MT19937`` holding the state, seeded from ``initial_seed`` if nothing drew yet."""
        if self._bits is None:
            self._bits = np.random.MT19937(0)
            self._bits._legacy_seeding(self.initial_seed & 0xFFFFFFFF)  # init_genrand, as at::mt19937's constructor
        return self._bits

    @bits.setter
    def bits(self, value) -> None:
        self._bits = value

    # -- words
    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit words (``random()``), as uint32.

        numpy's ``integers`` over the full 32-bit range returns the engine's raw words, in order
        (the same as ``random_raw``, in half the memory).
        """
        if n <= 0:
            return np.zeros(0, np.uint32)
        self.fresh = False
        return np.random.Generator(self.bits).integers(0, 1 << 32, n, dtype=np.uint32)

    def word(self) -> int:
        """The next 32-bit word, as ``words(1)[0]`` (the engine's raw output: no array to make)."""
        self.fresh = False
        return self.bits.random_raw()

    def words64(self, n: int) -> np.ndarray:
        """The next ``n`` 64-bit draws (``random64()``: two words, the first one high), as uint64."""
        w = self.words(2 * n).astype(np.uint64)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    # -- uniform reals (transformation::uniform_real)
    def uniform32(self, n: int) -> np.ndarray:
        """float32 in [0, 1): the low 24 bits of one word times 2^-24."""
        return (self.words(n) & np.uint32(0xFFFFFF)).astype(_F32) * _F32(2.0**-24)

    def uniform64(self, n: int) -> np.ndarray:
        """float64 in [0, 1): the low 53 bits of one ``random64()`` times 2^-53."""
        return (self.words64(n) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0**-53

    # -- state
    def state_bytes(self) -> bytes:
        """PyTorch's ``CPUGeneratorImplState``: seed, left, seeded, next, 624 words, the caches."""
        st = self.bits.state["state"]
        pos = int(st["pos"])
        left, nxt = (1, 0 if self.fresh else N) if pos >= N else (N + 1 - pos, pos)
        out = np.zeros(STATE_BYTES, np.uint8)
        head = np.array([self.initial_seed & 0xFFFFFFFFFFFFFFFF], "<u8").view(np.uint8)
        out[0:8] = head
        out[8:16] = np.array([left, 1], "<i4").view(np.uint8)
        out[16:24] = np.array([nxt], "<u8").view(np.uint8)
        out[24:_TAIL] = np.asarray(st["key"], "<u4").astype("<u8").view(np.uint8)
        if self.next_double_normal is not None:
            out[_TAIL + 8 : _TAIL + 16] = np.array([self.next_double_normal], "<f8").view(np.uint8)
            out[_TAIL + 24 : _TAIL + 28] = np.array([1], "<i4").view(np.uint8)
        if self.next_float_normal is not None:
            out[_TAIL + 32 : _TAIL + 36] = np.array([self.next_float_normal], "<f4").view(np.uint8)
            out[_TAIL + 36] = 1
        return out.tobytes()

    def load_state_bytes(self, data: bytes) -> None:
        """Restore what ``state_bytes`` (or ``torch.get_rng_state()``) gave."""
        raw = np.frombuffer(bytes(data), np.uint8)
        seed = int(raw[0:8].view("<u8")[0])
        left = int(raw[8:12].view("<i4")[0])
        nxt = int(raw[16:24].view("<u8")[0])
        if not 1 <= left <= N or nxt > N:
            raise RuntimeError("Invalid mt19937 state")  # PyTorch's message for a corrupt state
        key = raw[24:_TAIL].view("<u8").astype(np.uint32)
        bits = np.random.MT19937(0)
        bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": N if left == 1 else N + 1 - left}}
        self.bits, self.initial_seed, self.fresh = bits, seed, left == 1 and nxt == 0
        valid = int(raw[_TAIL + 24 : _TAIL + 28].view("<i4")[0])
        self.next_double_normal = float(raw[_TAIL + 8 : _TAIL + 16].view("<f8")[0]) if valid else None
        self.next_float_normal = float(raw[_TAIL + 32 : _TAIL + 36].view("<f4")[0]) if raw[_TAIL + 36] else None

    def copy_from(self, other: Engine) -> None:
        self.load_state_bytes(other.state_bytes())


# ---------------------------------------------------------------------- float arithmetic of PyTorch's kernels


def _fma32(a, b, c) -> np.ndarray:
    """float32 fused multiply-add: the product is exact in float64 (24 + 24 bits), the sum rounds to
    float64 and then to float32 — a different float only where the float64 sum lands on a float32 tie."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(_F32)


def _fma64(a, b, c) -> np.ndarray:
    """float64 fused multiply-add by error-free transformations: Dekker's exact product ``p + e``,
    Knuth's exact sum ``s + t`` of ``p`` and ``c``, then ``s + (t + e)`` (the rounded fused result
    but where the last addition meets a tie; cancellation near zero keeps every bit)."""
    a = np.asarray(a, np.float64)
    b, c = np.float64(b), np.float64(c)

    def split(x):
        t = x * 134217729.0  # 2^27 + 1
        hi = t - (t - x)
        return hi, x - hi

    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    total = p + c
    back = total - p
    t = (p - (total - back)) + (c - back)
    return total + (t + e)


# Cephes' float32 log and sin/cos, as PyTorch's AVX2 Box–Muller evaluates them (avx_mathfun):
# the same polynomials, in the same order, with the multiply-adds its compiler fuses.
_LOG_P = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)


def _log_avx(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float32 ``x`` (here in (0, 1]), by Cephes' logf."""
    bits = np.maximum(x, _F32(1.17549435e-38)).view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 0x7F).astype(_F32) + _F32(1)
    m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)  # mantissa in [0.5, 1)
    small = m < _F32(0.707106781186547524)
    m = (m - _F32(1)) + np.where(small, m, _F32(0))
    e = e - np.where(small, _F32(1), _F32(0))
    z = m * m
    y = np.full_like(m, _F32(_LOG_P[0]))
    for p in _LOG_P[1:]:
        y = _fma32(y, m, _F32(p))
    y = _fma32(y * m, z, e * _F32(-2.12194440e-4))
    y = _fma32(z, _F32(-0.5), y)
    return _fma32(e, _F32(0.693359375), m + y)


def _sincos_avx(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x) of float32 ``x`` by Cephes' sinf/cosf: octant reduction, then two polynomials."""
    negative = x < 0
    x = np.abs(x)
    j = (x * _F32(1.27323954473516)).astype(np.int32)  # 4/pi, truncated
    j = (j + 1) & ~1
    y = j.astype(_F32)
    swap_sin = (j & 4) != 0
    use_sin_poly = (j & 2) == 0
    for dp in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):  # x - y*pi/4 in three parts
        x = _fma32(y, _F32(dp), x)
    negative_cos = ((~(j - 2)) & 4) != 0
    negative_sin = negative ^ swap_sin
    z = x * x
    c = np.full_like(x, _F32(2.443315711809948e-5))
    c = _fma32(c, z, _F32(-1.388731625493765e-3))
    c = _fma32(c, z, _F32(4.166664568298827e-2))
    c = _fma32(c * z, z, -(z * _F32(0.5))) + _F32(1)
    s = np.full_like(x, _F32(-1.9515295891e-4))
    s = _fma32(s, z, _F32(8.3321608736e-3))
    s = _fma32(s, z, _F32(-1.6666654611e-1))
    s = _fma32(s * z, x, x)
    sin, cos = np.where(use_sin_poly, s, c), np.where(use_sin_poly, c, s)
    return np.where(negative_sin, -sin, sin), np.where(negative_cos, -cos, cos)


def _box_muller32(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """PyTorch's ``normal_fill_16_AVX2`` on rows of 16 uniforms: cos values first, then sin values."""
    u1, u2 = _F32(1) - u[:, :8], u[:, 8:]
    radius = np.sqrt(_F32(-2) * _log_avx(u1))
    sin, cos = _sincos_avx(_F32(2.0 * np.pi) * u2)
    out = np.concatenate([radius * cos, radius * sin], axis=1)
    return _fma32(out, _F32(std), _F32(mean))


_LIBM_MOST = 4096  # draws up to this size call the C library per element; larger ones take numpy's loops


def libm(fn, x: np.ndarray) -> np.ndarray:
    """``fn`` (a ``math`` function: the C library's, as PyTorch's CPU kernels call it) over float64 ``x``.

    numpy's own float64 log, sin, cos, tan, log1p and exp differ from the C library's in the last bit
    for about one value in a thousand. Up to ``_LIBM_MOST`` values go through ``fn`` itself, so
    small draws are PyTorch's to the bit; larger ones use numpy's vectorized function (the same
    values but for those last bits, which a float32 result almost never shows).
    """
    x = np.asarray(x, np.float64)
    if x.size <= _LIBM_MOST:
        return np.frompyfunc(fn, 1, 1)(x).astype(np.float64)
    return _NUMPY_OF[fn](x)


_NUMPY_OF = {
    math.log: np.log,
    math.log1p: np.log1p,
    math.sin: np.sin,
    math.cos: np.cos,
    math.tan: np.tan,
    math.exp: np.exp,
}


def _box_muller64(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """PyTorch's ``normal_fill_16`` in float64 (the C library's log, cos, sin)."""
    u1, u2 = 1.0 - u[:, :8], u[:, 8:]
    radius = np.sqrt(-2.0 * libm(math.log, u1))
    theta = 2.0 * math.pi * u2
    z = np.concatenate([radius * libm(math.cos, theta), radius * libm(math.sin, theta)], axis=1)
    return _fma64(z, std, mean)  # fused, as PyTorch's compiler contracts it


# ---------------------------------------------------------------------- distributions


def uniform(e: Engine, n: int, dtype: str, low: float, high: float) -> np.ndarray:
    """``uniform_(low, high)`` of ``n`` values: float64 from ``random64()``, the others from ``random()``.

    ``x·(high - low) + low`` with the multiply-add fused as in PyTorch's compiled kernel, in float64
    for float64 and in float32 for the others (float16 and bfloat16 round the float32 value, and give
    ``low`` where it rounds to ``high``, as PyTorch's).
    """
    if dtype == "float64":
        return _fma64(e.uniform64(n), float(high) - float(low), float(low))
    lo, hi = _F32(low), _F32(high)
    values = _fma32(e.uniform32(n), hi - lo, lo)
    if dtype in ("float16", "bfloat16"):  # a value that rounds up to ``high`` is ``low``: PyTorch keeps [low, high)
        _, rounded = _rounding(dtype)
        values = rounded(values)
        values[values == rounded(np.asarray([high], _F32))[0]] = rounded(np.asarray([low], _F32))[0]
    return values


# Box–Muller rows transformed at a time: a slice's float64 temporaries stay in the caches (randn of
# 2^24 values: one pass 2.96 s, slices of 2^12 rows 0.66 s, of 2^16 rows 1.6 s; docs/random.md).
_TRANSFORM_ROWS = 1 << 12


def normal(e: Engine, n: int, dtype: str, mean: float, std: float) -> np.ndarray:
    """``normal_(mean, std)`` of ``n`` values, by PyTorch's CPU algorithm for the size.

    16 or more: uniforms for every element, Box–Muller over each block of 16 (the first 8 give
    the radius, the last 8 the angle), and for a size that is not a multiple of 16 the last 16
    elements drawn anew and transformed again (float16 and bfloat16: the uniforms left over after the
    last whole block, then as many new ones as make 16; their values are the float32 ones, which the
    caller rounds). Fewer: one double Box–Muller pair per two values,
    the second kept in the generator's cache for the next scalar draw.
    """
    if n < 16:
        return normal_scalar(e, n, mean, std)
    wide = dtype == "float64"
    u = e.uniform64(n) if wide else e.uniform32(n)
    transform = _box_muller64 if wide else _box_muller32
    full = n // 16 * 16
    out = np.empty(n, u.dtype)
    rows, into = u[:full].reshape(-1, 16), out[:full].reshape(-1, 16)
    for first in range(0, len(rows), _TRANSFORM_ROWS):  # blocks are independent: the same values in any split
        into[first : first + _TRANSFORM_ROWS] = transform(rows[first : first + _TRANSFORM_ROWS], mean, std)
    if n % 16:
        if dtype in ("float16", "bfloat16"):  # PyTorch's reduced-precision tail: the leftover uniforms, then new ones
            tail = np.concatenate([u[full:], e.uniform32(16 - n % 16)])
        else:
            tail = e.uniform64(16) if wide else e.uniform32(16)
        out[n - 16 :] = transform(tail.reshape(1, 16), mean, std).reshape(-1)
    return out


def normal_scalar(e: Engine, n: int, mean: float, std: float) -> np.ndarray:
    """``n`` draws of ``at::normal_distribution<double>`` in a row (float64).

    Each draw takes the generator's cached value if there is one; otherwise two double uniforms
    u1, u2 give ``r = sqrt(-2·log1p(-u2))``, ``θ = 2π·u1``: it returns ``r·cos θ`` and caches
    ``r·sin θ`` for the next draw. So the values are the cache (if any), then cos, sin of each pair.
    """
    out = np.empty(n, np.float64)
    start = 0
    if n and e.next_double_normal is not None:
        out[0], e.next_double_normal, start = e.next_double_normal, None, 1
    pairs = (n - start + 1) // 2
    if pairs:
        u = e.uniform64(2 * pairs)
        radius = np.sqrt(-2.0 * libm(math.log1p, -u[1::2]))
        theta = 2.0 * math.pi * u[0::2]
        values = np.empty(2 * pairs, np.float64)
        values[0::2], values[1::2] = radius * libm(math.cos, theta), radius * libm(math.sin, theta)
        out[start:] = values[: n - start]
        if (n - start) % 2:
            e.next_double_normal = float(values[-1])
    return _fma64(out, std, mean)  # ``z·std + mean`` fused, as PyTorch's compiled transformation::normal


def random_from_to(e: Engine, n: int, span: int, low: int, wide: bool) -> np.ndarray:
    """``random_(low, low + span)``: ``word % span + low`` (int64), a 64-bit word where ``span >= 2^32``
    and the dtype takes one (``wide``: int64, float64, float32, bfloat16), else a 32-bit word."""
    w = e.words64(n) if wide and span >= 1 << 32 else e.words(n).astype(np.uint64)
    return (w % np.uint64(span)).astype(np.int64) + np.int64(low)


def random_full(e: Engine, n: int, dtype: str, limit: int) -> np.ndarray:
    """``random_()`` without bounds: ``word % limit`` (limit: 2 for bool, 2^63 for int64, the dtype's
    top + 1, or 2^digits + 1 for floats); int64 and float64 take 64-bit words."""
    w = e.words64(n) if dtype in ("int64", "float64") else e.words(n).astype(np.uint64)
    return (w % np.uint64(limit)).astype(np.int64)


def bernoulli_scalar(e: Engine, n: int, p: float) -> np.ndarray:
    """``bernoulli_(p)`` of a number: ``u < p`` for a double uniform per element (``random64()``)."""
    return e.uniform64(n) < p


def bernoulli_tensor(e: Engine, p: np.ndarray) -> np.ndarray:
    """``bernoulli_(p)`` of a tensor, elementwise in order: a float uniform per element for float32
    (and narrower) probabilities, a double one for float64."""
    flat = p.reshape(-1)
    u = e.uniform64(flat.size) if flat.dtype == np.float64 else e.uniform32(flat.size)
    return (u < flat).reshape(p.shape)


def exponential(e: Engine, n: int, lambd: float) -> np.ndarray:
    """``exponential_(lambd)``: ``-1/lambd · log1p(-u)`` for a double uniform ``u`` per element."""
    return -1.0 / lambd * libm(math.log1p, -e.uniform64(n))


def geometric(e: Engine, n: int, p: float) -> np.ndarray:
    """``geometric_(p)``: ``ceil(log(u) / log1p(-p))`` for a double uniform ``u`` per element."""
    return np.ceil(libm(math.log, e.uniform64(n)) / math.log1p(-p))


def cauchy(e: Engine, n: int, median: float, sigma: float) -> np.ndarray:
    """``cauchy_(median, sigma)``: ``median + sigma·tan(π·(u - 0.5))`` for a double uniform ``u``."""
    return median + sigma * libm(math.tan, math.pi * (e.uniform64(n) - 0.5))


def log_normal(e: Engine, n: int, mean: float, std: float) -> np.ndarray:
    """``log_normal_(mean, std)``: ``exp`` of the scalar normal path's draws (cache included)."""
    return libm(math.exp, normal_scalar(e, n, mean, std))


def randperm(e: Engine, n: int) -> np.ndarray:
    """PyTorch's CPU ``randperm``: Fisher–Yates from the front, element i swapped with
    ``i + word % (n - i)`` (a 32-bit word below 2^32/20 elements, else a 64-bit one)."""
    out = np.arange(n, dtype=np.int64)
    if n < 2:
        return out
    w = e.words(n - 1).astype(np.uint64) if n < 0xFFFFFFFF // 20 else e.words64(n - 1)
    picks = (w % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64) + np.arange(n - 1, dtype=np.int64)
    values = out.tolist()  # the swaps are sequential: a list is the fastest host form for them
    for i, z in enumerate(picks.tolist()):
        values[i], values[z] = values[z], values[i]
    return np.array(values, np.int64)


def _round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest, ties to even), kept as float32."""
    bits = np.asarray(x, _F32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(_F32)


def _rounding(dtype: str):
    """How PyTorch's CPU kernels round each op's result for ``dtype``: float16 and bfloat16 compute in
    float32 (their opmath type) and round the result; float32 and float64 compute in their own type."""
    if dtype == "float64":
        return np.float64, np.float64
    if dtype == "float16":
        return _F32, lambda x: np.asarray(x, _F32).astype(np.float16).astype(_F32)
    if dtype == "bfloat16":
        return _F32, _round_bf16
    return _F32, _F32


def trunc_normal(e: Engine, n: int, mean: float, std: float, a: float, b: float, dtype: str = "float32") -> np.ndarray:
    """``nn.init.trunc_normal_``'s values for a ``dtype`` tensor, by PyTorch's rejection sampler (PyTorch 2.12
    on), each op rounded to ``dtype`` as PyTorch's tensor ops round it (float64 values for float64, float32
    holding the reduced values for float16 and bfloat16).

    Where the interval holds more than 0.3 of the mass: normal draws of the whole tensor, redrawn
    whole while any value lies outside [a, b] (the bounds rounded to ``dtype``), each round keeping the new
    values only where the old ones fell outside. Otherwise: uniform candidates in [a, b] accepted where
    ``log u`` is above the candidate's log density (relative to its peak in the interval), again redrawn
    whole per round.
    """
    opmath, rounded = _rounding(dtype)

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    def normals() -> np.ndarray:
        return rounded(normal(e, n, dtype, mean, std).astype(opmath))

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = rounded(np.asarray([a], opmath))[0], rounded(np.asarray([b], opmath))[0]
        out = normals()
        while True:
            outside = (out < lo) | (out > hi)
            if not outside.any():
                return out
            out = np.where(outside, normals(), out)
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2
    mean_, std_, half_, peak_ = (opmath(v) for v in (mean, std, -0.5, log_peak))

    def rejected(candidates: np.ndarray) -> np.ndarray:
        # candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak), each op rounded
        z = rounded(rounded(candidates - mean_) / std_)
        log_pdf = rounded(rounded(rounded(z * z) * half_) - peak_)
        with np.errstate(divide="ignore"):
            return rounded(np.log(rounded(uniform(e, n, dtype, 0.0, 1.0)))) > log_pdf

    out = rounded(uniform(e, n, dtype, a, b))
    pending = rejected(out)
    while pending.any():
        candidates = rounded(uniform(e, n, dtype, a, b))
        out = np.where(pending, candidates, out)
        pending = np.where(pending, rejected(candidates), pending)
    return out


class _ScalarDraws:
    """The engine's double uniforms and ``at::normal_distribution<double>`` normals one at a time, for
    PyTorch's sequential samplers: the uniforms are drawn ahead in blocks (numpy per draw would cost
    more than the sampler), and ``finish`` rewinds the engine and advances it by exactly the words
    taken, so it ends where PyTorch's would."""

    def __init__(self, e: Engine, expected: int):
        self.e, self.saved, self.fresh = e, e.bits.state, e.fresh
        self.cached = e.next_double_normal
        self.values: list[float] = []
        self.pos, self.block = 0, max(expected, 64)

    def uniform(self) -> float:
        if self.pos == len(self.values):
            self.values += self.e.uniform64(self.block).tolist()
        self.pos += 1
        return self.values[self.pos - 1]

    def normal(self) -> float:
        """The cached sine value if there is one, else ``r·cos θ`` of a new pair (caching ``r·sin θ``)."""
        if self.cached is not None:
            value, self.cached = self.cached, None
            return value
        u1, u2 = self.uniform(), self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.cached = radius * math.sin(theta)
        return radius * math.cos(theta)

    def finish(self) -> None:
        self.e.bits.state, self.e.fresh = self.saved, self.fresh
        self.e.words(2 * self.pos)  # each double uniform is one random64(): two words
        self.e.next_double_normal = self.cached


def _gamma_one(draws: _ScalarDraws, alpha: float, wide: bool) -> float:
    """One draw of PyTorch's ``sample_gamma`` (aten/src/ATen/native/Distributions.h) on the CPU: the
    uniforms and normals are doubles from the generator (the normals through its Box–Muller cache),
    the arithmetic on ``alpha`` itself in its dtype (float32 unless ``wide``), the rest in double."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        inverse = 1.0 / alpha if wide else float(_F32(1.0) / _F32(alpha))  # ``1.0f / alpha``
        scale *= math.pow(1.0 - draws.uniform(), inverse)
        alpha = alpha + 1.0 if wide else float(_F32(alpha) + _F32(1.0))
    third = float(_F32(1.0) / _F32(3.0))  # ``1.0f / 3.0f``
    d = alpha - third if wide else float(_F32(alpha) - _F32(third))
    c = 1.0 / math.sqrt(9.0 * d)
    squeeze = float(_F32(0.0331))  # ``0.0331f``, widened
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - draws.uniform()
        xx = x * x
        if u < 1.0 - squeeze * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _poisson_one(draws: _ScalarDraws, lam: float) -> int:
    """One draw of PyTorch's CPU ``sample_poisson`` (aten/src/ATen/native/Distributions.cpp): Hörmann's
    transformed rejection (PTRS) from rate 10 up, Knuth's products of uniforms below, double uniforms."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = draws.uniform() - 0.5
            v = draws.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    count, product = 0, 1.0
    while True:
        product *= draws.uniform()
        if product <= enlam:
            return count
        count += 1


def poisson(e: Engine, n: int, rates: np.ndarray) -> np.ndarray:
    """PyTorch's CPU ``poisson``: ``sample_poisson`` per element, in order (its serial kernel), on the
    rates widened to double; float64 counts."""
    draws = _ScalarDraws(e, 2 * n)
    try:
        values = [_poisson_one(draws, lam) for lam in rates.reshape(n).tolist()]
    finally:
        draws.finish()
    return np.array(values, np.float64)


def _keep(value):
    return value


@functools.cache
def _log1pf():
    """The C library's float log1p, as PyTorch's float kernel calls it (found on first use:
    ``find_library`` runs ``ldconfig`` in a subprocess)."""
    import ctypes
    import ctypes.util

    log1pf = ctypes.CDLL(ctypes.util.find_library("m")).log1pf
    log1pf.restype, log1pf.argtypes = ctypes.c_float, [ctypes.c_float]
    return log1pf


# PyTorch's stirling_approx_tail table (from TensorFlow's random_binomial_op)
_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def _stirling_tail(k: float) -> float:
    """PyTorch's ``stirling_approx_tail``: the table below 10, the series above."""
    if k < len(_STIRLING_TAIL):
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(draws: _ScalarDraws, count, prob, wide: bool) -> float:
    """PyTorch's ``btrs`` (Hörmann's transformed rejection): float32 products where its ``scalar_t`` is float."""
    f = _keep if wide else _F32
    stddev = float(np.sqrt(f(f(count * prob) * f(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(f(count * prob)) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(f(prob / f(1 - prob)))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(float(f(f(count + 1) * prob)))
    count = float(count)
    while True:
        u = draws.uniform() - 0.5
        v = draws.uniform()
        us = 0.5 - abs(u)
        k = float(f(math.floor((2 * a / us + b) * u + c)))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = (
            (m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
            + (count + 1) * math.log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
            + _stirling_tail(m)
            + _stirling_tail(count - m)
            - _stirling_tail(k)
            - _stirling_tail(count - k)
        )
        if v <= upper:
            return k


def _binomial_inversion(draws: _ScalarDraws, count, prob, wide: bool) -> float:
    """PyTorch's ``binomial_inversion``: geometric waiting times summed past ``count``."""
    logprob = math.log1p(-prob) if wide else float(_log1pf()(float(-prob)))
    geom_sum, num = 0.0, 0.0
    while True:
        u = draws.uniform()
        geom_sum += math.ceil(math.log(u) / logprob)
        if geom_sum > count:
            return num
        num += 1


def _binomial_one(draws: _ScalarDraws, count, prob, wide: bool) -> float:
    """One draw of PyTorch's CPU ``sample_binomial`` (aten/src/ATen/native/Distributions.h)."""
    f = _keep if wide else _F32
    if count <= 0 or prob <= 0:
        return 0.0
    if prob >= 1:
        return float(count)
    if prob <= 0.5:
        if float(f(count * prob)) >= 10.0:
            return _btrs(draws, count, prob, wide)
        return _binomial_inversion(draws, count, prob, wide)
    if prob > 0.5:
        q = f(1.0 - float(prob))
        if float(f(count * q)) >= 10.0:
            return float(f(count - f(_btrs(draws, count, q, wide))))
        return float(f(count - f(_binomial_inversion(draws, count, q, wide))))
    return math.nan


def binomial(e: Engine, n: int, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """PyTorch's CPU ``binomial``: ``sample_binomial`` per element, in order, with double uniforms; the
    count and prob arithmetic in their dtype (float32 unless float64), float64 results."""
    wide = counts.dtype == np.float64
    draws = _ScalarDraws(e, 2 * n)
    try:
        vals = [_binomial_one(draws, c, p, wide) for c, p in zip(counts.reshape(-1), probs.reshape(-1))]
    finally:
        draws.finish()
    return np.array(vals, np.float64)


def _gammas(e: Engine, alpha: np.ndarray, wide: bool) -> np.ndarray:
    draws = _ScalarDraws(e, 3 * alpha.size)
    try:
        values = [_gamma_one(draws, a, wide) for a in alpha.reshape(-1).tolist()]
    finally:
        draws.finish()
    return np.array(values, np.float64)


def standard_gamma(e: Engine, n: int, alpha: np.ndarray) -> np.ndarray:
    """PyTorch's CPU ``_standard_gamma``: Marsaglia and Tsang's rejection method per element, in
    order (a sequential loop, as PyTorch's serial kernel), concentrations below 1 boosted by
    ``(1 - u)^(1/alpha)``; each value at least the dtype's smallest normal. ``alpha``: float32 or
    float64 concentrations, the result in that dtype."""
    out = _gammas(e, alpha.reshape(n), alpha.dtype == np.float64).astype(alpha.dtype)
    return np.maximum(out, np.finfo(alpha.dtype).tiny)


def dirichlet(e: Engine, n: int, alpha: np.ndarray) -> np.ndarray:
    """PyTorch's CPU ``_sample_dirichlet``: double gamma draws of the concentrations ``alpha`` (rows
    of the last dim) by ``sample_gamma`` in double, each row divided by its sum in double, then
    rounded to ``alpha``'s dtype and kept within [smallest normal, the float just below 1]."""
    gammas = np.maximum(_gammas(e, alpha.reshape(n), True), np.finfo(np.float64).tiny).reshape(alpha.shape)
    out = (gammas / gammas.sum(-1, keepdims=True)).astype(alpha.dtype)
    return np.clip(out, np.finfo(alpha.dtype).tiny, np.nextafter(alpha.dtype.type(1), alpha.dtype.type(0)))
