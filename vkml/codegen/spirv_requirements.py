"""What a kernel needs from a device, checked before any SPIR-V is emitted.

    needs = required_features(kernel, features)   # {'int64', ...}, or CompileError naming the gap
    check_limits(kernel, features)                 # workgroup size, shared memory, push constants

Only optional device features a kernel actually relies on are required, so a float32 kernel
runs on a device without float16, and the capabilities declared follow from the same set.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import types as T
from ..ir.core import If, Instr, Kernel, Loop, walk
from ..ir.instructions import MATRIX_TENSOR_OPS, WORKGROUP_MATRIX_OPS
from ..ir.types import DType
from .compiled import push_slot_nbytes
from .features import DTYPE_FEATURES, VULKAN_NAMES, DeviceFeatures

# Shared arrays of bool have no defined size; count them as one 32-bit word per element.
_SHARED_ELEMENT_NBYTES = {"bool": 4}


def kernel_dtypes(kernel: Kernel) -> set[DType]:
    """Every scalar type a kernel touches: buffers, parameters, shared arrays and SSA values."""
    found = {b.dtype for b in kernel.buffers} | {p.dtype for p in kernel.params} | {s.dtype for s in kernel.shared}
    for stmt in walk(kernel.body):
        if isinstance(stmt, Instr):
            found.update(a.dtype for a in stmt.args)
            if stmt.result is not None:
                found.add(stmt.result.dtype)
            if stmt.op == "cm_map":  # its function's values are the kernel's too
                found.update(s.result.dtype for s in walk(stmt.attrs[0].body) if isinstance(s, Instr))
        elif isinstance(stmt, If):
            found.update(r.dtype for r in stmt.results)
        elif isinstance(stmt, Loop):
            found.add(stmt.index.dtype)
            found.update(c.dtype for c in stmt.carried)
    if any(isinstance(s, Instr) and s.op in ("f16_from_bits", "f16_to_bits") for s in walk(kernel.body)):
        found.add(T.float16)
    matrices = {t for t in found if T.is_matrix(t)}
    return (found - matrices) | {t.elem for t in matrices}


def float_widths(kernel: Kernel) -> list[int]:
    """Bit widths of the float types a kernel uses, ascending (execution modes are per width)."""
    return sorted(t.bits for t in kernel_dtypes(kernel) if t.is_float)


def required_features(kernel: Kernel, features: DeviceFeatures, by_address: frozenset[int] = frozenset()) -> set[str]:
    """Names of the ``DeviceFeatures`` fields ``kernel`` cannot run without; raise if one is missing.

    A buffer reached by address (``by_address``) needs bufferDeviceAddress, and Int64 for the
    64-bit address arithmetic.
    """
    dtypes = kernel_dtypes(kernel)
    needs: set[str] = set()
    if by_address:
        needs.update(("buffer_device_address", "int64"))
    if T.float16 in dtypes:
        needs.add("float16")
    if T.float64 in dtypes:
        needs.add("float64")
    if T.int64 in dtypes:
        needs.add("int64")
    if dtypes & {T.int16, T.uint16}:
        needs.add("int16")
    if dtypes & {T.uint8, T.int8}:
        needs.add("int8")
    if any(b.dtype in (T.float16, T.int16, T.uint16) for b in kernel.buffers):
        needs.add("storage_buffer_16bit")
    if any(b.dtype in (T.uint8, T.int8) for b in kernel.buffers):
        needs.add("storage_buffer_8bit")
    shuffles = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "shuffle_xor"]
    if shuffles:
        needs.add("subgroup_shuffle")
    if any(s.args[0].dtype in (T.float16, T.float64, T.int64) for s in shuffles):
        needs.add("subgroup_extended_types")
    matrix_ops = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op.startswith("cm_")]
    if matrix_ops:
        needs.update(("cooperative_matrix", "vulkan_memory_model"))
    if any(_is_cm2(s) for s in matrix_ops):
        needs.add("cooperative_matrix_workgroup")
    if any(s.op in WORKGROUP_MATRIX_OPS for s in matrix_ops):
        needs.add("cooperative_matrix_workgroup_ops")
    for name in sorted(needs):
        if not getattr(features, name):
            raise CompileError(
                f"kernel {kernel.name!r} needs {name} but device lacks {VULKAN_NAMES[name]}"
                + _for_dtypes(name, dtypes, kernel)
            )
    _check_subgroups(kernel, features, matrix_ops)
    for s in shuffles:
        mask = int(s.attrs[0])
        if not 0 <= mask < features.subgroup_size:
            raise CompileError(
                f"kernel {kernel.name!r}: shuffle_xor mask {mask} is not below the device's subgroup size "
                f"{features.subgroup_size}"
            )
    return needs


def _for_dtypes(feature: str, dtypes: set[DType], kernel: Kernel) -> str:
    """`` (uint8 tensors need it)``: the tensor dtypes behind a feature, for the error that names it."""
    held = {b.dtype for b in kernel.buffers} | dtypes
    names = sorted(t.name for t in held if feature in DTYPE_FEATURES.get(t.name, ()))
    if T.int16 in held and feature in DTYPE_FEATURES["bfloat16"]:
        names.append("bfloat16")  # held as int16 bits
    return f" ({' and '.join(names)} tensors need it)" if names else ""


def _check_subgroups(kernel: Kernel, features: DeviceFeatures, matrix_ops: list[Instr]) -> None:
    """A kernel written for a subgroup size runs only at that size; its matrix shapes must be the device's."""
    uses_subgroups = matrix_ops or any(isinstance(s, Instr) and s.op == "subgroup_id" for s in walk(kernel.body))
    if uses_subgroups and kernel.subgroup_size != features.subgroup_size:
        raise CompileError(
            f"kernel {kernel.name!r} is written for subgroups of {kernel.subgroup_size}, the device's are "
            f"{features.subgroup_size}"
        )
    if matrix_ops and tuple(features.spirv_version) < (1, 6):
        # Below SPIR-V 1.6 a cooperative-matrix pipeline needs the full-subgroups flag (reference/vulkan.md).
        raise CompileError(f"kernel {kernel.name!r} uses cooperative matrices, which vkml emits as SPIR-V 1.6 only")
    invocations = kernel.local_size[0] * kernel.local_size[1] * kernel.local_size[2]
    for s in matrix_ops:
        if s.op == "cm_mul_add" and s.args[0].dtype.scope == "workgroup":
            a, b, c = (v.dtype for v in s.args)
            if not features.has_flexible_shape(a.rows, c.cols, a.cols, invocations, a.elem.name, c.elem.name):
                raise CompileError(
                    f"kernel {kernel.name!r}: the device lists no workgroup-scope shape that {a.rows}x{c.cols}x"
                    f"{a.cols} {a.elem.name} -> {c.elem.name} is a multiple of, for {invocations} invocations"
                )
        elif s.op == "cm_mul_add":
            a, b, c = (v.dtype for v in s.args)
            if not features.has_matrix_shape(a.rows, c.cols, a.cols, a.elem.name, c.elem.name):
                raise CompileError(
                    f"kernel {kernel.name!r}: the device lists no cooperative-matrix shape "
                    f"{a.rows}x{c.cols}x{a.cols} {a.elem.name} -> {c.elem.name} at subgroup scope"
                )


def _is_cm2(stmt: Instr) -> bool:
    """Whether a matrix instruction needs VK_NV_cooperative_matrix2: a tensor access or a workgroup-scope matrix."""
    values = (*stmt.args, *([stmt.result] if stmt.result is not None else []))
    workgroup = any(T.is_matrix(v.dtype) and v.dtype.scope == "workgroup" for v in values)
    return workgroup or stmt.op in MATRIX_TENSOR_OPS


def float_control_features(kernel: Kernel, features: DeviceFeatures) -> list[tuple[str, str, int]]:
    """``(feature field, execution mode, width)`` for each float-control mode the kernel declares.

    RoundingModeRTE and SignedZeroInfNanPreserve are declared for every float width the kernel
    uses where the device supports them, DenormPreserve likewise (reference/vulkan.md: without
    them a driver may round either way and flush subnormals).
    """
    modes = []
    for width in float_widths(kernel):
        for field, mode in (
            (f"rte_float{width}", "RoundingModeRTE"),
            (f"signed_zero_inf_nan_float{width}", "SignedZeroInfNanPreserve"),
            (f"denorm_preserve_float{width}", "DenormPreserve"),
        ):
            if getattr(features, field):
                modes.append((field, mode, width))
    return modes


def check_limits(kernel: Kernel, features: DeviceFeatures, by_address: frozenset[int] = frozenset()) -> None:
    """Raise CompileError when the kernel's workgroup, shared memory or parameters exceed the device."""
    outside = sorted(b for b in by_address if not 0 <= b < len(kernel.buffers))
    if outside:
        raise CompileError(
            f"kernel {kernel.name!r}: by_address names binding(s) {outside}, the kernel has {len(kernel.buffers)} buffers"
        )
    size = tuple(kernel.local_size)
    if any(s < 1 for s in size):
        raise CompileError(f"kernel {kernel.name!r}: local size {size} has a dimension below 1")
    over = [f"{s} > {m}" for s, m in zip(size, features.max_workgroup_size) if s > m]
    if over:
        raise CompileError(
            f"kernel {kernel.name!r}: local size {size} exceeds maxComputeWorkGroupSize "
            f"{features.max_workgroup_size} ({', '.join(over)})"
        )
    invocations = size[0] * size[1] * size[2]
    if invocations > features.max_workgroup_invocations:
        raise CompileError(
            f"kernel {kernel.name!r}: {invocations} invocations per workgroup exceed "
            f"maxComputeWorkGroupInvocations {features.max_workgroup_invocations}"
        )
    shared = sum(s.size * _SHARED_ELEMENT_NBYTES.get(s.dtype.name, s.dtype.nbytes) for s in kernel.shared)
    if shared > features.max_compute_shared_memory_size:
        raise CompileError(
            f"kernel {kernel.name!r}: {shared} bytes of shared memory exceed maxComputeSharedMemorySize "
            f"{features.max_compute_shared_memory_size}"
        )
    push = 0
    for p in kernel.params:
        slot = push_slot_nbytes(p.dtype)
        push = -(-push // slot) * slot + slot
    if by_address:  # one 8-byte aligned uint64 address per buffer, after the parameters
        push = -(-push // 8) * 8 + 8 * len(by_address)
    if push > features.max_push_constants_size:
        what = "parameters and buffer addresses" if by_address else "parameters"
        raise CompileError(
            f"kernel {kernel.name!r}: {push} bytes of {what} exceed maxPushConstantsSize "
            f"{features.max_push_constants_size}"
        )
    if any(s.size < 1 for s in kernel.shared):
        raise CompileError(f"kernel {kernel.name!r}: a shared array needs at least one element")
