"""A numpy interpreter for the SPIR-V subset that extra/flash_cm2_spirv.py emits, one workgroup at a time.

Where no device offers VK_NV_cooperative_matrix2, this runs the prototype's module as text so that
its wiring (which matrix goes where, the loop bounds and phis, the tensor slices and views, the
per-element functions) is checked against the float64 reference. Workgroup-scope matrices are numpy
arrays; per-element functions run once over the whole matrix, vectorised; a row reduction folds
the columns left to right with its combine function; tensor loads and stores follow the address
calculation of the SPV_NV_cooperative_matrix2 text (2-D layouts, block size 1; clamp Undefined, where
an access outside the layout is an error here, or Constant: such loads read 0, such stores are dropped). float32 arithmetic is numpy's (no fused
multiply-add), so the device's bits are not these; the bound is what is compared.

    >>> import numpy as np
    >>> from flash_cm2_spirv import Config, Problem, grid, module_text
    >>> problem = Problem(1, 1, 64, 64)
    >>> buffers = {name: np.zeros(64 * 64, np.float16) for name in "QKVO"} | {"LSE": np.zeros(64, np.float32)}
    >>> run(module_text(Config(), problem), buffers, grid(Config(), problem))
    >>> float(buffers["LSE"][0]) == float(np.log(np.float32(64)))
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

UNCLIPPED = (0, 0xFFFFFFFF, 0, 0xFFFFFFFF)
DTYPES = {"%float": np.float32, "%half": np.float16, "%uint": np.uint32, "%int": np.int32, "%bool": np.bool_}


@dataclass(frozen=True)
class Layout:
    clamp: int  # 0 Undefined, 1 Constant (clamp value 0)
    dims: tuple = (0, 0)
    offset: tuple = (0, 0)
    span: tuple = (0, 0)

    @property
    def stride(self) -> tuple:
        return (self.dims[1], 1)


@dataclass(frozen=True)
class View:
    permutation: tuple
    clip: tuple = UNCLIPPED


@dataclass
class Module:
    """The parsed text: constants, matrix types, view types, functions (name → (params, instructions))."""

    constants: dict = field(default_factory=dict)
    matrices: dict = field(default_factory=dict)  # type id → (dtype, rows, cols)
    views: dict = field(default_factory=dict)  # view type id → permutation
    layouts: dict = field(default_factory=dict)  # layout type id → clamp mode
    functions: dict = field(default_factory=dict)


def parse(text: str) -> Module:
    module, current = Module(), None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        result, op, args = (
            (words[0], words[2], words[3:]) if len(words) > 2 and words[1] == "=" else (None, words[0], words[1:])
        )
        if op == "OpConstant":
            module.constants[result] = _literal(args[0], args[1])
        elif op == "OpConstantFalse":
            module.constants[result] = False
        elif op == "OpTypeCooperativeMatrixKHR":
            rows, cols = (module.constants[a] for a in args[2:4])
            module.matrices[result] = (DTYPES[args[0]], int(rows), int(cols))
        elif op == "OpTypeTensorLayoutNV":
            module.layouts[result] = int(module.constants[args[1]])
        elif op == "OpTypeTensorViewNV":
            module.views[result] = tuple(int(module.constants[a]) for a in args[2:])
        elif op == "OpConstantComposite" and args[0] in module.matrices:
            dtype, rows, cols = module.matrices[args[0]]
            module.constants[result] = np.full((rows, cols), module.constants[args[1]], dtype)
        elif op == "OpFunction":
            current = module.functions[result] = ([], [])
        elif op == "OpFunctionParameter":
            current[0].append(result)
        elif op == "OpFunctionEnd":
            current = None
        elif current is not None:
            current[1].append((result, op, args))
    return module


def _literal(kind: str, text: str):
    if kind == "%float":
        value = float.fromhex(text) if "x" in text else float(text)
        return np.float32(np.copysign(np.inf, value)) if abs(value) >= 2.0**128 else np.float32(value)
    if kind == "%half":
        return np.float16(float.fromhex(text))
    return (np.int32 if kind == "%int" else np.uint32)(int(text))


def run(text: str, buffers: dict, workgroups: int, backwards: bool = False) -> None:
    """Run the module's ``main`` for workgroups 0 .. ``workgroups``-1 along x (or the other way round: a
    store that strays into another workgroup's part then shows), writing into ``buffers``."""
    module = parse(text)
    _, body = module.functions["%main"]
    for w in reversed(range(workgroups)) if backwards else range(workgroups):
        _Workgroup(module, buffers, w).run(body)


class _Workgroup:
    def __init__(self, module: Module, buffers: dict, w: int):
        self.module, self.buffers, self.w = module, buffers, w
        self.values = dict(module.constants)

    def get(self, name: str):
        return self.values[name]

    def run(self, body) -> None:
        blocks, label, order = {}, None, []
        for instruction in body:
            if instruction[1] == "OpLabel":
                label = instruction[0]
                order.append(label)
                blocks[label] = []
            else:
                blocks[label].append(instruction)
        previous, label = None, order[0]
        while True:
            target = None
            for result, op, args in blocks[label]:
                if op == "OpPhi":
                    pairs = dict(zip(args[2::2], args[1::2]))
                    self.values[result] = self.get(pairs[previous])
                elif op == "OpBranch":
                    target = args[0]
                elif op == "OpBranchConditional":
                    target = args[1] if self.get(args[0]) else args[2]
                elif op == "OpReturn":
                    return
                elif op != "OpLoopMerge":
                    self.values[result] = self.step(op, args) if result else self.effect(op, args)
            previous, label = label, target

    def effect(self, op: str, args) -> None:
        if op != "OpCooperativeMatrixStoreTensorNV":
            raise NotImplementedError(op)
        (name, base), matrix, layout = self.get(args[0]), self.get(args[1]), self.get(args[2])
        view = self.get(args[5]) if args[4] == "TensorView" else None
        index, valid = _addresses(layout, view, *matrix.shape)  # outside a Constant layout: dropped
        self.buffers[name][base + index[valid]] = matrix[valid].astype(self.buffers[name].dtype)

    def step(self, op: str, args):
        kind, operands = args[0], [self.values.get(a, a) for a in args[1:]]
        if op == "OpLoad":
            return np.array([self.w, 0, 0], np.uint32)
        if op == "OpCompositeExtract":
            return operands[0][int(args[2])]
        if op == "OpAccessChain":
            return (args[1][1:], int(operands[2]))  # (buffer, element)
        if op == "OpCreateTensorLayoutNV":
            return Layout(self.module.layouts[kind])
        if op == "OpTensorLayoutSetDimensionNV":
            dims = tuple(int(d) for d in operands[1:])
            return Layout(operands[0].clamp, dims, (0, 0), dims)
        if op == "OpTensorLayoutSliceNV":
            layout, (o0, s0, o1, s1) = operands[0], (int(v) for v in operands[1:])
            return replace(layout, offset=(layout.offset[0] + o0, layout.offset[1] + o1), span=(s0, s1))
        if op == "OpCreateTensorViewNV":
            return View(self.module.views[kind])
        if op == "OpTensorViewSetClipNV":
            return replace(operands[0], clip=tuple(int(v) for v in operands[1:]))
        if op == "OpCooperativeMatrixLoadTensorNV":
            (name, base), layout = operands[0], operands[2]
            view = operands[5] if args[5] == "TensorView" else None
            dtype, rows, cols = self.module.matrices[kind]
            index, valid = _addresses(layout, view, rows, cols)
            assert view is None or view.clip == UNCLIPPED, "a clipped load"
            loaded = np.zeros((rows, cols), dtype)  # outside a Constant layout: the clamp value, 0
            loaded[valid] = self.buffers[name][base + index[valid]]
            return loaded
        if op == "OpCooperativeMatrixMulAddKHR":
            a, b, c = (x.astype(np.float64) for x in operands)
            return (a @ b + c).astype(self.module.matrices[kind][0])
        if op == "OpCooperativeMatrixPerElementOpNV":
            matrix, function, extras = operands[0], args[2], operands[2:]
            rows, cols = np.indices(matrix.shape, dtype=np.uint32)
            return call(self.module, function, [rows, cols, matrix, *extras]).astype(matrix.dtype)
        if op == "OpCooperativeMatrixReduceNV":
            assert args[2] == "Row", args[2]
            matrix, function = operands[0], args[3]
            total = matrix[:, 0]
            for column in range(1, matrix.shape[1]):
                total = call(self.module, function, [total, matrix[:, column]])
            dtype, rows, cols = self.module.matrices[kind]
            return np.repeat(total[:, None], cols, axis=1).astype(dtype)
        if op in ("OpFConvert", "OpCopyObject"):
            return operands[0].astype(self.module.matrices[kind][0])
        if op == "OpMatrixTimesScalar":
            return (operands[0] * operands[1]).astype(np.float32)
        return scalar(op, kind, operands, args)


def call(module: Module, function: str, arguments: list):
    """A straight-line function of ``module`` on numpy arrays (every element at once)."""
    params, body = module.functions[function]
    values = dict(module.constants) | dict(zip(params, arguments))
    for result, op, args in body:
        if op == "OpReturnValue":
            return values[args[0]]
        if op != "OpLabel":
            values[result] = scalar(op, args[0], [values.get(a, a) for a in args[1:]], args)
    raise ValueError(f"{function} returns nothing")


_BINARY = {
    "OpFAdd": np.add,
    "OpFSub": np.subtract,
    "OpFMul": np.multiply,
    "OpFDiv": np.divide,
    "OpIAdd": np.add,
    "OpISub": np.subtract,
    "OpIMul": np.multiply,
    "OpUDiv": np.floor_divide,
    "OpUMod": np.remainder,
    "OpBitwiseOr": np.bitwise_or,
    "OpFOrdGreaterThan": np.greater,
    "OpUGreaterThan": np.greater,
    "OpUGreaterThanEqual": np.greater_equal,
    "OpLogicalOr": np.logical_or,
    "OpULessThan": np.less,
}
_EXTENDED = {"Exp2": np.exp2, "Log": np.log, "FMax": np.fmax, "UMin": np.minimum}


def scalar(op: str, kind: str, operands: list, args) -> np.ndarray:
    """One element-wise instruction (scalars, or arrays standing for every element of a matrix)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if op in _BINARY:
            found = _BINARY[op](*operands)
        elif op == "OpSelect":
            found = np.where(*operands)
        elif op == "OpIsNan":
            found = np.isnan(operands[0])
        elif op == "OpBitcast":
            return np.asarray(operands[0]).view(DTYPES[kind])
        elif op == "OpShiftLeftLogical":
            found = np.left_shift(operands[0], operands[1].astype(operands[0].dtype))
        elif op == "OpExtInst":
            found = _EXTENDED[args[2]](*operands[2:])
        else:
            raise NotImplementedError(op)
    if kind in DTYPES:
        return np.asarray(found).astype(DTYPES[kind])
    return np.asarray(found).astype(np.float32)  # element-wise arithmetic on float32 matrices


def _addresses(layout: Layout, view: View | None, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(element index into the buffer, accessed?) for every (row, col) of a rows×cols matrix: not accessed
    where a view clips it or (Constant clamping) it falls outside the layout."""
    r, c = np.indices((rows, cols), dtype=np.int64)
    valid = np.ones((rows, cols), bool)
    span = layout.span
    if view is None:
        index = r * cols + c
    else:
        r0, r_span, c0, c_span = view.clip
        valid = (r >= r0) & (r < r0 + r_span) & (c >= c0) & (c < c0 + c_span)
        linear = (r - r0) * min(cols, c_span) + (c - c0)
        coord = [None, None]
        for dim in (1, 0):  # the view's dimensions are the span's (no own dimensions), permuted
            i = view.permutation[dim]
            coord[i], linear = linear % span[i], linear // span[i]
        index = coord[0] * span[1] + coord[1]
    span_coord = ((index // span[1]) % span[0], index % span[1])
    tensor = [span_coord[d] + layout.offset[d] for d in (0, 1)]
    inside = (tensor[0] >= 0) & (tensor[0] < layout.dims[0]) & (tensor[1] >= 0) & (tensor[1] < layout.dims[1])
    assert layout.clamp or inside[valid].all(), f"an access outside the {layout.dims} layout (clamp mode Undefined)"
    return tensor[0] * layout.stride[0] + tensor[1] * layout.stride[1], valid & inside
