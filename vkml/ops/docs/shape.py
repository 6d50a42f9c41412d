"""The pages of the shape and construction ops (vkml/frontend/shape.py, construction.py)."""

from __future__ import annotations

from .page import LEAF, THROUGH, Listed, OpDoc, method, sig, vkml

PAGES: dict[str, OpDoc] = {}
construction_ops = vkml.frontend.construction
shape_ops = vkml.frontend.shape

MATMUL_ORDER = "as `matmul`: each output adds its float32 products in ascending k from -0.0 (docs/ops/matmul.md)"
# name -> (kind, aliases, precision, special, divergence); every page's gradient is its parts'
SHAPE_OPS = {
    "stack": ("movement", (), "", "", ""),
    "hstack": ("movement", (), "", "", ""),
    "vstack": ("movement", ("row_stack",), "", "", ""),
    "dstack": ("movement", (), "", "", ""),
    "column_stack": ("movement", (), "", "", ""),
    "atleast_1d": ("movement", (), "", "", ""),
    "atleast_2d": ("movement", (), "", "", ""),
    "atleast_3d": ("movement", (), "", "", ""),
    "split": ("movement", (), "", "", ""),
    "chunk": ("movement", (), "", "", ""),
    "tensor_split": ("movement", (), "", "", ""),
    "hsplit": ("movement", (), "", "", ""),
    "vsplit": ("movement", (), "", "", ""),
    "unbind": ("movement", (), "", "", ""),
    "narrow": ("movement", (), "", "", ""),
    "flatten": ("movement", (), "", "", ""),
    "unflatten": ("movement", (), "", "", ""),
    "movedim": ("movement", ("moveaxis",), "", "", ""),
    "swapaxes": ("movement", (), "", "", ""),
    "swapdims": ("movement", (), "", "", ""),
    "t": ("movement", (), "", "", ""),
    "mT": ("movement", (), "", "", ""),
    "view_as": ("movement", (), "", "", ""),
    "reshape_as": ("movement", (), "", "", ""),
    "expand_as": ("movement", (), "", "", ""),
    "repeat": ("movement", (), "", "", ""),
    "tile": ("movement", (), "", "", ""),
    "repeat_interleave": ("movement", (), "", "", ""),
    "roll": ("movement", (), "", "", ""),
    "fliplr": ("movement", (), "", "", ""),
    "flipud": ("movement", (), "", "", ""),
    "rot90": ("movement", (), "", "", ""),
    "tril": ("movement", (), "", "Kept elements are moved, never changed; the others are +0 (False for bool).", ""),
    "triu": ("movement", (), "", "Kept elements are moved, never changed; the others are +0 (False for bool).", ""),
    "diagonal": (
        "movement",
        (),
        "",
        "",
        "The result is a view written through only where the two dims flatten as a view of the storage; "
        "PyTorch's is always a view.",
    ),
    "diag": ("movement", (), "", "Off-diagonal elements of a made matrix are +0.", ""),
    "diag_embed": ("movement", (), "", "Off-diagonal elements are +0.", ""),
    "meshgrid": ("movement", (), "", "", "Without `indexing`, PyTorch warns and uses 'ij'; vkml uses 'ij' silently."),
    "cartesian_prod": ("movement", (), "", "", ""),
    "pad_nd": (
        "movement",
        (),
        "",
        "",
        "'circular' with a pad larger than what cropping leaves is an error; PyTorch reads memory outside the input.",
    ),
    "tril_indices": ("creation", (), "", "", ""),
    "triu_indices": ("creation", (), "", "", ""),
    "trace": ("composite", (), "the diagonal summed over `sum`'s pairwise tree", "As `sum`.", ""),
    "outer": ("composite", ("ger",), "one correctly rounded product per element (the same bits as PyTorch)", "", ""),
    "mm": ("composite", (), MATMUL_ORDER, "As `matmul`.", "As `matmul` (BLAS sums in another order)."),
    "bmm": ("composite", (), MATMUL_ORDER, "As `matmul`.", "As `matmul` (BLAS sums in another order)."),
    "mv": ("composite", (), MATMUL_ORDER, "As `matmul`.", "As `matmul` (BLAS sums in another order)."),
    "dot": ("composite", (), MATMUL_ORDER, "As `matmul`.", "As `matmul` (BLAS sums in another order)."),
    "addmm": ("composite", (), MATMUL_ORDER + ", then the scaled sum", "`beta=0` ignores `input` (NaN included).", ""),
    "baddbmm": (
        "composite",
        (),
        MATMUL_ORDER + ", then the scaled sum",
        "`beta=0` ignores `input` (NaN included).",
        "",
    ),
    "addmv": ("composite", (), MATMUL_ORDER + ", then the scaled sum", "`beta=0` ignores `input` (NaN included).", ""),
    "tensordot": ("composite", (), MATMUL_ORDER, "As `matmul`.", ""),
    "einsum": (
        "composite",
        (),
        "a contraction of two operands is a `matmul` (ascending k from -0.0), other sums `sum`'s pairwise tree "
        "(the lowering is described above)",
        "As `matmul` and `sum`.",
        "Other summation orders than PyTorch's (which also uses BLAS): float results differ in the last bits.",
    ),
}


def _shape_calls(name: str, aliases: tuple[str, ...]) -> tuple[object, ...]:
    fn = getattr(shape_ops, name)
    calls = [Listed(sig(f"vkml.{name}", fn), getattr(vkml, name), fn)]
    calls += [Listed(f"vkml.{a}(...)", getattr(vkml, a)) for a in aliases]
    if name == "pad_nd":
        calls.append("vkml.nn.functional.pad(input, pad, mode='reflect' | 'replicate' | 'circular')")
    elif name == "mT":
        calls.append("Tensor.mT")
    elif name == "tile":
        calls.append("Tensor.tile(dims) or Tensor.tile(*dims)")
    else:
        calls.append(Listed(method(name, fn), getattr(vkml.Tensor, name)))
    calls += [Listed(method(a, fn), getattr(vkml.Tensor, a)) for a in aliases]
    return tuple(calls)


for _name, (_kind, _aliases, _precision, _special, _divergence) in SHAPE_OPS.items():
    PAGES[_name] = OpDoc(
        _kind,
        _shape_calls(_name, _aliases),
        getattr(shape_ops, _name),
        precision=_precision or OpDoc.precision,
        special=_special,
        divergence=_divergence,
        gradient=LEAF if _kind == "creation" else THROUGH,
    )

RANDOM_VALUES = (
    "PyTorch's CPU values for the same seed (docs/random.md; tests/test_random.py), drawn on the host and "
    "uploaded; the same bits on every vkml device."
)
# name -> (precision, divergence): the creation ops of vkml/frontend/construction.py
CONSTRUCTION_OPS = {
    "eye": ("exact", ""),
    "linspace": (
        "exact: PyTorch's CPU formula in the dtype's precision (start + i·step, then end - (n-1-i)·step), each value "
        "one fused multiply-add for float32, float64 and the integers (float16 and bfloat16 round each operation)",
        "PyTorch run on a CPU without FMA (or `ATEN_CPU_CAPABILITY=default`) rounds the product and the sum apart: "
        "some float values differ from it in the last bits.",
    ),
    "logspace": (
        "exact: PyTorch's CPU formula, the ends and their difference in the dtype, the exponents and `base ** e` in "
        "float64, each power rounded once to the dtype",
        "",
    ),
    "empty": ("exact", "The values are zeros (PyTorch's are whatever the memory held)."),
    "empty_like": ("exact", "The values are zeros (PyTorch's are whatever the memory held)."),
    "randint": (
        "exact: `word % (high - low) + low`, one 32-bit word per element, a 64-bit draw (two words) where the "
        "range reaches 2^32 and the dtype is int64, float64, float32 or bfloat16",
        RANDOM_VALUES,
    ),
    "randint_like": ("exact: as `randint`", RANDOM_VALUES),
    "randperm": (
        "exact: PyTorch's Fisher–Yates from the front, element i swapped with i + word % (n - i)",
        RANDOM_VALUES + " The swaps run in Python on the host (about 0.1 s per million elements).",
    ),
    "bernoulli": (
        "exact: `u < p` with a float uniform per element (a double one for float64 or a number `p`)",
        RANDOM_VALUES + " The uniforms are compared with a tensor of probabilities where it is, so it is not read "
        "back: probabilities outside [0, 1] are no error (PyTorch's CPU op checks them).",
    ),
    "normal": (
        "exact: `normal_(0, std)` then `+ mean` for a number std, `normal_(0, 1)` then `· std + mean` for a tensor "
        "(as PyTorch), the draws `randn`'s",
        RANDOM_VALUES,
    ),
    "multinomial": (
        "exact: with replacement and more than one sample PyTorch's CPU kernel on the host (running sums in "
        "float32 divided by the total, a binary search per double uniform); without replacement or for one sample, "
        "`argmax`/`topk` of `input / q` for exponential draws q (PyTorch's fast path)",
        RANDOM_VALUES + " With replacement (more than one sample) the weights are read back (as PyTorch's); "
        "neither path checks them: "
        "negative, NaN or all-zero rows give unspecified samples where PyTorch raises.",
    ),
}
for _name, (_precision, _divergence) in CONSTRUCTION_OPS.items():
    _fn = getattr(construction_ops, _name)
    PAGES[_name] = OpDoc(
        "creation",
        (sig(f"vkml.{_name}", _fn),) + ((f"Tensor.{_name}(...)",) if _name in ("bernoulli", "multinomial") else ()),
        _fn,
        precision=_precision,
        special="Values are made, not moved: see the text above.",
        divergence=_divergence,
        gradient="Differentiable in tensor `mean` and `std` (PyTorch's is not)." if _name == "normal" else LEAF,
    )

_poisson = vkml.frontend.poisson.poisson
PAGES["poisson"] = OpDoc(
    "creation",
    (sig("vkml.poisson", _poisson),),
    _poisson,
    precision="PyTorch's CPU sampler (PTRS rejection from rate 10, Knuth's products below) in float64 on the host: PyTorch's samples after the same seed",
    special="A rate of 0 gives 0; a negative or NaN rate raises PyTorch's RuntimeError.",
    divergence="An infinite rate raises (PyTorch's sampler does not end). The rates are read back and sampled on the "
    "host, element by element, as PyTorch's CPU kernel does; the result is the same bits on every vkml device.",
    gradient="poisson",
    backends="host (float64, PyTorch's sampler on vkml's generator); the result is copied to the rates' device",
)
