"""Per-device choices of the kernel templates: workgroup sizes, work per invocation, vectors.

A ``Tuning`` changes how a kernel is laid out over invocations, never what it computes:
elementwise kernels compute the same expression per element whatever the vector width, and
reductions keep the contract's tree for every power-of-two lane count and per-lane count
(every aligned block of 2^k elements is a subtree). So the CPU reference and a GPU may use
different tunings and still give the same bits — tests/test_kernels_tuning.py checks it.

The tuning is part of the template cache key (vkml/schedule/scheduler.py), since it shapes the IR.

    >>> tuning_for(vkml.device("cpu")).vector
    1
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import config
from ..codegen.features import DeviceFeatures
from ..ir.instructions import VECTOR_WIDTH


@dataclass(frozen=True)
class Tuning:
    """How the templates spread work; every field a power of two.

    - ``local_size``: invocations per elementwise workgroup.
    - ``vector``: elements an elementwise invocation handles together (1, or ``VECTOR_WIDTH``:
      then contiguous leaves and the output move as 16-byte vectors).
    - ``vectors_per_invocation``: how many such groups one invocation handles, a workgroup
      apart (so each round of loads stays coalesced).
    - ``reduce_lanes``: the most invocations of a reduction workgroup (fewer for short rows).
    - ``reduce_per_lane``: elements each lane reduces in registers per chunk (a contiguous,
      aligned run, loaded as vectors where the layout allows).
    - ``reduce_row_per_lane``: a lane may take up to this many when that puts a whole row in
      one chunk (chained reductions — softmax, layer norm — then load the row once).
    - ``row_lanes``: the most invocations of a rows-mode workgroup (one per row; 0: ``reduce_lanes``).
    - ``subgroup``: the first log2(subgroup) levels of a workgroup's tree use ``shuffle_xor``
      among this many lanes, the rest shared memory (1: shared memory only).
    - ``wide_shuffles``: shuffles of float16 and int64 values are allowed.
    - ``columns_outputs``: neighbouring outputs of a workgroup of the columns mode (a reduction
      over a non-innermost axis, vkml/kernels/reduce_columns.py); its other lanes split the
      reduced axis into aligned blocks.
    - ``columns_per_chunk``: reduced indices a columns-mode invocation loads before combining
      them (its loads in flight: one per index, each from another row).
    - ``staged_row_max``: a rows kernel that writes whole rows (softmax, layer norm) of at most
      this many elements stores them through shared memory as contiguous vectors (0: never;
      ``staged_row_elements`` gives the most a device's shared memory holds).
    - ``reduce_split_rows``: a lone reduction with fewer outputs than this, each at least
      ``reduce_rows.SPLIT_MIN_CHUNKS`` chunks long, is split over aligned blocks of its
      reduced range (the blocks mode: one workgroup a chunk, then a pass over the chunks'
      results), since one workgroup an output would leave most of the device idle (batch
      norm's per-channel sums over (N, H, W)). 0: only below ``reduce_rows.ROWS_MODE_MIN_ROWS``.
      ``VKML_REDUCE_SPLIT=0`` sets it to 0 on every device (``tuning_for``), for A/B runs.
    """

    local_size: int = 64
    vector: int = 1
    vectors_per_invocation: int = 1
    reduce_lanes: int = 64
    reduce_per_lane: int = 4
    reduce_row_per_lane: int = 4
    row_lanes: int = 0
    subgroup: int = 1
    wide_shuffles: bool = False
    columns_outputs: int = 16
    columns_per_chunk: int = 16
    staged_row_max: int = 0
    reduce_split_rows: int = 0

    def __post_init__(self):
        powers = ("local_size", "vectors_per_invocation", "reduce_lanes", "reduce_per_lane", "subgroup")
        for name in (*powers, "columns_outputs", "columns_per_chunk"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"Tuning.{name} must be a power of two, got {value}")
        if self.vector not in (1, VECTOR_WIDTH):
            raise ValueError(f"Tuning.vector must be 1 or {VECTOR_WIDTH}, got {self.vector}")
        if self.staged_row_max < 0 or self.staged_row_max & (self.staged_row_max - 1):
            raise ValueError(f"Tuning.staged_row_max must be 0 or a power of two, got {self.staged_row_max}")
        if self.reduce_split_rows < 0:
            raise ValueError(f"Tuning.reduce_split_rows must be >= 0, got {self.reduce_split_rows}")
        if self.row_lanes < 0 or self.row_lanes & (self.row_lanes - 1):
            raise ValueError(f"Tuning.row_lanes must be 0 or a power of two, got {self.row_lanes}")
        if self.reduce_row_per_lane < self.reduce_per_lane or self.reduce_row_per_lane & (self.reduce_row_per_lane - 1):
            raise ValueError("Tuning.reduce_row_per_lane must be a power of two >= reduce_per_lane")


# Fewer outputs than this, with long rows: a lone reduction is split over aligned blocks of each
# row (Tuning.reduce_split_rows). A GPU holds about eight 256-lane workgroups per multiprocessor, and
# large ones have on the order of a hundred multiprocessors: one workgroup an output fills them from
# about a thousand outputs on. Splitting never changes bits; the CPU reference splits alike, so its
# tests run the same plans as the GPUs'.
SPLIT_ROWS = 1024

# The CPU interpreter pays per instruction executed over all simulated invocations at once, so
# vectors (four instructions where one did) only add work there. Reductions want few chunks and
# few shared-memory levels instead: 16 elements a lane (64 for a whole row) ran sum, amax,
# softmax and layer norm over 1024-wide rows 1.8-3.6x faster than 4 (2026-11-30, this 2-core
# machine). No shuffles: a kernel lowered for the CPU stays valid SPIR-V for any device
# (vkml-dump-spirv --device cpu shows it so).
CPU_TUNING = Tuning(
    local_size=64,
    vector=1,
    vectors_per_invocation=1,
    reduce_lanes=64,
    reduce_per_lane=16,
    reduce_row_per_lane=64,
    subgroup=1,
    wide_shuffles=False,
    columns_outputs=4,  # more blocks per output: shorter loops, each one interpreted step by step
    columns_per_chunk=4,
    reduce_split_rows=SPLIT_ROWS,
)

# A GPU moves memory best in 16-byte vectors from workgroups of 256 (reference/vulkan.md:
# vec4 at 256 gave 4.35 TB/s on the H200 against 1.27 TB/s for scalar loads at 64). Two
# vectors per invocation, a workgroup apart: two 16-byte accesses per input in flight, and
# what depends only on the row (layer norm's mean) is computed once for both. A reduction
# lane takes 16 elements (four vectors) per chunk, so a 256-lane workgroup covers 4096
# elements between two trips through shared memory; up to 32 when a whole row then fits.
# A columns-mode workgroup takes 16 neighbouring outputs (64-byte runs of float32: whole
# 32-byte sectors) by 16 blocks, so a 4096 x 4096 sum(0) runs 65536 invocations.
GPU_TUNING = Tuning(
    local_size=256,
    vector=VECTOR_WIDTH,
    vectors_per_invocation=2,
    reduce_lanes=256,
    reduce_per_lane=16,
    reduce_row_per_lane=32,
    subgroup=1,
    wide_shuffles=False,
    columns_outputs=16,
    columns_per_chunk=16,
    reduce_split_rows=SPLIT_ROWS,
)


SUBGROUPS_PER_REDUCTION = 8
# Shared memory a rows kernel keeps for its trees (a few words a subgroup) besides a staged row.
TREE_SHARED_BYTES = 2048


def staged_row_elements(shared_bytes: int) -> int:
    """The longest power-of-two float32 row that fits in ``shared_bytes`` staged (``n + n / 32`` words) beside the trees.

    >>> staged_row_elements(49152), staged_row_elements(16384)
    (8192, 2048)
    """
    n = 1
    while (2 * n + 2 * n // 32) * 4 + TREE_SHARED_BYTES <= shared_bytes:
        n *= 2
    return n if (n + n // 32) * 4 + TREE_SHARED_BYTES <= shared_bytes else 0


def tuning_from_features(features: DeviceFeatures) -> Tuning:
    """The tuning for a Vulkan device with ``features``, within its limits.

    >>> tuning_from_features(DeviceFeatures.h200_like()).subgroup
    32
    """
    most = _pow2_floor(features.max_workgroup_invocations)
    lanes = min(GPU_TUNING.reduce_lanes, most)
    subgroup = 1
    if features.subgroup_shuffle and features.subgroup_size > 1:
        subgroup = min(_pow2_floor(features.subgroup_size), lanes)
        # At most SUBGROUPS_PER_REDUCTION subgroups: the shared-memory step of a chunk's tree is then
        # one barrier and a few reads per lane. (lavapipe, subgroups of 8: 64 lanes ran sum,
        # softmax and layer norm 1.2-1.8x faster than 256, measured; the H200: 8 x 32 = 256.)
        lanes = min(lanes, SUBGROUPS_PER_REDUCTION * subgroup)
    rows = {}
    if subgroup >= 32:
        # 32-wide subgroups (the H200): one row per workgroup of 16 subgroups, 16 floats a lane,
        # holds an 8192-float row in half the registers a lane of 8 subgroups needs (8192²,
        # bench/tune_kernels.py, 2026-11-30: layer norm 241 vs 339 µs, softmax 539 vs 557 µs;
        # 512 lanes that could still take 32 floats each ran 3-4x slower).
        rows = {"row_lanes": min(2 * lanes, most), "reduce_row_per_lane": GPU_TUNING.reduce_per_lane}
    # A lane's run of 16 consecutive floats makes each vector store of a subgroup write 16 bytes of
    # every 64; staged through shared memory the stores are contiguous. The H200, 8192²
    # (2026-12-01): softmax 335 -> 299 µs (layer norm and x - mean are computed again at
    # contiguous positions instead: 231 -> 147 and 197 -> 134; kernels_reduce._store_row).
    return replace(
        GPU_TUNING,
        **rows,
        staged_row_max=staged_row_elements(features.max_compute_shared_memory_size),
        local_size=min(GPU_TUNING.local_size, most),
        reduce_lanes=lanes,
        subgroup=subgroup,
        wide_shuffles=features.subgroup_extended_types,
    )


_BY_DEVICE: dict[str, Tuning] = {}


_UNSPLIT: dict[int, tuple[Tuning, Tuning]] = {}  # id(tuning) -> (tuning, the same without splitting reductions)


def tuning_for(device) -> Tuning:
    """The tuning for ``device``: from its ``DeviceFeatures`` on Vulkan, ``CPU_TUNING`` for the CPU reference.

    Under ``VKML_REDUCE_SPLIT=0`` its ``reduce_split_rows`` is 0 (the same object each call, so plan
    caches keyed by it keep hitting).
    """
    found = _BY_DEVICE.get(device.name)
    if found is None:
        features = getattr(device, "features", None)
        found = CPU_TUNING if features is None else tuning_from_features(features)
        _BY_DEVICE[device.name] = found
    if found.reduce_split_rows and not config.reduce_split():
        pair = _UNSPLIT.get(id(found))
        if pair is None or pair[0] is not found:
            pair = _UNSPLIT[id(found)] = (found, replace(found, reduce_split_rows=0))
        return pair[1]
    return found


def set_tuning(device, tuning: Tuning | None) -> None:
    """Use ``tuning`` for ``device`` from now on (``None``: back to the default). For tests and tuning runs.

    >>> set_tuning(vkml.device("cpu"), GPU_TUNING)   # the CPU reference runs the GPU layout
    """
    _BY_DEVICE.pop(device.name, None)
    if tuning is not None:
        _BY_DEVICE[device.name] = tuning


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, int(n)).bit_length() - 1)
