"""Every environment variable vkml reads, in one place. Each getter reads the environment on
every call (cheap), so tests can change a variable with ``monkeypatch.setenv``; the one
exception is ``VKML_EAGER``, which every op asks about: vkml reads it once, at import
(``vkml.set_eager`` changes it later).

| variable | getter | meaning |
|---|---|---|
| ``VKML_CACHE_DIR`` | ``cache_dir()`` | where compiled kernels and pipeline caches are kept (default ``~/.cache/vkml``, or ``$XDG_CACHE_HOME/vkml``) |
| ``VKML_CACHE_MAX_BYTES`` | ``cache_max_bytes()`` | the most bytes the on-disk cache keeps (default 1 GiB); least recently used files are removed first. Suffixes ``K``, ``M``, ``G`` (powers of 1024) |
| ``VKML_EAGER`` | ``eager()`` | ``1``: every op runs at once (read when vkml is imported) |
| ``VKML_DUMP_SPIRV`` | ``dump_spirv_dir()`` | a folder where each kernel compiled for Vulkan is written: its IR (.vkir), assembly (.spvasm) and binary (.spv) |
| ``VKML_DEBUG`` | ``debug_level()`` | ``1``: print a line per realize (kernels, dispatches, bytes, GPU time from timestamps; wall clock on the CPU) to stderr; ``2``: and a line per kernel; ``3``: and each kernel's fused ops with the user's source line (vkml/debug.py, docs/debugging.md); ``0`` (default): nothing |
| ``VKML_ASYNC`` | ``submit_async()`` | ``0``: every Vulkan submission is waited for at once (the synchronous runtime, for comparisons). Default ``1``: the host waits only when it needs results or memory the work uses (vkml/runtime/vulkan/backend.py) |
| ``VKML_FENCE_SPIN_US`` | ``fence_spin_us()`` | microseconds the host polls a fence before it sleeps in ``vkWaitForFences`` when it waits for GPU work (read when a device opens). Default ``2000`` on GPUs (a sleeping wait wakes tens of µs late; PyTorch's CUDA synchronisation spins likewise), ``0`` on CPU Vulkan drivers such as lavapipe, whose work needs every core |
| ``VKML_BACKWARD_RUNS`` | ``backward_runs()`` | when ``backward()`` submits work (vkml/frontend/autograd.py): ``split`` (default) the forward as it starts and the gradients as it ends; ``end`` forward and gradients together as it ends; ``lazy`` nothing (the optimizer's step runs it all) |
| ``VKML_MATMUL_COOPMAT`` | ``matmul_coopmat()`` | ``0``: float16 matmul keeps the scalar tiles (the CPU's bits) on devices with cooperative matrices too. Default ``1``: it runs on them where the device has them, within the bound docs/ops/matmul.md states |
| ``VKML_MATMUL_COOPMAT2`` | ``matmul_coopmat2()`` | ``0``: float16 matmul does not take the workgroup-scope VK_NV_cooperative_matrix2 template (kernels_matmul_coopmat2) and runs on the subgroup-scope one instead. Default ``1``: the plain product of two row-major float16 matrices takes it where the device has it. ``VKML_MATMUL_COOPMAT=0`` turns off both |
| ``VKML_MATMUL_COOPMAT2_SHAPE`` | ``matmul_coopmat2_shape()`` | the shape of that template's kernel, as its mode string writes it (e.g. ``128x128x64 t128 u2 g16``: tile, invocations, K-steps per loop iteration, tile rows walked together); unset: ``kernels_matmul_coopmat2.DEFAULT``. For measuring shapes; ``u`` and ``g`` keep the bits (the same blocks of k in the same order) |
| ``VKML_COMPILE_THREADS`` | ``compile_threads()`` | how many kernels one realize compiles at once when it meets several new ones (vkml/runtime/vulkan/pipelines.py): default the CPU count, at most 8; ``1``: one after another |
| ``VKML_PROGRESS`` | ``progress()`` | a progress bar on stderr while one realize compiles several new kernels (tqdm when installed, else vkml/runtime/progress.py's own): ``1`` always, ``0`` never; unset: when stderr is a terminal and the compiles take over a second |
| ``VKML_MATMUL_FMA`` | ``matmul_fma()`` | on GPUs with the large matmul tiles, whether matmul fuses its multiply-adds (about 1.5x faster there; results within 2γ_K Σ|a||b| of the CPU's instead of equal to them): ``auto`` (default) for products of at least 2^27 multiply-adds (a batch's together), ``1`` for every size, ``0`` never (every device then gives the CPU's bits). docs/ops/matmul.md |
| ``VKML_ATTENTION_COOPMAT`` | ``attention_coopmat()`` | ``0``: the fused attention forward keeps the scalar kernel (the CPU's bits) on devices with cooperative matrices too. Default ``1``: float16 inputs run on them where the device has them, within the bound docs/ops/scaled_dot_product_attention.md states |
| ``VKML_ATTENTION_CM2`` | ``attention_cm2()`` | ``0``: the float16 attention forward keeps the subgroup-scope kernel (``VKML_ATTENTION_COOPMAT``) on devices with VK_NV_cooperative_matrix2 too. Default ``1``: the flash-attention kernel on workgroup-scope matrices runs where it applies (vkml/kernels/attention_cm2.py), within the same bound |
| ``VKML_ATTENTION_TILED`` | ``attention_tiled()`` | ``0``: the fused attention kernels (forward and backward) are the untiled scalar ones, one score a lane (the earlier form, kept for measuring; other bits within the same bound). Default ``1``: heads whose tiles fit in 32 KiB (E = Ev = 64 and smaller) take the register-tiled kernels (vkml/kernels/attention.py), on every device alike |
| ``VKML_CONV_IMPLICIT`` | ``conv_implicit()`` | ``0``: conv2d and conv1d with one group write their im2col matrix into a buffer, multiply it and lay the result out in a kernel each (the earlier form, kept for measuring). Default ``1``: one implicit-GEMM product reads the windows of the padded input by index arithmetic and writes (N, C, *out) with the bias added; the same sums, the same bits |
| ``VKML_REDUCE_SPLIT`` | ``reduce_split()`` | ``0``: a reduction with few outputs keeps one workgroup an output (the earlier plan, kept for measuring). Default ``1``: a lone reduction with fewer outputs than ``Tuning.reduce_split_rows`` and long rows (batch norm's per-channel sums over (N, H, W)) is split over aligned blocks of each row, one workgroup a block, and a further pass combines the blocks' results by the upper levels of the same tree: the same bits (vkml/kernels/reduce_rows.py) |
| ``VKML_EAGER_SCALARS`` | ``eager_scalars()`` | ``0``: eager realizes keep every kernel parameter a push constant (the earlier form, for A/B measurements). Default ``1``: on Vulkan devices the host writes through a mapping, a cached plan's parameters that change on every realize (dropout's key, Adam's bias corrections) move into a ring buffer, so the realize submits its earlier command buffer again (vkml/schedule/eager_scalars.py); the same bits |

    >>> import os; os.environ["VKML_CACHE_DIR"] = "/tmp/vkml-cache"
    >>> str(cache_dir())
    '/tmp/vkml-cache'
"""

from __future__ import annotations

import os
from pathlib import Path

# vkml's version, as pyproject.toml's [project] table states it (tests/test_packaging.py checks
# they agree). Read here, not through importlib.metadata, whose import costs a cold start
# about 0.1 s.
VERSION = "0.1.0"


def cache_dir() -> Path:
    """The folder for vkml's on-disk caches (it may not exist yet)."""
    explicit = os.environ.get("VKML_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vkml"


CACHE_MAX_BYTES = 1 << 30


def cache_max_bytes() -> int:
    """``VKML_CACHE_MAX_BYTES``: the on-disk cache's budget in bytes (default 1 GiB; a bad value: the default)."""
    return parse_bytes(os.environ.get("VKML_CACHE_MAX_BYTES", ""), CACHE_MAX_BYTES)


def parse_bytes(raw: str, default: int) -> int:
    """A byte count, with an optional ``K``, ``M`` or ``G`` (powers of 1024; ``MiB``, ``MB`` too); else ``default``.

    >>> parse_bytes("64M", 0), parse_bytes("1 GiB", 0), parse_bytes("1000", 0), parse_bytes("lots", 7)
    (67108864, 1073741824, 1000, 7)
    """
    raw = raw.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1:], 1)
    try:
        value = int(raw[:-1] if scale > 1 else raw) * scale
    except ValueError:
        return default
    return value if value >= 0 else default


_eager_parsed: tuple[str, bool] = ("", False)  # (the raw value last seen, what it means)


ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")


# On POSIX ``os.environ`` keeps the variables, encoded, in its ``_data`` dict, which every write to
# ``os.environ`` updates: reading it skips the mapping's generic get (an encode and a decode of each
# key), which cost a realize several µs for the variables read on its path. Elsewhere: the mapping.
_ENVIRON_BYTES = getattr(os.environ, "_data", None) if os.name == "posix" else None


def _env(name: str, default: str = "") -> str:
    """``os.environ.get(name, default)``, read quickly: for variables read on every realize."""
    if _ENVIRON_BYTES is None:
        return os.environ.get(name, default)
    raw = _ENVIRON_BYTES.get(name.encode())
    return default if raw is None else os.fsdecode(raw)


def _switch(name: str, default: bool) -> bool:
    """An on/off variable: True for ``ON_WORDS``, False for ``OFF_WORDS``, else ``default`` (unset included)."""
    raw = _env(name).strip().lower()
    if raw in ON_WORDS:
        return True
    if raw in OFF_WORDS:
        return False
    return default


def eager() -> bool:
    """Whether ``VKML_EAGER`` asks every op to run at once (``1``, ``true``, ``yes``)."""
    global _eager_parsed
    raw = _env("VKML_EAGER")
    if raw != _eager_parsed[0]:  # every op asks: parse only when the value changes
        _eager_parsed = (raw, raw.strip().lower() in ON_WORDS)
    return _eager_parsed[1]


# What each variable read on every realize meant when its raw value was last seen: parsed again only
# when that value changes (a test's monkeypatch.setenv stores a new one), so a realize pays a dict
# lookup and a comparison per variable.
_debug_parsed: tuple = (None, 0)
_async_parsed: tuple = (None, True)
_DEBUG_KEY = "VKML_DEBUG" if _ENVIRON_BYTES is None else b"VKML_DEBUG"
_ASYNC_KEY = "VKML_ASYNC" if _ENVIRON_BYTES is None else b"VKML_ASYNC"
_split_parsed: tuple = (None, True)
_SPLIT_KEY = "VKML_REDUCE_SPLIT" if _ENVIRON_BYTES is None else b"VKML_REDUCE_SPLIT"
_scalars_parsed: tuple = (None, True)
_SCALARS_KEY = "VKML_EAGER_SCALARS" if _ENVIRON_BYTES is None else b"VKML_EAGER_SCALARS"
_ENVIRON_RAW = os.environ if _ENVIRON_BYTES is None else _ENVIRON_BYTES


def environment() -> dict:
    """A copy of the process's environment variables (raw), to compare with a later one: a cache of
    choices that read variables keeps it and chooses again once it differs."""
    return dict(_ENVIRON_RAW)


def debug_level() -> int:
    """``VKML_DEBUG`` as an integer; 0 when unset or not a number."""
    global _debug_parsed
    raw = _ENVIRON_RAW.get(_DEBUG_KEY)
    if raw != _debug_parsed[0]:
        try:
            level = int(_env("VKML_DEBUG", "0"))
        except ValueError:
            level = 0
        _debug_parsed = (raw, level)
    return _debug_parsed[1]


def dump_spirv_dir() -> Path | None:
    """``VKML_DUMP_SPIRV``: a folder where every kernel compiled for Vulkan is written (IR, .spvasm, .spv)."""
    folder = os.environ.get("VKML_DUMP_SPIRV", "").strip()
    return Path(folder).expanduser() if folder else None


def matmul_fma() -> str:
    """When matmul may accumulate with fused multiply-adds (``VKML_MATMUL_FMA``): ``auto``, ``on`` or ``off``.

    ``auto`` (the default) fuses only products large enough for the arithmetic rate to matter
    (``kernels_matmul.FMA_MIN_MULTIPLY_ADDS``); small ones, like the demo's layers, keep the CPU
    reference's bits, so its training run still reproduces the CPU's losses bit for bit.

    >>> import os; os.environ["VKML_MATMUL_FMA"] = "0"
    >>> matmul_fma()
    'off'
    """
    raw = os.environ.get("VKML_MATMUL_FMA", "auto").strip().lower()
    if raw in ON_WORDS:
        return "on"
    if raw in OFF_WORDS:
        return "off"
    return "auto"


def matmul_coopmat() -> bool:
    """Whether float16 matmul may run on cooperative matrices where the device has them (``VKML_MATMUL_COOPMAT``).

    On by default: matmul's accumulation is the contract's named exception (a stated bound,
    deterministic per device); ``0`` keeps the scalar tiles and so the CPU's bits.
    """
    return _switch("VKML_MATMUL_COOPMAT", True)


def attention_coopmat() -> bool:
    """Whether the fused attention forward may run on cooperative matrices where the device has them
    (``VKML_ATTENTION_COOPMAT``, on by default): float16 inputs, within the op page's bound; ``0`` keeps
    the scalar kernel and so the CPU's bits.
    """
    return _switch("VKML_ATTENTION_COOPMAT", True)


def attention_cm2() -> bool:
    """Whether the float16 attention forward may run on VK_NV_cooperative_matrix2's workgroup-scope matrices
    where the device has them and the call fits (``VKML_ATTENTION_CM2``, on by default; needs
    ``VKML_ATTENTION_COOPMAT`` on too): within the op page's bound, as the subgroup-scope kernel.
    """
    return _switch("VKML_ATTENTION_CM2", True) and attention_coopmat()


def attention_tiled() -> bool:
    """Whether the fused attention kernels are the register-tiled scalar ones where their tiles fit
    (``VKML_ATTENTION_TILED``, on by default). Both forms give the same bits on every device; ``0`` (the
    one-score-a-lane kernels, other bits within the same bound) is for measuring one against the other.
    """
    return _switch("VKML_ATTENTION_TILED", True)


def conv_implicit() -> bool:
    """Whether a one-group convolution is one implicit-GEMM product (``VKML_CONV_IMPLICIT``, on by default).

    ``0`` keeps the im2col form: the columns written by a kernel of their own, the product, and a layout
    kernel. Both sum the same products in the same order (docs/ops/conv2d.md), so the switch is for
    measuring: the bits stay.
    """
    return _switch("VKML_CONV_IMPLICIT", True)


def matmul_coopmat2() -> bool:
    """Whether float16 matmul may take the VK_NV_cooperative_matrix2 template (``VKML_MATMUL_COOPMAT2``, and
    ``VKML_MATMUL_COOPMAT`` not ``0``): workgroup-scope matrices loaded straight from the buffers.

    >>> matmul_coopmat2()  # with neither variable set
    True
    """
    return matmul_coopmat() and _switch("VKML_MATMUL_COOPMAT2", True)


def matmul_coopmat2_shape() -> str:
    """The shape ``VKML_MATMUL_COOPMAT2_SHAPE`` names for the VK_NV_cooperative_matrix2 template ('' when unset).

    >>> matmul_coopmat2_shape()  # unset: the template's DEFAULT
    ''
    """
    return " ".join(os.environ.get("VKML_MATMUL_COOPMAT2_SHAPE", "").split())


def submit_async() -> bool:
    """Whether Vulkan submissions return before their work completes (``VKML_ASYNC``, default on).

    >>> submit_async() in (True, False)
    True
    """
    global _async_parsed
    raw = _ENVIRON_RAW.get(_ASYNC_KEY)
    if raw != _async_parsed[0]:
        _async_parsed = (raw, _switch("VKML_ASYNC", True))
    return _async_parsed[1]


def reduce_split() -> bool:
    """Whether reductions with few outputs and long rows are split over workgroups (``VKML_REDUCE_SPLIT``, default on).

    Read by ``kernels.tuning.tuning_for`` on every realize; both settings give the same bits.

    >>> reduce_split() in (True, False)
    True
    """
    global _split_parsed
    raw = _ENVIRON_RAW.get(_SPLIT_KEY)
    if raw != _split_parsed[0]:
        _split_parsed = (raw, _switch("VKML_REDUCE_SPLIT", True))
    return _split_parsed[1]


def eager_scalars() -> bool:
    """Whether eager realizes move parameters that change on every step into a ring buffer (``VKML_EAGER_SCALARS``, default on).

    Read on every realize of a cached plan with parameters; both settings give the same bits.

    >>> eager_scalars() in (True, False)
    True
    """
    global _scalars_parsed
    raw = _ENVIRON_RAW.get(_SCALARS_KEY)
    if raw != _scalars_parsed[0]:
        _scalars_parsed = (raw, _switch("VKML_EAGER_SCALARS", True))
    return _scalars_parsed[1]


def fence_spin_us(default: int) -> int:
    """``VKML_FENCE_SPIN_US``: how long to poll a fence before sleeping on it; ``default`` when unset or invalid.

    >>> fence_spin_us(7) >= 0
    True
    """
    raw = os.environ.get("VKML_FENCE_SPIN_US", "").strip()
    try:
        value = int(raw)
    except ValueError:
        return default
    return value if value >= 0 else default


BACKWARD_RUNS = ("split", "end", "lazy")


def backward_runs() -> str:
    """When ``backward()`` submits work (``VKML_BACKWARD_RUNS``): ``split`` (default), ``end`` or ``lazy``.

    >>> backward_runs() in BACKWARD_RUNS
    True
    """
    raw = os.environ.get("VKML_BACKWARD_RUNS", "split").strip().lower()
    return raw if raw in BACKWARD_RUNS else "split"


def compile_threads() -> int:
    """``VKML_COMPILE_THREADS``: kernels compiled at once by one realize; default ``min(8, CPU count)``.

    >>> compile_threads() >= 1
    True
    """
    raw = os.environ.get("VKML_COMPILE_THREADS", "").strip()
    try:
        value = int(raw)
    except ValueError:
        value = 0
    # Past 8 the GIL-bound half (emitting SPIR-V text) is the limit, not the tools or the driver.
    return value if value >= 1 else max(1, min(8, os.cpu_count() or 1))


def progress() -> bool | None:
    """``VKML_PROGRESS``: ``True`` (``1``) show compile progress bars, ``False`` (``0``) never, ``None`` (unset): on a terminal.

    >>> progress() in (True, False, None)
    True
    """
    raw = os.environ.get("VKML_PROGRESS", "").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    return None
