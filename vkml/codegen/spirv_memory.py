"""Buffer and shared-memory access for the SPIR-V emitter: element pointers, loads, stores, vectors.

A storage buffer is reached through its descriptor (an OpAccessChain into its runtime array),
or — past maxStorageBufferRange — through a device address (64-bit index arithmetic on a
PhysicalStorageBuffer pointer). Aligned groups of four (``vload``/``vstore``) go through a
second variable aliasing the binding as an array of vec4, one vector load shared by every
``vload`` of the same group it dominates.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import types as T
from ..ir.core import Instr, Value
from ..ir.instructions import VECTOR_WIDTH
from ..ir.types import DType


def sanitize(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def storage_type(dtype: DType) -> DType:
    """How a buffer holds ``dtype``: bools as one uint32 each."""
    return T.uint32 if dtype is T.bool_ else dtype


class MemoryEmitter:
    """Mixed into the function emitter: everything that reads or writes memory."""

    def _element_pointer(self, ins: Instr, index: Value) -> tuple[str, DType, tuple[str, ...]]:
        """The element's pointer, its IR dtype, and the memory operands its OpLoad / OpStore need."""
        name = ins.attrs[0]
        if ins.op in ("load", "store"):
            binding = next(i for i, b in enumerate(self.kernel.buffers) if b.name == name)
            dtype = self.kernel.buffers[binding].dtype
            stored = T.uint32 if dtype is T.bool_ else dtype
            pointer = self.temp(f"{sanitize(name)}_at")
            if binding in self.buffer_bases:
                # Address arithmetic in 64 bits: an element index below 2^32 may lie past 4 GiB.
                ptr_type = self.mod.pointer("PhysicalStorageBuffer", self.mod.scalar(stored))
                wide = self._index64(index)
                self.op("OpAccessChain", pointer, ptr_type, self.buffer_bases[binding], self.mod.uint(0), wide)
                return pointer, dtype, ("Aligned", str(stored.nbytes))
            ptr_type = self.mod.pointer("StorageBuffer", self.mod.scalar(stored))
            self.op("OpAccessChain", pointer, ptr_type, self.buffer_vars[binding], self.mod.uint(0), self.use(index))
            return pointer, dtype, ()
        dtype = self.kernel.shared_array(name).dtype
        pointer = self.temp(f"{sanitize(name)}_at")
        ptr_type = self.mod.pointer("Workgroup", self.mod.scalar(dtype))
        if name in self.vector_shared:  # element i is component i % 4 of vector i / 4
            vector = self.vector_of(index)
            component = self.op(
                "OpBitwiseAnd",
                self.temp("component"),
                self.mod.scalar(T.uint32),
                self._uint_index(index),
                self.mod.uint(VECTOR_WIDTH - 1),
            )
            self.op("OpAccessChain", pointer, ptr_type, self.shared_vars[name], vector, component)
        else:
            self.op("OpAccessChain", pointer, ptr_type, self.shared_vars[name], self.use(index))
        return pointer, dtype, self.shared_access()

    def _uint_index(self, index: Value) -> str:
        if index.dtype is T.uint32:
            return self.use(index)
        if index.dtype is not T.int32:
            raise CompileError(f"index of a vector-stored shared array is {index.dtype.short}, not u32 or i32")
        return self.op("OpBitcast", self.temp("index"), self.mod.scalar(T.uint32), self.use(index))

    def vector_of(self, index: Value) -> str:
        """Element ``index`` of a shared array held as vectors: the index of its vector."""
        shift = self.mod.uint(VECTOR_WIDTH.bit_length() - 1)
        return self.op(
            "OpShiftRightLogical", self.temp("vector"), self.mod.scalar(T.uint32), self._uint_index(index), shift
        )

    def shared_access(self) -> tuple[str, ...]:
        """Memory operands of a shared-memory access. Under the Vulkan memory model only accesses marked
        NonPrivatePointer are ordered between invocations by a barrier (shared memory is for exactly that)."""
        return ("NonPrivatePointer",) if self.vulkan_memory_model else ()

    def _index64(self, index: Value) -> str:
        """``index`` as a 64-bit integer (zero-extended if unsigned, sign-extended if signed)."""
        if index.dtype is T.int64:
            return self.use(index)
        if index.dtype.is_signed:
            return self.op("OpSConvert", self.temp("index64"), self.mod.scalar(T.int64), self.use(index))
        return self.op("OpUConvert", self.temp("index64"), self.mod.unsigned(64), self.use(index))

    def _emit_load(self, ins: Instr) -> None:
        pointer, dtype, access = self._element_pointer(ins, ins.args[0])
        if dtype is T.bool_ and ins.op == "load":
            word = self.op("OpLoad", self.temp("word"), self.mod.scalar(T.uint32), pointer, *access)
            self.op("OpINotEqual", self.result_id(ins.result), self.mod.scalar(T.bool_), word, self.mod.uint(0))
        else:
            self.op("OpLoad", self.result_id(ins.result), self.mod.scalar(dtype), pointer, *access)

    def _emit_store(self, ins: Instr) -> None:
        pointer, dtype, access = self._element_pointer(ins, ins.args[0])
        value = self.use(ins.args[1])
        if dtype is T.bool_ and ins.op == "store":
            value = self.op(
                "OpSelect", self.temp("word"), self.mod.scalar(T.uint32), value, self.mod.uint(1), self.mod.uint(0)
            )
        self.emit(" ".join(("OpStore", pointer, value, *access)))

    _emit_shared_load = _emit_load
    _emit_shared_store = _emit_store

    def _emit_shared_vstore(self, ins: Instr) -> None:
        name = ins.attrs[0]
        vector_type = self.mod.vector(self.kernel.shared_array(name).dtype, VECTOR_WIDTH)
        pointer = self.temp(f"{sanitize(name)}_vec_at")
        ptr_type = self.mod.pointer("Workgroup", vector_type)
        self.op("OpAccessChain", pointer, ptr_type, self.shared_vars[name], self.use(ins.args[0]))
        words = [self.use(v) for v in ins.args[1:]]
        vector = self.op("OpCompositeConstruct", self.temp(f"{sanitize(name)}_vec"), vector_type, *words)
        self.emit(" ".join(("OpStore", pointer, vector, *self.shared_access())))

    # ------------------------------------------------------------ vector memory access

    def _vector_view(self, binding: int) -> str:
        """A second variable on ``binding`` whose elements are vectors of VECTOR_WIDTH (descriptor aliasing)."""
        if binding not in self.vector_vars:
            decl = self.kernel.buffers[binding]
            struct = self.mod.vector_buffer_struct(storage_type(decl.dtype), VECTOR_WIDTH)
            var = self.mod.variable(
                f"%buf{binding}_{sanitize(decl.name)}_vec", self.mod.pointer("StorageBuffer", struct), "StorageBuffer"
            )
            self.mod.name(var, f"{decl.name}.vec{VECTOR_WIDTH}")
            self.mod.decorate(var, "DescriptorSet", 0)
            self.mod.decorate(var, "Binding", binding)
            if decl.access == "read":
                self.mod.decorate(var, "NonWritable")
            elif decl.access == "write":
                self.mod.decorate(var, "NonReadable")
            self.vector_vars[binding] = var
        return self.vector_vars[binding]

    def _vector_pointer(self, binding: int, index: Value, hint: str) -> tuple[str, str]:
        """The pointer to aligned vector ``index`` of ``binding``, and the vector's type."""
        storage = storage_type(self.kernel.buffers[binding].dtype)
        vector = self.mod.vector(storage, VECTOR_WIDTH)
        pointer = self.temp(f"{hint}_vec_at")
        ptr_type = self.mod.pointer("StorageBuffer", vector)
        self.op("OpAccessChain", pointer, ptr_type, self._vector_view(binding), self.mod.uint(0), self.use(index))
        return pointer, vector

    def _element_of_vector(self, binding: int, index: Value, component: int, hint: str) -> tuple[str, DType]:
        """By device address there is no vector view: the pointer to element 4·index + component."""
        storage = storage_type(self.kernel.buffers[binding].dtype)
        wide = self._index64(index)
        wide_type = self.mod.scalar(T.int64) if index.dtype.is_signed else self.mod.unsigned(64)
        four = self.mod.define(f"{wide_type}_{VECTOR_WIDTH}", f"OpConstant {wide_type} {VECTOR_WIDTH}")
        at = self.op("OpIMul", self.temp("vector_start"), wide_type, wide, four)
        if component:
            offset = self.mod.define(f"{wide_type}_{component}", f"OpConstant {wide_type} {component}")
            at = self.op("OpIAdd", self.temp("element"), wide_type, at, offset)
        pointer = self.temp(f"{hint}_at")
        ptr_type = self.mod.pointer("PhysicalStorageBuffer", self.mod.scalar(storage))
        self.op("OpAccessChain", pointer, ptr_type, self.buffer_bases[binding], self.mod.uint(0), at)
        return pointer, storage

    def _emit_vload(self, ins: Instr) -> None:
        name, component = ins.attrs[0], int(ins.attrs[1])
        binding = next(i for i, b in enumerate(self.kernel.buffers) if b.name == name)
        dtype = self.kernel.buffers[binding].dtype
        storage = storage_type(dtype)
        result = self.result_id(ins.result) if dtype is not T.bool_ else self.temp("word")
        if binding in self.buffer_bases:
            pointer, _ = self._element_of_vector(binding, ins.args[0], component, sanitize(name))
            self.op("OpLoad", result, self.mod.scalar(storage), pointer, "Aligned", str(storage.nbytes))
        else:
            # Only a read-only buffer's vector may be reused: a writable one may change in between.
            key = (binding, id(ins.args[0])) if self.kernel.buffers[binding].access == "read" else None
            vector = next((scope[key] for scope in reversed(self._loaded_vectors) if key in scope), None)
            if vector is None:
                pointer, vector_type = self._vector_pointer(binding, ins.args[0], sanitize(name))
                vector = self.op("OpLoad", self.temp(f"{sanitize(name)}_vec"), vector_type, pointer)
                if key is not None:
                    self._loaded_vectors[-1][key] = vector
            self.op("OpCompositeExtract", result, self.mod.scalar(storage), vector, str(component))
        if dtype is T.bool_:
            self.op("OpINotEqual", self.result_id(ins.result), self.mod.scalar(T.bool_), result, self.mod.uint(0))

    def _emit_vstore(self, ins: Instr) -> None:
        name = ins.attrs[0]
        binding = next(i for i, b in enumerate(self.kernel.buffers) if b.name == name)
        dtype = self.kernel.buffers[binding].dtype
        storage = storage_type(dtype)
        words = []
        for value in ins.args[1:]:
            word = self.use(value)
            if dtype is T.bool_:
                word = self.op(
                    "OpSelect", self.temp("word"), self.mod.scalar(T.uint32), word, self.mod.uint(1), self.mod.uint(0)
                )
            words.append(word)
        if binding in self.buffer_bases:
            for component, word in enumerate(words):
                pointer, _ = self._element_of_vector(binding, ins.args[0], component, sanitize(name))
                self.emit(f"OpStore {pointer} {word} Aligned {storage.nbytes}")
            return
        pointer, vector_type = self._vector_pointer(binding, ins.args[0], sanitize(name))
        vector = self.op("OpCompositeConstruct", self.temp(f"{sanitize(name)}_vec"), vector_type, *words)
        self.emit(f"OpStore {pointer} {vector}")
