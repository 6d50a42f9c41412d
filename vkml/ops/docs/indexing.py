"""The pages of the indexing ops (vkml/frontend/indexing.py, index_ops.py)."""

from __future__ import annotations

from .page import THROUGH, Listed, OpDoc, method, sig, vkml

PAGES: dict[str, OpDoc] = {}
_IX = vkml.frontend.indexing
_IXO = vkml.frontend.index_ops
_CHECKED = (
    "The index is read back and checked when the op is called (PyTorch's CPU does the same; CUDA checks in "
    "the kernel): an out-of-range index raises there, naming the op and the index, and no tensor changes. "
)
_IN_ORDER = (
    "repeated positions combine in index order (row-major order of the index), after the old value, one "
    "invocation walking each position's list: the same bits on every device and run"
)
_UNSPECIFIED = "PyTorch leaves the order of repeated indices unspecified (its CPU goes in index order, as vkml; CUDA uses atomics)."
_LAST_WINS = (
    "A position named more than once keeps the last value that names it (PyTorch leaves it unspecified; its CPU "
    "keeps the last)."
)
_WRITE_GRAD = (
    "Zero at the written positions for the input; every source element gets the gradient at the position it "
    "names, an overwritten one too, as PyTorch's."
)
_GATHER_GRAD = "The gradient is added back into the positions read, in index order (`RULES['index']`)."


def _ix_extra(name, module, calls, precision, special="", divergence="", gradient=THROUGH):
    fn = getattr(module, name)
    return OpDoc(
        "indexing",
        (Listed(sig(f"vkml.{name}", fn), getattr(vkml, name), fn), *calls),
        fn,
        precision=precision,
        special=special,
        divergence=divergence,
        gradient=gradient,
    )


PAGES.update(
    {
        "gather": _ix_extra("gather", _IX, ("Tensor.gather(dim, index)",), "exact. " + _CHECKED, gradient=_GATHER_GRAD),
        "index_select": _ix_extra(
            "index_select", _IX, ("Tensor.index_select(dim, index)",), "exact. " + _CHECKED, gradient=_GATHER_GRAD
        ),
        "take_along_dim": _ix_extra(
            "take_along_dim",
            _IX,
            ("Tensor.take_along_dim(indices, dim=None)",),
            "exact. " + _CHECKED,
            divergence="An index out of range raises; PyTorch's CPU returns other elements for some of them.",
            gradient=_GATHER_GRAD,
        ),
        "take": _ix_extra("take", _IXO, ("Tensor.take(index)",), "exact. " + _CHECKED, gradient=_GATHER_GRAD),
        "masked_select": _ix_extra(
            "masked_select",
            _IXO,
            ("Tensor.masked_select(mask)",),
            "exact. The mask is read back: the result's length depends on it",
            gradient=_GATHER_GRAD,
        ),
        "nonzero": _ix_extra(
            "nonzero",
            _IX,
            (
                "Tensor.nonzero(*, as_tuple=False)",
                "vkml.where(condition)",
                "vkml.nonzero_static(input, *, size, fill_value=-1)",
                "Tensor.nonzero_static(*, size, fill_value=-1)",
            ),
            "exact: the input is read back and the indices computed on the host",
            special="NaN is nonzero; -0.0 is zero. A 0-dim input gives shape (1, 0) or (0, 0); with `as_tuple`, "
            "it counts as 1-D, as PyTorch.",
            gradient="Not differentiable: the result is an index.",
        ),
        "argwhere": _ix_extra(
            "argwhere",
            _IXO,
            ("Tensor.argwhere()",),
            "exact, as `nonzero`",
            special="As `nonzero`.",
            gradient="Not differentiable: the result is an index.",
        ),
        "scatter": _ix_extra(
            "scatter",
            _IX,
            (
                "Tensor.scatter(dim, index, src=None, *, value=None, reduce=None)",
                "Tensor.scatter_(dim, index, src=None, *, value=None, reduce=None)",
            ),
            "exact without `reduce`; with reduce='add' or 'multiply' (float16 in float32, rounded once, as "
            "PyTorch's CPU) " + _IN_ORDER + ". " + _CHECKED,
            divergence=_LAST_WINS + " " + _UNSPECIFIED,
            gradient=_WRITE_GRAD + " With `reduce`, backward raises, as PyTorch's (no derivative).",
        ),
        "scatter_add": _ix_extra(
            "scatter_add",
            _IX,
            ("Tensor.scatter_add(dim, index, src)", "Tensor.scatter_add_(dim, index, src)"),
            _IN_ORDER + " (float16 adds in float32 and rounds once per position, as PyTorch's CPU). " + _CHECKED,
            divergence=_UNSPECIFIED,
            gradient="The input's gradient passes through; `src` gets the gradient at the positions it names.",
        ),
        "scatter_reduce": _ix_extra(
            "scatter_reduce",
            _IXO,
            (
                "Tensor.scatter_reduce(dim, index, src, reduce, *, include_self=True)",
                "Tensor.scatter_reduce_(dim, index, src, reduce, *, include_self=True)",
            ),
            _IN_ORDER + " (float16 in float32, rounded once per position, as PyTorch's CPU); 'mean' divides the "
            "sum by the count once (integers: floor division, as PyTorch). " + _CHECKED,
            special="'amax'/'amin': a NaN wins; of equal values (+0 and -0 too) the one already there stays, as "
            "PyTorch's CPU. Without `include_self` a position starts from the identity (+0 for 'sum' and 'mean', "
            "so a sum of -0.0 is +0.0, as PyTorch).",
            divergence=_UNSPECIFIED + " With an index smaller than `src`, `src`'s elements beyond it get a zero "
            "gradient; PyTorch's backward raises there (a gradient of the index's shape).",
            gradient="PyTorch's formulas: 'sum' and 'mean' spread the gradient (divided by the count); "
            "'amax'/'amin' share it evenly among the elements equal to the result; 'prod' gives each element the "
            "product of the others (the result divided by it, or exactly where it is the only zero).",
        ),
        "index_add": _ix_extra(
            "index_add",
            _IXO,
            ("Tensor.index_add(dim, index, source, *, alpha=1)", "Tensor.index_add_(dim, index, source, *, alpha=1)"),
            _IN_ORDER + "; float16 rounds after each add, as PyTorch's CPU. " + _CHECKED,
            divergence="`alpha * source` is rounded before it is added; PyTorch's CPU fuses the two into one "
            "rounding, so with an alpha other than a power of two a result may differ by 1 ulp. " + _UNSPECIFIED,
            gradient="The input's gradient passes through; `source` gets alpha times the gradient of the slices it "
            "adds to.",
        ),
        "index_copy": _ix_extra(
            "index_copy",
            _IXO,
            ("Tensor.index_copy(dim, index, source)", "Tensor.index_copy_(dim, index, source)"),
            "exact. " + _CHECKED,
            divergence=_LAST_WINS,
            gradient=_WRITE_GRAD,
        ),
        "index_fill": _ix_extra(
            "index_fill",
            _IXO,
            ("Tensor.index_fill(dim, index, value)", "Tensor.index_fill_(dim, index, value)"),
            "exact: `value` converted to the input's dtype (PyTorch's rule), put in by a select. " + _CHECKED,
            gradient="Zero at the filled slices for the input; a tensor `value` gets the sum of the gradient there.",
        ),
        "index_reduce": _ix_extra(
            "index_reduce",
            _IXO,
            (
                "Tensor.index_reduce(dim, index, source, reduce, *, include_self=True)",
                "Tensor.index_reduce_(dim, index, source, reduce, *, include_self=True)",
            ),
            _IN_ORDER + "; float16 rounds after each step, as PyTorch's CPU; 'mean' as `scatter_reduce`'s. " + _CHECKED,
            special="As `scatter_reduce`.",
            divergence=_UNSPECIFIED,
            gradient="As `scatter_reduce`'s.",
        ),
        "masked_scatter": _ix_extra(
            "masked_scatter",
            _IXO,
            ("Tensor.masked_scatter(mask, source)", "Tensor.masked_scatter_(mask, source)"),
            "exact. The mask is read back",
            gradient="Zero where the mask holds for the input; `source`'s first elements get the gradient at the "
            "positions they fill, the others zero.",
        ),
        "put": _ix_extra(
            "put",
            _IXO,
            ("Tensor.put(index, source, accumulate=False)", "Tensor.put_(index, source, accumulate=False)"),
            "exact, or with `accumulate` "
            + _IN_ORDER
            + " (float16 rounds after each add, as PyTorch's CPU). "
            + _CHECKED,
            divergence=_LAST_WINS + " " + _UNSPECIFIED,
            gradient=_WRITE_GRAD + " With `accumulate`, the input's gradient passes through.",
        ),
        "index_put": _ix_extra(
            "index_put",
            _IXO,
            (
                "Tensor.index_put(indices, values, accumulate=False)",
                "Tensor.index_put_(indices, values, accumulate=False)",
                "Tensor.__setitem__(index, value)",
            ),
            "exact, or with `accumulate` "
            + _IN_ORDER
            + " (float16 rounds after each add, as PyTorch's CPU). "
            + _CHECKED,
            divergence=_LAST_WINS + " " + _UNSPECIFIED,
            gradient=_WRITE_GRAD + " With `accumulate`, the input's gradient passes through.",
        ),
    }
)


PAGES["fill_diagonal_"] = OpDoc(
    "indexing",
    (method("fill_diagonal_", vkml.frontend.diagonal_fill.fill_diagonal_),),
    vkml.frontend.diagonal_fill.fill_diagonal_,
    precision="exact: `fill_value` converted to the tensor's dtype (PyTorch's rule), put in by `masked_fill_`.",
    divergence="`wrap=True` follows the row-major positions of the tensor's shape; PyTorch's follows its storage, "
    "which is the same for a contiguous tensor and may differ for a strided one.",
    gradient="Zero at the filled positions; elsewhere the gradient passes through.",
)
