"""Kernel IR -> annotated SPIR-V assembly, and the compile entry point (assemble + validate + cache).

    asm = emit_spirv(kernel, DeviceFeatures.lavapipe_like())
    ck = compile_kernel(kernel, DeviceFeatures.lavapipe_like())

The emitter walks the kernel's structured IR once. Pure instructions go through the table in
``spirv_ops``; control flow becomes SPIR-V structured control flow (``If``: OpSelectionMerge
+ OpPhi in the merge block; ``Loop``: a header with OpPhi for the index and carried values and
OpLoopMerge, then body, continue block and merge). Each IR statement is preceded by a ``;``
comment quoting it, with values numbered as in the IR text.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from ..errors import CompileError, IRError
from ..ir import lru
from ..ir import types as T
from ..ir.core import Block, BufferDecl, If, Instr, Kernel, Loop, SharedDecl, Value, structure, walk
from ..ir.instructions import VECTOR_WIDTH
from ..ir.text import ValueNames, format_statement
from ..ir.types import DType
from ..ir.verify import verify_kernel
from . import spirv_compare, tools
from .compiled import CompiledKernel, push_slot_nbytes
from .features import DeviceFeatures
from .spirv_matrix import MatrixEmitter
from .spirv_memory import MemoryEmitter, sanitize
from .spirv_module import ModuleBuilder
from .spirv_ops import NO_CONTRACTION, OPCODES, convert_opcode, opcode
from .spirv_requirements import check_limits, float_control_features, required_features

_BUILTINS = {
    "global_id": "GlobalInvocationId",
    "local_id": "LocalInvocationId",
    "workgroup_id": "WorkgroupId",
    "num_workgroups": "NumWorkgroups",
}
_SCOPE_SUBGROUP = 3
_SCOPE_WORKGROUP = 2
_SEMANTICS_ACQUIRE_RELEASE_WORKGROUP_MEMORY = 0x8 | 0x100
_SEMANTICS_MAKE_AVAILABLE_VISIBLE = 0x2000 | 0x4000  # under the Vulkan memory model (spirv_matrix)


def push_layout(kernel: Kernel) -> tuple[list[tuple[str, DType, int]], int]:
    """``(name, dtype, offset)`` of each parameter in the push-constant block, and the block size.

    >>> push_layout(kernel)   # doctest: +SKIP
    ([('n', vkml.uint32, 0), ('big', vkml.int64, 8)], 16)
    """
    layout, offset = [], 0
    for p in kernel.params:
        slot = push_slot_nbytes(p.dtype)
        offset = -(-offset // slot) * slot
        layout.append((p.name, p.dtype, offset))
        offset += slot
    return layout, -(-offset // 4) * 4


def address_layout(kernel: Kernel, by_address: frozenset[int]) -> tuple[list[tuple[int, int]], int]:
    """``(binding, offset)`` of each buffer device address in the push-constant block, and the block size.

    The addresses follow the parameters, 8-byte aligned, in binding order.

    >>> address_layout(kernel, frozenset({0}))   # doctest: +SKIP
    ([(0, 8)], 16)
    """
    _, size = push_layout(kernel)
    if not by_address:
        return [], size
    start = -(-size // 8) * 8
    slots = [(binding, start + 8 * i) for i, binding in enumerate(sorted(by_address))]
    return slots, start + 8 * len(slots)


class _FunctionEmitter(MemoryEmitter, MatrixEmitter):
    """Emits the body of one kernel's entry point into ``self.lines``."""

    def __init__(self, kernel: Kernel, module: ModuleBuilder, by_address: frozenset[int] = frozenset()):
        self.kernel = kernel
        self.mod = module
        self.address_slots, _ = address_layout(kernel, by_address)
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}  # id(Value) -> SPIR-V id
        self.ir_name = ValueNames(kernel)  # '%5', or '%n' for a parameter, as in the IR text
        self.label = "%entry"
        self.bits_compare = False  # float32 comparisons on the bits (devices that may flush subnormals)
        self.vulkan_memory_model = False  # OpMemoryModel ... Vulkan: barriers make memory available/visible
        self._labels = 0
        self._temps = 0
        self._entry_lines: list[str] = []  # what ``at_entry`` defines, spliced in where the body starts
        self._entry_values: dict[tuple, str] = {}
        # binding -> its StorageBuffer variable, or (by address) the pointer loaded at entry
        self.buffer_vars = {i: self._declare_buffer(i, b) for i, b in enumerate(kernel.buffers) if i not in by_address}
        self.buffer_bases: dict[int, str] = {}
        self.vector_vars: dict[int, str] = {}  # binding -> its vector view (declared on first vload/vstore)
        self._loaded_vectors: list[dict] = []  # per open block: (binding, index id) -> the vector loaded there
        self.vector_shared = kernel.vector_shared()  # shared arrays held as vectors of VECTOR_WIDTH
        self.shared_vars = {s.name: self._declare_shared(i, s) for i, s in enumerate(kernel.shared)}
        self.params_var = self._declare_params() if kernel.params or by_address else None

    # ------------------------------------------------------------ declarations

    def _declare_buffer(self, binding: int, decl: BufferDecl) -> str:
        storage = T.uint32 if decl.dtype is T.bool_ else decl.dtype  # bools travel as one uint32 each
        struct = self.mod.buffer_struct(storage)
        var = self.mod.variable(
            f"%buf{binding}_{sanitize(decl.name)}", self.mod.pointer("StorageBuffer", struct), "StorageBuffer"
        )
        self.mod.name(var, decl.name)
        self.mod.decorate(var, "DescriptorSet", 0)
        self.mod.decorate(var, "Binding", binding)
        if decl.access == "read":
            self.mod.decorate(var, "NonWritable")
        elif decl.access == "write":
            self.mod.decorate(var, "NonReadable")
        return var

    def _declare_shared(self, index: int, decl: SharedDecl) -> str:
        if decl.name in self.vector_shared:  # shared_vstore writes it: one wide store per vector
            array = self.mod.workgroup_vector_array(decl.dtype, VECTOR_WIDTH, decl.size // VECTOR_WIDTH)
        else:
            array = self.mod.workgroup_array(decl.dtype, decl.size)
        var = self.mod.variable(
            f"%shared{index}_{sanitize(decl.name)}", self.mod.pointer("Workgroup", array), "Workgroup"
        )
        self.mod.name(var, decl.name)
        return var

    def _address_type(self, binding: int) -> str:
        """``PhysicalStorageBuffer`` pointer to the buffer's Block struct (the type of its address)."""
        decl = self.kernel.buffers[binding]
        struct = self.mod.buffer_struct(T.uint32 if decl.dtype is T.bool_ else decl.dtype)
        return self.mod.pointer("PhysicalStorageBuffer", struct)

    def _declare_params(self) -> str:
        layout, _ = push_layout(self.kernel)
        members = [self.mod.scalar(_push_slot_type(dtype)) for _, dtype, _ in layout]
        members += [self._address_type(binding) for binding, _ in self.address_slots]
        struct = self.mod.define("%Params", f"OpTypeStruct {' '.join(members)}")
        self.mod.decorate(struct, "Block")
        offsets = [(name, offset) for name, _, offset in layout]
        offsets += [(f"{self.kernel.buffers[b].name}.address", offset) for b, offset in self.address_slots]
        for i, (name, offset) in enumerate(offsets):
            self.mod.member_decorate(struct, i, "Offset", offset)
            self.mod.names.append(f'OpMemberName %Params {i} "{name}"')
        var = self.mod.variable("%params", self.mod.pointer("PushConstant", struct), "PushConstant")
        self.mod.name(var, "params")
        return var

    # ------------------------------------------------------------ helpers

    def emit(self, line: str) -> None:
        self.lines.append(line if line.endswith("= OpLabel") else f"        {line}")

    def temp(self, hint: str) -> str:
        self._temps += 1
        return f"%t{self._temps}_{hint}"

    def new_labels(self, prefix: str, *parts: str) -> list[str]:
        self._labels += 1
        return [f"%{prefix}{self._labels}_{p}" for p in parts]

    def start_block(self, label: str) -> None:
        self.emit(f"{label} = OpLabel")
        self.label = label

    def at_entry(self, key: tuple, make) -> str:
        """The id ``make()`` emits, emitted once for the whole kernel at the start of its entry block.

        For values that depend on constants and global variables alone (a tensor layout, a buffer's first
        element): the entry block dominates every block, so one definition serves every use, and a
        use inside a loop costs no instruction per iteration. ``key`` names the value.
        """
        found = self._entry_values.get(key)
        if found is None:
            body, self.lines = self.lines, self._entry_lines
            try:
                found = self._entry_values[key] = make()
            finally:
                self.lines = body
        return found

    def use(self, v: Value) -> str:
        try:
            return self.ids[id(v)]
        except KeyError:
            raise CompileError(f"kernel {self.kernel.name!r}: value {v!r} is used but never defined") from None

    def result_id(self, v: Value) -> str:
        """Define ``v``'s SPIR-V id: ``%v5`` for the IR's ``%5``, ``%p_n`` for parameter ``%n``."""
        ir_name = self.ir_name(v)[1:]
        id_ = f"%v{ir_name}" if ir_name[0].isdigit() else f"%p_{sanitize(ir_name)}"
        self.ids[id(v)] = id_
        self.mod.name(id_, v.hint or id_[1:])
        return id_

    def op(self, opcode_: str, result: str, type_id: str, *operands: str) -> str:
        if opcode_.startswith("Op"):
            self.emit(f"{result} = {opcode_} {type_id} {' '.join(operands)}")
        else:
            self.mod.uses_glsl_std = True
            self.emit(f"{result} = OpExtInst {type_id} %glsl {opcode_} {' '.join(operands)}")
        if opcode_ in NO_CONTRACTION:
            self.mod.decorate(result, "NoContraction")
        return result

    def describe(self, stmt) -> str:
        """The IR statement as a one-line comment, in the IR text's syntax and numbering."""
        return f"; {format_statement(stmt, self.ir_name)}"

    # ------------------------------------------------------------ the body

    def emit_function(self) -> None:
        self.start_block("%entry")
        layout, _ = push_layout(self.kernel)
        for i, (p, (_, dtype, _)) in enumerate(zip(self.kernel.params, layout)):
            self.emit(f"; param {self.ir_name(p.value)}: {dtype.short}")
            slot = _push_slot_type(dtype)
            pointer = self.temp(f"{sanitize(p.name)}_ptr")
            self.op(
                "OpAccessChain",
                pointer,
                self.mod.pointer("PushConstant", self.mod.scalar(slot)),
                self.params_var,
                self.mod.uint(i),
            )
            loaded = self.op(
                "OpLoad",
                self.temp(sanitize(p.name)) if slot is not dtype else self.result_id(p.value),
                self.mod.scalar(slot),
                pointer,
            )
            if dtype is T.bool_:
                self.op("OpINotEqual", self.result_id(p.value), self.mod.scalar(T.bool_), loaded, self.mod.uint(0))
            elif dtype is T.float16:
                self._f16_from_bits(self.result_id(p.value), loaded)
        for member, (binding, _) in enumerate(self.address_slots, start=len(self.kernel.params)):
            name = sanitize(self.kernel.buffers[binding].name)
            self.emit(f"; buffer {self.kernel.buffers[binding].name} (binding {binding}) by device address")
            address_type = self._address_type(binding)
            slot = self.op(
                "OpAccessChain",
                self.temp(f"{name}_address_ptr"),
                self.mod.pointer("PushConstant", address_type),
                self.params_var,
                self.mod.uint(member),
            )
            self.buffer_bases[binding] = self.op("OpLoad", self.temp(f"{name}_base"), address_type, slot)
        body_starts = len(self.lines)
        self.emit_block(self.kernel.body)
        self.emit("OpReturn")
        # Spliced in only now: emit_loop fills in lines by their index while the body is emitted.
        self.lines[body_starts:body_starts] = self._entry_lines

    def emit_block(self, block: Block) -> None:
        # A vector loaded in this block (or an enclosing one) dominates the rest of it: reuse it.
        self._loaded_vectors.append({})
        for stmt in block.body:
            self.emit(self.describe(stmt))
            if isinstance(stmt, Instr):
                self.emit_instr(stmt)
            elif isinstance(stmt, If):
                self.emit_if(stmt)
            else:
                self.emit_loop(stmt)
        self._loaded_vectors.pop()

    def emit_instr(self, ins: Instr) -> None:
        if ins.op == "const":
            self.ids[id(ins.result)] = self.mod.constant(ins.result.dtype, ins.attrs[0])
            return
        if ins.op in _BUILTINS:
            vec = self.temp(_BUILTINS[ins.op])
            self.op("OpLoad", vec, self.mod.vector(T.uint32, 3), self.mod.builtin_input(_BUILTINS[ins.op]))
            self.op("OpCompositeExtract", self.result_id(ins.result), self.mod.scalar(T.uint32), vec, str(ins.attrs[0]))
            return
        if self.bits_compare and spirv_compare.wanted(ins):
            spirv_compare.emit(self, ins)
            return
        if ins.op == "irem" and ins.result.dtype.is_signed:
            spirv_compare.emit_signed_irem(self, ins)
            return
        handler = getattr(self, f"_emit_{ins.op}", None)
        if handler is not None:
            handler(ins)
            return
        self._emit_by_opcode(ins)

    def _emit_by_opcode(self, ins: Instr) -> None:
        if ins.op not in OPCODES:
            raise CompileError(f"kernel {self.kernel.name!r}: no SPIR-V lowering for IR instruction {ins.op!r}")
        kind_of = ins.args[1] if ins.op == "select" else ins.args[0]
        result_type = self.mod.scalar(ins.result.dtype)
        self.op(
            opcode(ins.op, kind_of.dtype), self.result_id(ins.result), result_type, *(self.use(a) for a in ins.args)
        )

    # ------------------------------------------------------------ special instructions

    # Float64 Trunc and RoundEven are built from Floor and Ceil: Mesa's lavapipe 22.3 (seen on an AMD
    # EPYC host) returns every |x| >= 2^31 unrounded and drops the sign of a zero result, while its Floor
    # and Ceil are right. The same results as the instructions on every correct driver.
    def _emit_trunc(self, ins: Instr) -> None:
        if ins.result.dtype is not T.float64:
            return self._emit_by_opcode(ins)
        x = self.use(ins.args[0])
        self._toward_zero(x, self.op("Floor", self.temp("floor"), self.mod.scalar(T.float64), x), ins.result)

    def _toward_zero(self, x: str, floor_x: str, result: Value | None = None) -> str:
        """Float64 trunc(x) as ceil(x) below zero, else ``floor_x`` (the signs of zeros kept)."""
        f64 = self.mod.scalar(T.float64)
        zero = self.mod.constant(T.float64, 0.0)
        negative = self.op("OpFOrdLessThan", self.temp("neg"), self.mod.scalar(T.bool_), x, zero)
        up = self.op("Ceil", self.temp("ceil"), f64, x)
        out = self.result_id(result) if result is not None else self.temp("tz")
        return self.op("OpSelect", out, f64, negative, up, floor_x)

    def _emit_round_even(self, ins: Instr) -> None:
        """Float64: x - floor(x) is exact, so the tie test is exact."""
        if ins.result.dtype is not T.float64:
            return self._emit_by_opcode(ins)
        f64, b, x = self.mod.scalar(T.float64), self.mod.scalar(T.bool_), self.use(ins.args[0])
        zero, half, one = (self.mod.constant(T.float64, v) for v in (0.0, 0.5, 1.0))
        low = self.op("Floor", self.temp("floor"), f64, x)
        high = self.op("OpFAdd", self.temp("up"), f64, low, one)
        part = self.op("OpFSub", self.temp("frac"), f64, x, low)
        halved = self.op("OpFMul", self.temp("half"), f64, low, half)
        even = self.op("OpFOrdEqual", self.temp("even"), b, halved, self.op("Floor", self.temp("hfloor"), f64, halved))
        nearest = self.op("OpSelect", self.temp("tie"), f64, even, low, high)
        above = self.op("OpFOrdGreaterThan", self.temp("above"), b, part, half)
        nearest = self.op("OpSelect", self.temp("nearest"), f64, above, high, nearest)
        below = self.op("OpFOrdLessThan", self.temp("below"), b, part, half)
        nearest = self.op("OpSelect", self.temp("nearest"), f64, below, low, nearest)
        # A zero result takes x's sign: ceil(x) for x in [-0.5, 0), floor(x) for x in [-0, 0.5] (not x·0,
        # which a driver may fold to +0 where float64's signed zeros are not preserved).
        toward_zero = self._toward_zero(x, low)
        is_zero = self.op("OpFOrdEqual", self.temp("zero"), b, nearest, zero)
        self.op("OpSelect", self.result_id(ins.result), f64, is_zero, toward_zero, nearest)

    def _emit_convert(self, ins: Instr) -> None:
        src, dst = ins.args[0].dtype, ins.result.dtype
        if self.bits_compare and src is T.float32 and dst is T.float64:
            self._emit_exact_f32_to_f64(ins)
            return
        opcode_ = convert_opcode(src, dst)
        if opcode_ == "OpUConvert" and dst.is_signed:  # OpUConvert must produce an unsigned type
            wide = self.op(opcode_, self.temp("zero_extended"), self.mod.unsigned(dst.bits), self.use(ins.args[0]))
            self.op("OpBitcast", self.result_id(ins.result), self.mod.scalar(dst), wide)
            return
        self.op(opcode_, self.result_id(ins.result), self.mod.scalar(dst), self.use(ins.args[0]))

    def _emit_exact_f32_to_f64(self, ins: Instr) -> None:
        """float32 -> float64 on a device that may flush float32 subnormals (no DenormPreserve 32):
        NVIDIA's OpFConvert turns 1e-45 into 0.0, while the IR's convert is exact. A subnormal or
        zero converts through its integer significand, m * 2^-149 (exact in float64), signed by
        the sign bit; every other value through OpFConvert."""
        x, mod = self.use(ins.args[0]), self.mod
        u32, f64, boolean = mod.scalar(T.uint32), mod.scalar(T.float64), mod.scalar(T.bool_)
        bits = self.op("OpBitcast", self.temp("bits"), u32, x)
        magnitude = self.op("OpBitwiseAnd", self.temp("magnitude"), u32, bits, mod.uint(0x7FFFFFFF))
        significand = self.op("OpConvertUToF", self.temp("significand"), f64, magnitude)
        tiny = self.op("OpFMul", self.temp("tiny"), f64, significand, mod.constant(T.float64, 2.0**-149))
        self.mod.decorate(tiny, "NoContraction")
        negative = self.op("OpShiftRightLogical", self.temp("sign"), u32, bits, mod.uint(31))
        is_negative = self.op("OpINotEqual", self.temp("is_negative"), boolean, negative, mod.uint(0))
        negated = self.op("OpFNegate", self.temp("negated"), f64, tiny)
        signed = self.op("OpSelect", self.temp("signed_tiny"), f64, is_negative, negated, tiny)
        converted = self.op("OpFConvert", self.temp("converted"), f64, x)
        is_tiny = self.op("OpULessThan", self.temp("is_tiny"), boolean, magnitude, mod.uint(0x00800000))
        self.op("OpSelect", self.result_id(ins.result), f64, is_tiny, signed, converted)

    def _emit_neg(self, ins: Instr) -> None:
        dtype = ins.result.dtype
        if not dtype.is_float:
            self.op(opcode("neg", dtype), self.result_id(ins.result), self.mod.scalar(dtype), self.use(ins.args[0]))
            return
        if dtype is T.float16:
            sign = self.mod.uint(1 << 15)  # through the low half of a uint, as f16_to_bits / f16_from_bits do
            bits = self._f16_to_bits(self.temp("bits"), self.use(ins.args[0]))
            flipped = self.op("OpBitwiseXor", self.temp("flipped"), self.mod.scalar(T.uint32), bits, sign)
            self._f16_from_bits(self.result_id(ins.result), flipped)
            return
        if dtype is T.float64:  # the sign is bit 31 of the high word (component 1 of a little-endian uvec2)
            uvec2 = self.mod.vector(T.uint32, 2)
            pair = self.op("OpBitcast", self.temp("words"), uvec2, self.use(ins.args[0]))
            high = self.op("OpCompositeExtract", self.temp("high"), self.mod.scalar(T.uint32), pair, "1")
            flipped = self.op(
                "OpBitwiseXor", self.temp("flipped"), self.mod.scalar(T.uint32), high, self.mod.uint(1 << 31)
            )
            pair = self.op("OpCompositeInsert", self.temp("words"), uvec2, flipped, pair, "1")
            self.op("OpBitcast", self.result_id(ins.result), self.mod.scalar(dtype), pair)
            return
        sign = self.mod.uint(1 << 31)
        bits = self.op("OpBitcast", self.temp("bits"), self.mod.scalar(T.uint32), self.use(ins.args[0]))
        flipped = self.op("OpBitwiseXor", self.temp("flipped"), self.mod.scalar(T.uint32), bits, sign)
        self.op("OpBitcast", self.result_id(ins.result), self.mod.scalar(dtype), flipped)

    def _f16_from_bits(self, result: str, bits: str) -> None:
        # The low 16 bits are component 0 of a little-endian v2half; no Int16 capability needed.
        pair = self.temp("half_pair")
        self.op("OpBitcast", pair, self.mod.vector(T.float16, 2), bits)
        self.op("OpCompositeExtract", result, self.mod.scalar(T.float16), pair, "0")

    def _emit_f16_from_bits(self, ins: Instr) -> None:
        self._f16_from_bits(self.result_id(ins.result), self.use(ins.args[0]))

    def _f16_to_bits(self, result: str, half: str) -> str:
        pair = self.temp("half_pair")
        zero = self.mod.constant(T.float16, 0.0)  # +0.0 in the high half: zero bits
        self.op("OpCompositeConstruct", pair, self.mod.vector(T.float16, 2), half, zero)
        return self.op("OpBitcast", result, self.mod.scalar(T.uint32), pair)

    def _emit_f16_to_bits(self, ins: Instr) -> None:
        self._f16_to_bits(self.result_id(ins.result), self.use(ins.args[0]))

    def _emit_barrier(self, ins: Instr) -> None:
        scope = self.mod.uint(_SCOPE_WORKGROUP)
        semantics = _SEMANTICS_ACQUIRE_RELEASE_WORKGROUP_MEMORY
        if self.vulkan_memory_model:
            semantics |= _SEMANTICS_MAKE_AVAILABLE_VISIBLE
        self.emit(f"OpControlBarrier {scope} {scope} {self.mod.uint(semantics)}")

    def _emit_subgroup_barrier(self, ins: Instr) -> None:
        # Execution scope subgroup; memory scope workgroup, since the memory it orders is shared memory.
        semantics = _SEMANTICS_ACQUIRE_RELEASE_WORKGROUP_MEMORY
        if self.vulkan_memory_model:
            semantics |= _SEMANTICS_MAKE_AVAILABLE_VISIBLE
        execution, memory = self.mod.uint(_SCOPE_SUBGROUP), self.mod.uint(_SCOPE_WORKGROUP)
        self.emit(f"OpControlBarrier {execution} {memory} {self.mod.uint(semantics)}")

    def _emit_shuffle_xor(self, ins: Instr) -> None:
        self.mod.capability("GroupNonUniformShuffle")
        value = ins.args[0]
        self.op(
            "OpGroupNonUniformShuffleXor",
            self.result_id(ins.result),
            self.mod.scalar(value.dtype),
            self.mod.uint(_SCOPE_SUBGROUP),
            self.use(value),
            self.mod.uint(int(ins.attrs[0])),
        )

    # ------------------------------------------------------------ control flow

    def emit_if(self, stmt: If) -> None:
        then_label, else_label, merge = self.new_labels("if", "then", "else", "merge")
        has_else = bool(stmt.orelse.body) or bool(stmt.results)
        self.emit(f"OpSelectionMerge {merge} None")
        self.emit(f"OpBranchConditional {self.use(stmt.cond)} {then_label} {else_label if has_else else merge}")
        incoming = []
        for label, branch in ((then_label, stmt.then), (else_label, stmt.orelse)):
            if branch is stmt.orelse and not has_else:
                continue
            self.start_block(label)
            self.emit_block(branch)
            # the branch's last block (nested control flow moves it) is the phi's predecessor
            incoming.append((self.label, [self.use(y) for y in branch.yields]))
            self.emit(f"OpBranch {merge}")
        self.start_block(merge)
        for i, r in enumerate(stmt.results):
            pairs = " ".join(f"{values[i]} {label}" for label, values in incoming)
            self.op("OpPhi", self.result_id(r), self.mod.type_of(r.dtype), pairs)

    def emit_loop(self, stmt: Loop) -> None:
        header, body, continue_, merge = self.new_labels("loop", "header", "body", "continue", "merge")
        preheader = self.label
        start, end, step = (self.use(v) for v in (stmt.start, stmt.end, stmt.step))
        inits = [self.use(v) for v in stmt.inits]
        index_type = self.mod.scalar(stmt.index.dtype)
        self.emit(f"OpBranch {header}")
        self.start_block(header)
        index = self.result_id(stmt.index)
        next_index = self.temp("next_index")
        carried = [self.result_id(c) for c in stmt.carried]
        self.op("OpPhi", index, index_type, f"{start} {preheader} {next_index} {continue_}")
        # The carried phis name the body's yields, which exist only once the body is emitted:
        # reserve their lines now and fill them in afterwards.
        phi_slots = []
        for _ in carried:
            phi_slots.append(len(self.lines))
            self.emit("; (carried phi)")
        less = "OpSLessThan" if stmt.index.dtype.is_signed else "OpULessThan"
        in_range = self.op(less, self.temp("in_range"), self.mod.scalar(T.bool_), index, end)
        self.emit(f"OpLoopMerge {merge} {continue_} {'None' if stmt.unroll else 'DontUnroll'}")
        self.emit(f"OpBranchConditional {in_range} {body} {merge}")
        self.start_block(body)
        self.emit_block(stmt.body)
        for slot, c_id, c, init, y in zip(phi_slots, carried, stmt.carried, inits, stmt.body.yields):
            phi = f"{c_id} = OpPhi {self.mod.type_of(c.dtype)} {init} {preheader} {self.use(y)} {continue_}"
            self.lines[slot] = f"        {phi}"
        self.emit(f"OpBranch {continue_}")
        self.start_block(continue_)
        self.op("OpIAdd", next_index, index_type, index, step)
        self.emit(f"OpBranch {header}")
        self.start_block(merge)
        # The header's phis dominate the merge block, so the results are the carried values; the
        # copies only give each IR value its own %vN in the assembly.
        for r, c_id in zip(stmt.results, carried):
            self.op("OpCopyObject", self.result_id(r), self.mod.type_of(r.dtype), c_id)


def _push_slot_type(dtype: DType) -> DType:
    return T.uint32 if dtype in (T.bool_, T.float16) else dtype


def _hints(kernel: Kernel) -> tuple:
    """The value names a user gave (they reach the SPIR-V as OpName, so they are part of the cache key)."""
    hints = []
    for stmt in walk(kernel.body):
        if isinstance(stmt, Instr) and stmt.result is not None:
            hints.append(stmt.result.hint)
        elif isinstance(stmt, (If, Loop)):
            hints.extend(v.hint for v in (*getattr(stmt, "carried", ()), *stmt.results))
    return tuple(hints)


# ---------------------------------------------------------------- the module and the compile entry point


def _emit_module(kernel: Kernel, features: DeviceFeatures, by_address: frozenset[int]) -> tuple[str, frozenset[str]]:
    check_limits(kernel, features, by_address)
    needs = required_features(kernel, features, by_address)
    modes = float_control_features(kernel, features)
    mod = ModuleBuilder()
    for name, capability in (
        ("float16", "Float16"),
        ("float64", "Float64"),
        ("int64", "Int64"),
        ("int16", "Int16"),
        ("int8", "Int8"),
        ("storage_buffer_16bit", "StorageBuffer16BitAccess"),
        ("storage_buffer_8bit", "StorageBuffer8BitAccess"),
    ):
        if name in needs:
            mod.capability(capability)
    if "storage_buffer_8bit" in needs and tuple(features.spirv_version) < (1, 5):
        mod.extension("SPV_KHR_8bit_storage")  # core from SPIR-V 1.5
    for _, mode, _ in modes:
        mod.capability(mode)
    if modes and tuple(features.spirv_version) < (1, 4):
        mod.extension("SPV_KHR_float_controls")  # core from SPIR-V 1.4
    if by_address:
        mod.capability("PhysicalStorageBufferAddresses")
        if tuple(features.spirv_version) < (1, 5):
            mod.extension("SPV_KHR_physical_storage_buffer")  # core from SPIR-V 1.5
    if "cooperative_matrix" in needs:
        mod.capability("CooperativeMatrixKHR")
        mod.capability("VulkanMemoryModel")
        mod.extension("SPV_KHR_cooperative_matrix")
    if "cooperative_matrix_workgroup" in needs:  # workgroup scope and tensor layouts (extra/proto_coopmat2.py)
        mod.capability("CooperativeMatrixTensorAddressingNV")
        mod.capability("TensorAddressingNV")
        mod.extension("SPV_NV_cooperative_matrix2")
        mod.extension("SPV_NV_tensor_addressing")
    body = _FunctionEmitter(kernel, mod, by_address)
    body.bits_compare = not features.denorm_preserve_float32  # see spirv_compare
    body.vulkan_memory_model = "vulkan_memory_model" in needs
    body.emit_function()
    function_type = mod.function_type()
    # SPIR-V 1.4+ lists every global the entry point uses; earlier versions only Input/Output.
    interface = mod.interface if tuple(features.spirv_version) >= (1, 4) else mod.input_interface
    entry_name = kernel.name.replace("\\", "\\\\").replace('"', '\\"')
    layout, _ = push_layout(kernel)
    slots, push_size = address_layout(kernel, by_address)

    out = [f"; SPIR-V for vkml kernel {kernel.name!r} (target {features.target_env}), emitted by vkml.codegen"]
    out += [f"; binding {i}: {b.name} ({b.dtype.short}, {b.access})" for i, b in enumerate(kernel.buffers)]
    out += [f"; push constant {name} ({dtype.short}) at byte {offset}" for name, dtype, offset in layout]
    out += [
        f"; push constant: device address of binding {b} at byte {offset} (not its descriptor)" for b, offset in slots
    ]
    out += [f"OpCapability {c}" for c in mod.capabilities]
    out += [f'OpExtension "{e}"' for e in mod.extensions]
    if mod.uses_glsl_std:
        out.append('%glsl = OpExtInstImport "GLSL.std.450"')
    memory_model = "Vulkan" if body.vulkan_memory_model else "GLSL450"
    out.append(f"OpMemoryModel {'PhysicalStorageBuffer64' if by_address else 'Logical'} {memory_model}")
    out.append(f'OpEntryPoint GLCompute %main "{entry_name}" {" ".join(interface)}'.rstrip())
    out.append(f"OpExecutionMode %main LocalSize {' '.join(str(s) for s in kernel.local_size)}")
    out += [f"OpExecutionMode %main {mode} {width}" for _, mode, width in modes]
    out.append("; ---- names")
    out.append(f'OpName %main "{entry_name}"')
    out += mod.names
    out.append("; ---- decorations")
    out += list(mod.decorations)
    out.append("; ---- types, constants, global variables")
    out += mod.declarations
    out.append("; ---- the kernel")
    out.append(f"%main = OpFunction {mod.void()} None {function_type}")
    out += body.lines
    out.append("OpFunctionEnd")
    if mod.functions:
        out.append("; ---- the functions of per-element operations and row reductions")
        out += mod.functions
    used = needs | {field for field, _, _ in modes}
    assert push_size <= features.max_push_constants_size  # check_limits raised otherwise
    return "\n".join(out) + "\n", frozenset(used)


def emit_spirv(kernel: Kernel, features: DeviceFeatures, by_address: Iterable[int] = ()) -> str:
    """The annotated SPIR-V assembly of ``kernel`` (deterministic; re-assembles with spirv-as).

    ``by_address``: bindings reached through a buffer device address instead of a descriptor.

    >>> print(emit_spirv(kernel, DeviceFeatures.lavapipe_like()))   # doctest: +SKIP
    """
    return _emit_module(kernel, features, frozenset(by_address))[0]


# Bounded by entries and bytes of SPIR-V and assembly (ir/lru.py: "compiled_spirv").
_CACHE = lru.LRU("compiled_spirv", weight=lambda compiled: len(compiled.spirv) + len(compiled.asm))


def clear_compile_cache() -> None:
    """Forget every compiled kernel (tests; the runtime keeps its own disk cache)."""
    _CACHE.clear()


def compile_kernel(kernel: Kernel, features: DeviceFeatures, by_address: Iterable[int] = ()) -> CompiledKernel:
    """Verify, emit, assemble (spirv-as) and validate (spirv-val) ``kernel`` for ``features``.

    ``by_address`` names the bindings reached through a buffer device address (buffers larger
    than ``maxStorageBufferRange``; see ``vkml.codegen``). Cached in memory by the kernel's
    structure, its value names, the features and ``by_address``. Any failure raises
    ``CompileError`` carrying ``.ir``, ``.assembly`` and ``.validator``.

    >>> ck = compile_kernel(kernel, DeviceFeatures.lavapipe_like())   # doctest: +SKIP
    >>> ck.push_constants                                              # doctest: +SKIP
    [('n', vkml.uint32, 0)]
    """
    by_address = frozenset(by_address)
    key = (structure(kernel), _hints(kernel), features, by_address)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    started = time.perf_counter()
    asm = ""
    try:
        _verify(kernel)
        asm, used = _emit_module(kernel, features, by_address)
        spirv = tools.assemble_and_validate(asm, features.target_env)
    except CompileError as e:
        # The IR text is printed only for the error: printing costs about what verifying does.
        e.ir, e.assembly = e.ir or _ir_text(kernel), e.assembly or asm
        raise
    layout, _ = push_layout(kernel)
    slots, push_size = address_layout(kernel, by_address)
    compiled = CompiledKernel(
        spirv=spirv,
        asm=asm,
        entry=kernel.name,
        push_constants=layout,
        push_size=push_size,
        local_size=tuple(kernel.local_size),
        buffers=tuple(kernel.buffers),
        features_used=used,
        address_slots=tuple(slots),
        compile_ms=(time.perf_counter() - started) * 1e3,
    )
    _CACHE.put(key, compiled)
    return compiled


def _ir_text(kernel: Kernel) -> str:
    try:
        return str(kernel)
    except ImportError:  # the IR text printer is optional for codegen
        return f"<kernel {kernel.name!r}: IR text printer unavailable>"


def _verify(kernel: Kernel) -> None:
    try:
        verify_kernel(kernel)
    except IRError as e:
        raise CompileError(f"kernel {kernel.name!r} failed IR verification: {e}", ir=_ir_text(kernel)) from e
