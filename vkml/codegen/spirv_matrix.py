"""Cooperative matrices for the SPIR-V emitter (SPV_KHR_cooperative_matrix), and ``subgroup_id``.

A kernel that uses them is emitted under the Vulkan memory model (``OpMemoryModel Logical
Vulkan``), as the H200 needed (reference/vulkan.md). There an access takes part in
synchronisation between invocations only when it is non-private, so every shared-memory
access is marked ``NonPrivatePointer`` and every barrier also makes workgroup memory available
and visible (``MakeAvailable | MakeVisible``): a matrix stored to shared memory is seen by the
scalar loads after the barrier, and vice versa. Matrix types have
subgroup scope; strides count elements of the shared array (its vectors, where ``shared_vstore``
makes it an array of vectors of four: matrices there start on whole vectors).

    %v7 = OpCooperativeMatrixLoadKHR %cm_a_half_16x16 %t3_a_tile_at %uint_0 %uint_40
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.core import Instr
from ..ir.instructions import VECTOR_WIDTH
from .spirv_memory import sanitize

_LAYOUTS = {"row": 0, "col": 1}  # RowMajorKHR, ColumnMajorKHR


class MatrixEmitter:
    """Mixed into the function emitter: the ``cm_*`` instructions and ``subgroup_id``."""

    def _emit_subgroup_id(self, ins: Instr) -> None:
        self.mod.capability("GroupNonUniform")
        variable = self.mod.builtin_input("SubgroupId", scalar=True)
        self.op("OpLoad", self.result_id(ins.result), self.mod.scalar(T.uint32), variable)

    def _emit_cm_fill(self, ins: Instr) -> None:
        mtype = self.mod.matrix(ins.result.dtype)
        self.op("OpCompositeConstruct", self.result_id(ins.result), mtype, self.use(ins.args[0]))

    def _emit_cm_mul_add(self, ins: Instr) -> None:
        a, b, c = (self.use(v) for v in ins.args)
        self.op("OpCooperativeMatrixMulAddKHR", self.result_id(ins.result), self.mod.matrix(ins.result.dtype), a, b, c)

    def _matrix_pointer(self, ins: Instr) -> tuple[str, str, str]:
        """The pointer to the matrix's first element, and the layout and stride ids."""
        name, stride, layout = ins.attrs
        elem = self.kernel.shared_array(name).dtype
        pointer = self.temp(f"{sanitize(name)}_at")
        if name in self.vector_shared:
            # An array of vectors: the pointer is to the vector the matrix starts at (its index a multiple
            # of 4), and the stride counts vectors (the pointee type), as SPV_KHR_cooperative_matrix says.
            vector = self.vector_of(ins.args[0])
            ptr_type = self.mod.pointer("Workgroup", self.mod.vector(elem, VECTOR_WIDTH))
            self.op("OpAccessChain", pointer, ptr_type, self.shared_vars[name], vector)
            return pointer, self.mod.uint(_LAYOUTS[layout]), self.mod.uint(stride // VECTOR_WIDTH)
        ptr_type = self.mod.pointer("Workgroup", self.mod.scalar(elem))
        self.op("OpAccessChain", pointer, ptr_type, self.shared_vars[name], self.use(ins.args[0]))
        return pointer, self.mod.uint(_LAYOUTS[layout]), self.mod.uint(stride)

    def _emit_cm_shared_load(self, ins: Instr) -> None:
        pointer, layout, stride = self._matrix_pointer(ins)
        mtype = self.mod.matrix(ins.result.dtype)
        access = self.shared_access()
        self.op("OpCooperativeMatrixLoadKHR", self.result_id(ins.result), mtype, pointer, layout, stride, *access)

    def _emit_cm_shared_store(self, ins: Instr) -> None:
        pointer, layout, stride = self._matrix_pointer(ins)
        words = ("OpCooperativeMatrixStoreKHR", pointer, self.use(ins.args[1]), layout, stride, *self.shared_access())
        self.emit(" ".join(words))
