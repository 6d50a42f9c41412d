"""Cooperative matrices for the SPIR-V emitter (SPV_KHR_cooperative_matrix), and ``subgroup_id``.

A kernel that uses them is emitted under the Vulkan memory model (``OpMemoryModel Logical
Vulkan``), as NVIDIA's driver needs (reference/vulkan.md). There an access takes part in
synchronisation between invocations only when it is non-private, so every shared-memory
access is marked ``NonPrivatePointer`` and every barrier also makes workgroup memory available
and visible (``MakeAvailable | MakeVisible``): a matrix stored to shared memory is seen by the
scalar loads after the barrier, and vice versa. Matrix types have
subgroup scope; strides count elements of the shared array (its vectors, where ``shared_vstore``
makes it an array of vectors of four: matrices there start on whole vectors).

    %v7 = OpCooperativeMatrixLoadKHR %cm_a_half_16x16 %t3_a_tile_at %uint_0 %uint_40

Workgroup-scope matrices and ``cm_tensor_load`` / ``cm_tensor_store`` are SPV_NV_cooperative_matrix2
with SPV_NV_tensor_addressing, as extra/proto_coopmat2.py measured them: a 2-D tensor layout of
the buffer's rows × cols, sliced at the block (clamp mode Constant where the IR says ``clamp``:
the driver reads 0 outside and drops stores there), and the load or store straight from the
storage buffer's first element. An f32 matrix stored into an f16 buffer is converted with
OpFConvert, which rounds to nearest even under the RoundingModeRTE 16 every f16 kernel declares.
"""

from __future__ import annotations

from ..errors import CompileError
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

    def _tensor_slice(self, ins: Instr, mtype: T.MatrixType) -> tuple[str, str]:
        """The buffer's first element and the tensor layout sliced at the instruction's block.

        Only the slice depends on the block's position; the pointer and the sized layout depend on
        the buffer and the instruction's constant attributes alone, so they are defined once at the
        kernel's start (``at_entry``), as extra/proto_coopmat2.py does. Made at every load, they were
        the one difference in the K loop between the prototype and the template's kernel; now a
        K-step costs the prototype's instructions.
        """
        name, rows, cols, edge = ins.attrs
        binding = next(i for i, b in enumerate(self.kernel.buffers) if b.name == name)
        if binding not in self.buffer_vars:
            raise CompileError(f"{ins.op} of buffer {name!r}: a buffer reached by address has no tensor loads")
        dtype = self.kernel.buffers[binding].dtype
        ptr_type = self.mod.pointer("StorageBuffer", self.mod.scalar(dtype))
        zero = self.mod.uint(0)

        def first_element() -> str:
            self.emit(f"; the first element of {name}, for its tensor loads and stores")
            pointer = self.temp(f"{sanitize(name)}_start")
            return self.op("OpAccessChain", pointer, ptr_type, self.buffer_vars[binding], zero, zero)

        clamp = edge == "clamp"
        layout_type = self.mod.tensor_layout(clamp)

        def created() -> str:
            return self.op("OpCreateTensorLayoutNV", self.temp("layout"), layout_type)

        def sized() -> str:
            self.emit(f"; the tensor layout of {rows} x {cols} elements ({edge})")
            layout = self.at_entry(("tensor layout", clamp), created)
            dims = (self.mod.uint(rows), self.mod.uint(cols))
            return self.op(
                "OpTensorLayoutSetDimensionNV", self.temp(f"layout_{rows}x{cols}"), layout_type, layout, *dims
            )

        pointer = self.at_entry(("buffer start", binding), first_element)
        layout = self.at_entry(("tensor layout", clamp, rows, cols), sized)
        row0, col0 = (self.use(v) for v in ins.args[:2])
        extent_r, extent_c = self.mod.uint(mtype.rows), self.mod.uint(mtype.cols)
        block = self.op(
            "OpTensorLayoutSliceNV", self.temp("block"), layout_type, layout, row0, extent_r, col0, extent_c
        )
        return pointer, block

    def _emit_cm_tensor_load(self, ins: Instr) -> None:
        mtype = ins.result.dtype
        pointer, block = self._tensor_slice(ins, mtype)
        matrix = self.mod.matrix(mtype)
        undef = self.mod.define(f"%undef_{matrix[1:]}", f"OpUndef {matrix}")  # kept where a view clips: none does
        words = (matrix, pointer, undef, block, "None", "None")
        self.op("OpCooperativeMatrixLoadTensorNV", self.result_id(ins.result), *words)

    def _tensor_view(self, permuted: bool) -> tuple[str, str]:
        """A 2-D tensor view type (``permuted``: dimensions (1, 0)) and a view of it made at the kernel's start."""
        false = self.mod.constant(T.bool_, False)
        order = (self.mod.uint(1), self.mod.uint(0)) if permuted else (self.mod.uint(0), self.mod.uint(1))
        name = "%tensor_view_transposed" if permuted else "%tensor_view"
        view_type = self.mod.define(name, f"OpTypeTensorViewNV {self.mod.uint(2)} {false} {' '.join(order)}")
        view = self.at_entry(
            ("tensor view", permuted), lambda: self.op("OpCreateTensorViewNV", self.temp("view"), view_type)
        )
        return view_type, view

    def _emit_cm_tensor_load_transposed(self, ins: Instr) -> None:
        mtype = ins.result.dtype  # the tensor's block is mtype.cols rows by mtype.rows columns
        pointer, block = self._tensor_slice(ins, T.matrix_type(mtype.elem, mtype.cols, mtype.rows, "acc", mtype.scope))
        matrix = self.mod.matrix(mtype)
        undef = self.mod.define(f"%undef_{matrix[1:]}", f"OpUndef {matrix}")
        _, view = self._tensor_view(permuted=True)
        words = (matrix, pointer, undef, block, "None", "TensorView", view)
        self.op("OpCooperativeMatrixLoadTensorNV", self.result_id(ins.result), *words)

    def _emit_cm_tensor_store_rows(self, ins: Instr) -> None:
        mtype = ins.args[2].dtype
        pointer, block = self._tensor_slice(ins, mtype)
        value = self.use(ins.args[2])
        stored = self.kernel.buffer(ins.attrs[0]).dtype
        if stored is not mtype.elem:  # f32 -> f16, rounded to nearest even (RoundingModeRTE 16)
            value = self.op("OpFConvert", self.temp("narrowed"), self.mod.matrix(mtype.like(stored)), value)
        view_type, view = self._tensor_view(permuted=False)
        zero, kept, cols = self.mod.uint(0), self.use(ins.args[3]), self.mod.uint(mtype.cols)
        clipped = self.op("OpTensorViewSetClipNV", self.temp("clipped"), view_type, view, zero, kept, zero, cols)
        self.emit(" ".join(("OpCooperativeMatrixStoreTensorNV", pointer, value, block, "None", "TensorView", clipped)))

    # ------------------------------------------------------------ workgroup-scope arithmetic (cm2)

    def _emit_cm_reduce_rows(self, ins: Instr) -> None:
        self.mod.capability("CooperativeMatrixReductionsNV")
        combine = self._combine_function(ins.attrs[0])
        words = (self.use(ins.args[0]), "Row", combine)
        self.op("OpCooperativeMatrixReduceNV", self.result_id(ins.result), self.mod.matrix(ins.result.dtype), *words)

    def _combine_function(self, combine: str) -> str:
        """``%combine_max`` / ``%combine_add`` on two f32 values, as the interpreter's ``reduce_rows`` combines."""
        name = f"%combine_{combine}"
        if name in self.mod._defined:
            return name
        self.mod._defined.add(name)
        f32, boolean = self.mod.scalar(T.float32), self.mod.scalar(T.bool_)
        a, b, start = f"{name}_a", f"{name}_b", f"{name}_start"
        lines = [
            f"{name} = OpFunction {f32} None {self.mod.function_type(f32, f32, f32)}",
            f"{a} = OpFunctionParameter {f32}",
            f"{b} = OpFunctionParameter {f32}",
            f"{start} = OpLabel",
        ]
        if combine == "add":
            lines.append(f"        {name}_sum = OpFAdd {f32} {a} {b}")
            self.mod.decorate(f"{name}_sum", "NoContraction")
            result = f"{name}_sum"
        else:  # a where a > b or a is NaN, else b: NaN propagates from either side
            lines += [
                f"        {name}_greater = OpFOrdGreaterThan {boolean} {a} {b}",
                f"        {name}_nan = OpIsNan {boolean} {a}",
                f"        {name}_take = OpLogicalOr {boolean} {name}_greater {name}_nan",
                f"        {name}_max = OpSelect {f32} {name}_take {a} {b}",
            ]
            result = f"{name}_max"
        self.mod.functions += [*lines, f"        OpReturnValue {result}", "OpFunctionEnd"]
        return name

    def _emit_elementwise(self, ins: Instr, opcode: str) -> None:
        a, b = (self.use(v) for v in ins.args)
        self.op(opcode, self.result_id(ins.result), self.mod.matrix(ins.result.dtype), a, b)
        self.mod.decorate(self.ids[id(ins.result)], "NoContraction")

    def _emit_cm_add(self, ins: Instr) -> None:
        self._emit_elementwise(ins, "OpFAdd")

    def _emit_cm_sub(self, ins: Instr) -> None:
        self._emit_elementwise(ins, "OpFSub")

    def _emit_cm_mul(self, ins: Instr) -> None:
        self._emit_elementwise(ins, "OpFMul")

    def _emit_cm_scale(self, ins: Instr) -> None:
        self._emit_elementwise(ins, "OpMatrixTimesScalar")

    def _emit_cm_convert(self, ins: Instr) -> None:
        source, target = ins.args[0].dtype, ins.result.dtype
        if source.use != target.use:
            self.mod.capability("CooperativeMatrixConversionsNV")
        self.op("OpFConvert", self.result_id(ins.result), self.mod.matrix(target), self.use(ins.args[0]))

    def _emit_cm_map(self, ins: Instr) -> None:
        """OpCooperativeMatrixPerElementOpNV calling the IR function, emitted as a SPIR-V function of its own."""
        self.mod.capability("CooperativeMatrixPerElementOperationsNV")
        fn = ins.attrs[0]
        function = self.temp("element_function")
        result_type = self.mod.scalar(fn.result_type)
        param_types = [self.mod.scalar(t) for t in fn.param_types]
        main_lines, main_label = self.lines, self.label
        self.lines = [f"{function} = OpFunction {result_type} None {self.mod.function_type(result_type, *param_types)}"]
        for param, kind in zip(fn.params, param_types):
            self.lines.append(f"{self.result_id(param)} = OpFunctionParameter {kind}")
        try:
            self.start_block(self.temp("element_start"))
            self.emit_block(fn.body)
            self.emit(f"OpReturnValue {self.use(fn.body.yields[0])}")
            self.lines.append("OpFunctionEnd")
            self.mod.functions += self.lines
        finally:
            self.lines, self.label = main_lines, main_label
        matrix, *operands = (self.use(v) for v in ins.args)
        mtype = self.mod.matrix(ins.result.dtype)
        self.op("OpCooperativeMatrixPerElementOpNV", self.result_id(ins.result), mtype, matrix, function, *operands)

    def _emit_cm_tensor_store(self, ins: Instr) -> None:
        mtype = ins.args[2].dtype
        pointer, block = self._tensor_slice(ins, mtype)
        value = self.use(ins.args[2])
        stored = self.kernel.buffer(ins.attrs[0]).dtype
        if stored is not mtype.elem:  # f32 -> f16, rounded to nearest even (RoundingModeRTE 16)
            value = self.op("OpFConvert", self.temp("narrowed"), self.mod.matrix(mtype.like(stored)), value)
        self.emit(" ".join(("OpCooperativeMatrixStoreTensorNV", pointer, value, block, "None", "None")))

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
