"""The canonical text form of kernel IR: ``print_kernel`` writes it, ``parse_kernel`` reads it back.

    kernel scale local_size(64, 1, 1) {
      buffer x: f32 read
      buffer out: f32 write
      param %n: u32

      %0 = global_id 0    : u32
      %1 = lt %0, %n      : bool
      if %1 {
        %2 = load x[%0]   : f32
        %3 = const 2.0    : f32
        %4 = mul %2, %3   : f32
        store out[%0], %4
      }
    }

Values are numbered ``%0, %1, ...`` in definition order (a loop's index and carried values at
its head, ``if``/``loop`` results after their blocks); parameters print as ``%name``. Result
types sit in one column after ``:``. ``if``/``loop`` with results name their types after
``->`` and end their blocks with ``yield``; a loop's index takes its bounds' type and its
carried values their initial values' types. Constants print exactly: floats as the shortest
decimal that reads back to the same value in their own precision, NaN as ``nan(0x7fc00000)``
(its bit pattern). ``;`` starts a comment. A kernel written for a subgroup size says so in its
head (``kernel mm local_size(256, 1, 1) subgroup_size(32) {``); cooperative-matrix types read
``cm_<a|b|acc>_<f16|f32>_<rows>x<cols>`` (``_wg`` appended: workgroup scope) and their loads
``cm_shared_load a_tile[%4], 40, row`` and ``cm_tensor_load a[%row0], %col0, 8192, 8192, clamp``.

The parser builds what the text says without judging it (``verify`` does that), so golden
kernels for verifier tests can be written as text too. lark is imported by the first parse, not
with this module: every kernel compiled is printed (its text is the cache key), few are parsed,
and lark with its grammar loader is a large part of ``import vkml`` otherwise.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import IRError
from . import types as T
from .core import (
    ACCESS_MODES,
    Block,
    BufferDecl,
    ElementFunction,
    If,
    Instr,
    Kernel,
    Loop,
    ParamDecl,
    SharedDecl,
    Value,
)
from .instructions import MATRIX_MEMORY_OPS, MATRIX_TENSOR_OPS, SPECS

if TYPE_CHECKING:
    from lark import Lark, Token, Tree
    from lark.exceptions import UnexpectedInput

INDENT = "  "
TYPE_COLUMN_MAX = 56  # lines longer than this do not push the whole kernel's type column right
CONVERSION_OPS = ("bitcast", "convert")  # their attr is the result type; printed only if it differs

# ---------------------------------------------------------------- naming values


class ValueNames:
    """Text names of a kernel's values: ``%name`` for params, ``%0, %1, ...`` in definition order.

    A value that is used but never defined (only in broken IR) is named ``%?0, %?1, ...``.

        >>> names = ValueNames(kernel); names(kernel.params[0].value)
        '%n'
    """

    def __init__(self, kernel: Kernel):
        self._names: dict[int, str] = {id(p.value): f"%{p.name}" for p in kernel.params}
        self._undefined = 0
        count = 0
        for v in _definitions(kernel.body):
            if id(v) not in self._names:
                self._names[id(v)] = f"%{count}"
                count += 1

    def __call__(self, v: Value) -> str:
        name = self._names.get(id(v))
        if name is None:
            name = self._names[id(v)] = f"%?{self._undefined}"
            self._undefined += 1
        return name


def _definitions(block: Block):
    """The values ``block`` defines, in definition order (the order the text numbers them)."""
    for stmt in block.body:
        if isinstance(stmt, Instr):
            if stmt.op == "cm_map" and stmt.attrs and isinstance(stmt.attrs[0], ElementFunction):
                yield from stmt.attrs[0].params  # the function's values, before the result (as a loop's)
                yield from _definitions(stmt.attrs[0].body)
            if stmt.result is not None:
                yield stmt.result
        elif isinstance(stmt, If):
            yield from _definitions(stmt.then)
            yield from _definitions(stmt.orelse)
            yield from stmt.results
        elif isinstance(stmt, Loop):
            yield stmt.index
            yield from stmt.carried
            yield from _definitions(stmt.body)
            yield from stmt.results


# ---------------------------------------------------------------- constants


def format_constant(value: np.generic) -> str:
    """The exact text of a constant: ``2.0``, ``-0.0``, ``1e-45``, ``-inf``, ``nan(0x7fc00000)``, ``-5``, ``true``.

    >>> format_constant(np.float32(0.1))
    '0.1'
    """
    if isinstance(value, np.bool_):
        return "true" if value else "false"
    if isinstance(value, np.floating):
        if np.isnan(value):
            bits = value.view(_uint_of(value.dtype))
            return f"nan(0x{int(bits):0{2 * value.dtype.itemsize}x})"
        return str(value)  # numpy prints the shortest decimal that round-trips in the value's precision
    return str(int(value))


def parse_constant(text: str, dtype: T.DType) -> np.generic:
    """The constant of ``dtype`` that ``text`` denotes; decimals round to nearest, ties to even.

    >>> parse_constant("0.1", float32) == np.float32(0.1)
    True
    """
    if dtype is T.bool_:
        if text not in ("true", "false"):
            raise ValueError(f"a bool constant is true or false, not {text!r}")
        return np.bool_(text == "true")
    if dtype.is_float:
        return _parse_float(text, dtype)
    if text.startswith("nan") or text in ("inf", "-inf") or not text.lstrip("+-").isdigit():
        raise ValueError(f"{text!r} is not an integer, cannot be {dtype.short}")
    value = int(text)
    info = np.iinfo(dtype.np)
    if not info.min <= value <= info.max:
        raise ValueError(f"{value} is out of range for {dtype.short} [{info.min}, {info.max}]")
    return dtype.np.type(value)


def _uint_of(dt: np.dtype) -> type:
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]


def _parse_float(text: str, dtype: T.DType) -> np.generic:
    ftype = dtype.np.type
    if text.startswith("nan"):
        bits = int(text[4:-1], 16)
        utype = _uint_of(dtype.np)
        if bits > np.iinfo(utype).max:
            raise ValueError(f"NaN bit pattern {text[4:-1]} is wider than {dtype.short}")
        value = np.array(bits, dtype=utype).view(dtype.np)[()]
        if not np.isnan(value):
            raise ValueError(f"bit pattern {text[4:-1]} is not a NaN of {dtype.short}")
        return value
    if text in ("inf", "-inf"):
        return ftype(text)
    from fractions import Fraction  # only for decimal constants: fractions loads decimal, which a warm start skips

    try:
        exact = Fraction(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a {dtype.short} constant") from None
    with np.errstate(over="ignore"):
        guess = ftype(float(text))
        # float(text) rounds to float64 first; the correctly rounded value is the guess or a neighbour.
        candidates = [guess, np.nextafter(guess, ftype(-np.inf)), np.nextafter(guess, ftype(np.inf))]
    if exact == 0:
        return guess  # keeps the sign of -0.0
    finite = [c for c in candidates if np.isfinite(c)]
    best = min(finite, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(_uint_of(dtype.np))) & 1))
    largest = np.finfo(dtype.np).max
    half_ulp = (Fraction(float(largest)) - Fraction(float(np.nextafter(largest, ftype(0))))) / 2
    if abs(exact) >= Fraction(float(largest)) + half_ulp:
        raise ValueError(f"{text} is out of range for {dtype.short} (write inf for infinity)")
    return best


# ---------------------------------------------------------------- printing


def format_instr(instr: Instr, name: ValueNames) -> tuple[str, str | None]:
    """An instruction's text without its type, and its result type (None if it has no result)."""
    args = [name(a) for a in instr.args]
    attrs = list(instr.attrs)
    spec = SPECS.get(instr.op)
    memory = spec is not None and (spec.kind == "memory" or instr.op in MATRIX_MEMORY_OPS + MATRIX_TENSOR_OPS)
    if memory and args and attrs and isinstance(attrs[0], str):
        operands = [f"{attrs[0]}[{args[0]}]", *args[1:], *(_format_attr(a) for a in attrs[1:])]
    elif instr.op == "cm_map" and attrs and isinstance(attrs[0], ElementFunction):
        params = ", ".join(f"{name(p)}: {p.dtype.short}" for p in attrs[0].params)
        operands = [*args[:-1], f"{args[-1]} fn({params})"] if args else [f"fn({params})"]
    else:
        if instr.op in CONVERSION_OPS and instr.result is not None and _is_type_name(attrs, instr.result.dtype):
            attrs = []
        operands = args + [_format_attr(a) for a in attrs]
    text = instr.op + (" " + ", ".join(operands) if operands else "")
    if instr.result is None:
        return text, None
    return f"{name(instr.result)} = {text}", instr.result.dtype.short


def _is_type_name(attrs: list, dtype: T.DType) -> bool:
    return len(attrs) == 1 and attrs[0] == dtype.name


def _format_attr(a) -> str:
    if isinstance(a, np.generic):
        return format_constant(a)
    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, str):
        try:
            return T.by_name(a).short
        except TypeError:
            return a
    return str(a)


def format_header(stmt: If | Loop, name: ValueNames) -> str:
    """The first line of an ``if`` or ``loop`` without its ``{``: ``%5 = if %4 -> f32``."""
    results = ", ".join(name(r) for r in stmt.results)
    if isinstance(stmt, If):
        text = f"if {name(stmt.cond)}"
    else:
        text = f"loop {name(stmt.index)} = {name(stmt.start)} to {name(stmt.end)} step {name(stmt.step)}"
        if not stmt.unroll:
            text += " dont_unroll"
        if stmt.carried or stmt.inits:
            pairs = ", ".join(f"{name(c)} = {name(i)}" for c, i in zip(stmt.carried, stmt.inits))
            text += f" carry({pairs})"
    if stmt.results:
        text = f"{results} = {text} -> " + ", ".join(r.dtype.short for r in stmt.results)
    return text


def format_statement(stmt, name: ValueNames) -> str:
    """One statement as a single line of text (``if``/``loop``: their head), for error messages."""
    if isinstance(stmt, Instr):
        text, dtype = format_instr(stmt, name)
        return text if dtype is None else f"{text} : {dtype}"
    if isinstance(stmt, (If, Loop)):
        return format_header(stmt, name)
    return repr(stmt)


def print_kernel(k: Kernel) -> str:
    """The canonical text of ``k`` (``str(k)`` calls this); ``parse_kernel`` reads it back.

    >>> print(print_kernel(kernel))
    kernel scale local_size(64, 1, 1) {
      buffer x: f32 read
      ...
    }
    """
    name = ValueNames(k)
    lines: list[tuple[str, str | None]] = []  # (text without type, type or None)
    _print_block(k.body, 1, name, lines)
    typed = [len(text) for text, dtype in lines if dtype is not None and len(text) <= TYPE_COLUMN_MAX]
    column = max(typed, default=0)
    sx, sy, sz = k.local_size
    subgroup = f" subgroup_size({k.subgroup_size})" if k.subgroup_size is not None else ""
    out = [f"kernel {k.name} local_size({sx}, {sy}, {sz}){subgroup} {{"]
    out += [f"{INDENT}buffer {b.name}: {b.dtype.short} {b.access}" for b in k.buffers]
    out += [f"{INDENT}param %{p.name}: {p.dtype.short}" for p in k.params]
    out += [f"{INDENT}shared {s.name}: {s.dtype.short}[{s.size}]" for s in k.shared]
    if len(out) > 1 and lines:
        out.append("")
    for text, dtype in lines:
        out.append(text if dtype is None else f"{text:<{column}} : {dtype}")
    out.append("}")
    return "\n".join(out) + "\n"


# str(kernel) is its text form. The printer is written on core.py's classes, so core.py cannot
# import it: the method is bound here, and vkml/ir/__init__.py imports this module with core.
Kernel.__str__ = print_kernel


def _print_block(block: Block, depth: int, name: ValueNames, lines: list) -> None:
    pad = INDENT * depth
    for stmt in block.body:
        if (
            isinstance(stmt, Instr)
            and stmt.op == "cm_map"
            and stmt.attrs
            and isinstance(stmt.attrs[0], ElementFunction)
        ):
            text, dtype = format_instr(stmt, name)  # the function's body in braces, the result type after them
            lines.append((f"{pad}{text} {{", None))
            _print_block(stmt.attrs[0].body, depth + 1, name, lines)
            lines.append((pad + "}", dtype))
        elif isinstance(stmt, Instr):
            text, dtype = format_instr(stmt, name)
            lines.append((pad + text, dtype))
        elif isinstance(stmt, If):
            lines.append((f"{pad}{format_header(stmt, name)} {{", None))
            _print_block(stmt.then, depth + 1, name, lines)
            if stmt.orelse.body or stmt.orelse.yields or stmt.results:
                lines.append((pad + "} else {", None))
                _print_block(stmt.orelse, depth + 1, name, lines)
            lines.append((pad + "}", None))
        elif isinstance(stmt, Loop):
            lines.append((f"{pad}{format_header(stmt, name)} {{", None))
            _print_block(stmt.body, depth + 1, name, lines)
            lines.append((pad + "}", None))
        else:
            raise IRError(f"a block holds {stmt!r}, which is not an Instr, If or Loop")
    if block.yields:
        lines.append((pad + "yield " + ", ".join(name(v) for v in block.yields), None))


# ---------------------------------------------------------------- parsing


@functools.cache
def _parser() -> Lark:
    from lark import Lark  # lazy: off import vkml's path (the module docstring says why)

    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True)


def parse_kernel(text: str) -> Kernel:
    """Build the kernel that ``text`` describes (inverse of ``print_kernel``); raise IRError with line and column.

    >>> parse_kernel(print_kernel(kernel)) == kernel
    True
    """
    parser = _parser()  # imports lark
    from lark.exceptions import UnexpectedInput  # lazy: off import vkml's path

    try:
        tree = parser.parse(text)
    except UnexpectedInput as e:
        raise IRError(_syntax_message(e, text)) from None
    return _KernelReader(text).kernel(tree.children[0])


_FRIENDLY_TERMINALS = {
    "VALUE": "a value (%3, %n)",
    "NAME": "a name",
    "INT": "an integer",
    "NUMBER": "a number",
    "HEX": "a hex bit pattern (0x7fc00000)",
    "_NL": "end of line",
    "$END": "end of text",
}


def _describe_terminal(name: str) -> str:
    if name in _FRIENDLY_TERMINALS:
        return _FRIENDLY_TERMINALS[name]
    for t in _parser().terminals:
        if t.name == name and t.pattern.type == "str":
            return repr(t.pattern.value)
    return name


def _syntax_message(e: UnexpectedInput, text: str) -> str:
    from lark.exceptions import (
        UnexpectedCharacters,
        UnexpectedEOF,
        UnexpectedToken,
    )  # lazy: off import vkml's path

    where = f"line {e.line}, column {e.column}"
    if isinstance(e, UnexpectedCharacters):
        what = f"unexpected character {text[e.pos_in_stream]!r}"
        expected = e.allowed
    elif isinstance(e, UnexpectedToken):
        token = (
            "end of line" if e.token.type == "_NL" else "end of text" if e.token.type == "$END" else repr(str(e.token))
        )
        what = f"unexpected {token}"
        expected = e.expected
    else:  # UnexpectedEOF
        where, what, expected = "end of text", "unexpected end of text", getattr(e, "expected", ())
    if isinstance(e, UnexpectedEOF) or e.line in (None, -1):
        where = "end of text"
    shown = ", ".join(sorted({_describe_terminal(t) for t in expected if not t.startswith("__IGNORE")}))
    context = "" if where == "end of text" else _point_at(text, e.line, e.column)
    return f"IR text, {where}: {what}; expected {shown}{context}"


def _point_at(text: str, line: int, column: int) -> str:
    """The source line and a caret under ``column``, to end an error message."""
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"\n    {source}\n    {' ' * (column - 1)}^"


class _KernelReader:
    """Turns the parse tree into IR objects, defining values in text order."""

    def __init__(self, text: str):
        from lark import Token  # lazy: off import vkml's path (loaded: a reader exists only for a parse tree)

        self.token_type = Token
        self.text = text
        self.values: dict[str, Value] = {}

    def fail(self, at, message: str):
        line, column = (at.line, at.column) if isinstance(at, self.token_type) else (at.meta.line, at.meta.column)
        raise IRError(f"IR text, line {line}, column {column}: {message}{_point_at(self.text, line, column)}")

    def dtype(self, tok: Token) -> T.DType | T.MatrixType:
        try:
            return T.value_type(str(tok))
        except TypeError:
            known = ", ".join(t.short for t in T.ALL)
            self.fail(
                tok, f"unknown type {str(tok)!r}; known: {known} and matrices cm_<a|b|acc>_<f16|f32>_<rows>x<cols>[_wg]"
            )

    def define(self, tok: Token, dtype: T.DType, hint: str | None = None) -> Value:
        if str(tok) in self.values:
            self.fail(tok, f"value {tok} is defined twice")
        v = self.values[str(tok)] = Value(dtype, hint)
        return v

    def use(self, tok: Token) -> Value:
        v = self.values.get(str(tok))
        if v is None:
            self.fail(tok, f"value {tok} is used before it is defined")
        return v

    def kernel(self, tree: Tree) -> Kernel:
        name, sx, sy, sz, subgroup_size, *rest = tree.children
        buffers, params, shared, body = [], [], [], Block()
        for child in rest:
            if child.data == "buffer_decl":
                bname, btype, access = child.children
                if str(access) not in ACCESS_MODES:
                    self.fail(access, f"buffer access is read, write or readwrite, not {str(access)!r}")
                buffers.append(BufferDecl(str(bname), self.dtype(btype), str(access)))
            elif child.data == "param_decl":
                vtok, ptype = child.children
                pname = str(vtok)[1:]
                if not (pname[0].isalpha() or pname[0] == "_"):
                    self.fail(vtok, f"a param is named like %n, not {vtok}")
                dtype = self.dtype(ptype)
                params.append(ParamDecl(pname, dtype, self.define(vtok, dtype, pname)))
            elif child.data == "shared_decl":
                sname, stype, size = child.children
                shared.append(SharedDecl(str(sname), self.dtype(stype), int(size)))
            else:
                body.body.append(self.statement(child))
        local_size = (int(sx), int(sy), int(sz))
        subgroup = int(subgroup_size) if subgroup_size is not None else None
        return Kernel(str(name), local_size, tuple(buffers), tuple(params), tuple(shared), body, subgroup)

    def block(self, tree: Tree | None) -> Block:
        block = Block()
        if tree is None:
            return block
        *stmts, yields = tree.children
        block.body = [self.statement(s) for s in stmts]
        if yields is not None:
            block.yields = tuple(self.use(t) for t in yields.children[0].children)
        return block

    def statement(self, tree: Tree):
        results, rhs = tree.children
        result_toks = list(results.children) if results is not None else []
        if rhs.data == "op":
            return self.instr(result_toks, rhs)
        if rhs.data == "if_":
            return self.if_stmt(result_toks, rhs)
        if rhs.data == "map_":
            return self.map_stmt(result_toks, rhs)
        return self.loop_stmt(result_toks, rhs)

    def map_stmt(self, result_toks: list[Token], tree: Tree) -> Instr:
        *operands, body, type_tok = tree.children
        args = tuple(self.use(t) for t in operands if isinstance(t, self.token_type))
        params = tuple(
            self.define(p.children[0], self.dtype(p.children[1]))
            for p in operands
            if not isinstance(p, self.token_type)
        )
        function = ElementFunction(params, self.block(body))
        if len(result_toks) != 1:
            self.fail(tree, "cm_map defines one value")
        return Instr("cm_map", args, self.define(result_toks[0], self.dtype(type_tok)), (function,))

    def results(self, toks: list[Token], arrow: Tree | None, at: Tree) -> tuple[Value, ...]:
        types = [self.dtype(t) for t in arrow.children] if arrow is not None else []
        if len(types) != len(toks):
            self.fail(at, f"{len(toks)} result value(s) but {len(types)} result type(s) after ->")
        return tuple(self.define(t, d) for t, d in zip(toks, types))

    def if_stmt(self, result_toks: list[Token], tree: Tree) -> If:
        cond_tok, arrow, then, orelse = tree.children
        cond = self.use(cond_tok)
        stmt = If(cond, self.block(then), self.block(orelse))
        stmt.results = self.results(result_toks, arrow, tree)
        return stmt

    def loop_stmt(self, result_toks: list[Token], tree: Tree) -> Loop:
        index_tok, start_tok, end_tok, step_tok, dont_unroll, carry, arrow, body = tree.children
        start, end, step = self.use(start_tok), self.use(end_tok), self.use(step_tok)
        pairs = [c.children for c in carry.children] if carry is not None else []
        inits = tuple(self.use(init) for _, init in pairs)
        index = self.define(index_tok, start.dtype)
        carried = tuple(self.define(tok, init.dtype) for (tok, _), init in zip(pairs, inits))
        stmt = Loop(start, end, step, index, inits, carried, self.block(body), unroll=dont_unroll is None)
        stmt.results = self.results(result_toks, arrow, tree)
        return stmt

    def instr(self, result_toks: list[Token], tree: Tree) -> Instr:
        op_tok, *operands, type_tok = tree.children
        op = str(op_tok)
        if op not in SPECS:
            self.fail(op_tok, f"unknown instruction {op!r}; known: {', '.join(SPECS)}")
        if len(result_toks) > 1:
            self.fail(tree, f"{op} defines one value, not {len(result_toks)}")
        if bool(result_toks) != (type_tok is not None):
            self.fail(tree, f"{op}: a result value needs a type after ':' and a type needs a result value")
        dtype = self.dtype(type_tok) if type_tok is not None else None
        args, attrs = [], []
        for operand in operands:
            if operand is None:  # the grammar's placeholder when there are no operands
                continue
            if isinstance(operand, self.token_type):
                args.append(self.use(operand))
            elif operand.data == "indexed":
                attrs.append(str(operand.children[0]))
                args.append(self.use(operand.children[1]))
            elif operand.data == "word":
                word = operand.children[0]
                attrs.append(self.dtype(word).name if op in CONVERSION_OPS else str(word))
            else:
                attrs.append(self.literal(op, operand, dtype))
        if op in CONVERSION_OPS and not attrs and dtype is not None:
            attrs.append(dtype.name)
        result = self.define(result_toks[0], dtype) if dtype is not None else None
        return Instr(op, tuple(args), result, tuple(attrs))

    def literal(self, op: str, tree: Tree, dtype: T.DType | None):
        text = {"pos_inf": "inf", "neg_inf": "-inf", "true": "true", "false": "false"}.get(tree.data)
        if tree.data == "nan":
            text = f"nan({tree.children[0]})"
        elif text is None:
            text = str(tree.children[0])
        if op == "const":
            if dtype is None:
                self.fail(tree, "const needs a result type")
            try:
                return parse_constant(text, dtype)
            except ValueError as e:
                self.fail(tree, f"const: {e}")
        if tree.data != "literal" or not text.isdigit():
            self.fail(tree, f"{op}: expected a non-negative integer, not {text!r}")
        return int(text)
