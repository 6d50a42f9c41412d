"""The pages of statistics, norms, scans and selections (vkml/frontend/statistics.py, scans.py,
selection.py; their module docstrings state the orders)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

PAGES: dict[str, OpDoc] = {}
_STATS = vkml.frontend.statistics
_SCANS = vkml.frontend.scans
_VARIANCE_ORDER = (
    "two passes in float32, PyTorch's formula: the tree mean m = sum(x) / n (one correctly rounded division), "
    "then d = x - m, then the tree sum of d * d divided once by max(0, n - correction); float16 rounds once at the end"
)
_HILLIS_STEELE = (
    "the Hillis-Steele scan, fixed by the scanned length n alone: y(k+1)[i] = y(k)[i - 2^k] ⊕ y(k)[i] for "
    "i >= 2^k (else y(k)[i]), k = 0 .. ceil(log2 n) - 1, each step one parallel elementwise combine; the same bits "
    "on every device and layout"
)
PAGES.update(
    {
        "var": OpDoc(
            "reduce",
            (sig("vkml.var", _STATS.var), "Tensor.var(dim=None, unbiased=None, keepdim=False, *, correction=None)"),
            _STATS.var,
            precision=_VARIANCE_ORDER,
            special="NaN anywhere in a slice gives NaN; n - correction <= 0 divides by 0 (inf, or NaN for a zero sum "
            "of squares), as PyTorch; an empty slice gives NaN.",
            divergence="PyTorch's CPU kernel accumulates with Welford's method (or in float64 for a full reduction): "
            "the last bits may differ. A float16 input computes in float32 and rounds once. Over `dim=()` (all dims) "
            "of a tensor with size-1 dims, PyTorch's gradient is ±inf (its backward reads () as no dims); vkml's is "
            "the gradient over all dims.",
            gradient=THROUGH,
        ),
        "std": OpDoc(
            "reduce",
            (sig("vkml.std", _STATS.std), "Tensor.std(dim=None, unbiased=None, keepdim=False, *, correction=None)"),
            _STATS.std,
            precision="the correctly rounded sqrt of `var`'s float32 variance (" + _VARIANCE_ORDER + ")",
            special="As `var`; sqrt(inf) = inf.",
            divergence="As `var`: PyTorch accumulates in another order, so the last bits may differ; its gradient "
            "over `dim=()` is ±inf where a dim has size 1.",
            gradient="Through `var`, then PyTorch's std rule: g / (2 std), and 0 where std is 0 (a constant row; "
            "sqrt's rule alone would give NaN there). std_mean likewise.",
        ),
        "var_mean": OpDoc(
            "reduce",
            (sig("vkml.var_mean", _STATS.var_mean),),
            _STATS.var_mean,
            precision=_VARIANCE_ORDER + "; the mean returned is the m the variance subtracts",
            special="As `var` and `mean`.",
            divergence="As `var`.",
            gradient=THROUGH,
        ),
        "std_mean": OpDoc(
            "reduce",
            (sig("vkml.std_mean", _STATS.std_mean),),
            _STATS.std_mean,
            precision="as `std`; the mean returned is the m the variance subtracts",
            special="As `std` and `mean`.",
            divergence="As `var`.",
            gradient=THROUGH,
        ),
        "all": OpDoc(
            "reduce",
            (sig("vkml.all", _STATS.all), "Tensor.all(dim=None, keepdim=False)"),
            _STATS.all,
            precision="exact (a count of zeros by `sum`)",
            special="NaN is nonzero, so True; ±0 is False. all of no elements is True. `dim=()` reduces nothing "
            "(each element's truth), as PyTorch's. A uint8 input gives uint8, as PyTorch's.",
            gradient="Not differentiable: the result is a bool.",
        ),
        "any": OpDoc(
            "reduce",
            (sig("vkml.any", _STATS.any), "Tensor.any(dim=None, keepdim=False)"),
            _STATS.any,
            precision="exact (a count of nonzeros by `sum`)",
            special="NaN is nonzero, so True; ±0 is False. any of no elements is False. `dim=()` reduces nothing, "
            "as PyTorch's.",
            divergence="vkml has no uint8: the result is always bool (PyTorch gives uint8 for a uint8 input).",
            gradient="Not differentiable: the result is a bool.",
        ),
        "count_nonzero": OpDoc(
            "reduce",
            (sig("vkml.count_nonzero", _STATS.count_nonzero), "Tensor.count_nonzero(dim=None)"),
            _STATS.count_nonzero,
            precision="exact (int64)",
            special="NaN counts as nonzero; -0.0 as zero.",
            gradient="Not differentiable: the result is an integer.",
        ),
        "nansum": OpDoc(
            "reduce",
            (sig("vkml.nansum", _STATS.nansum), "Tensor.nansum(dim=None, keepdim=False, *, dtype=None)"),
            _STATS.nansum,
            precision="`sum`'s tree with each NaN replaced by +0.0",
            special="NaN is skipped; inf + -inf is still NaN; all-NaN gives 0.",
            gradient="Through `where` and `sum`: 1 at each non-NaN element, 0 at a NaN.",
        ),
        "nanmean": OpDoc(
            "reduce",
            (sig("vkml.nanmean", _STATS.nanmean), "Tensor.nanmean(dim=None, keepdim=False, *, dtype=None)"),
            _STATS.nanmean,
            precision="`nansum`'s tree sum in float32 divided (correctly rounded) by the count of non-NaN elements",
            special="An all-NaN or empty slice gives NaN (0 / 0), as PyTorch.",
            divergence="The gradient of an all-NaN slice is 0 (PyTorch: NaN, from 0 * inf).",
            gradient=THROUGH,
        ),
        "aminmax": OpDoc(
            "reduce",
            (sig("vkml.aminmax", _STATS.aminmax), "Tensor.aminmax(*, dim=None, keepdim=False)"),
            _STATS.aminmax,
            precision="exact (`amin` and `amax`)",
            special="As `amin` and `amax`: any NaN gives NaN; an empty reduction raises. Returns "
            "`vkml.return_types.aminmax(min, max)`.",
            divergence="As `amin` and `amax` (the sign of a zero).",
            gradient="Through `amin` and `amax`: ties share the gradient evenly.",
        ),
        "norm": OpDoc(
            "reduce",
            (sig("vkml.norm", _STATS.norm), "Tensor.norm(p='fro', dim=None, keepdim=False, dtype=None)"),
            _STATS.norm,
            precision="as `linalg_vector_norm`",
            special="As `linalg_vector_norm`.",
            divergence="PyTorch sums in another order: the last bits may differ. p='nuc' takes the singular values "
            "of `linalg_svdvals` (computed on the host in float64).",
            gradient="As `linalg_vector_norm`.",
        ),
        "linalg_vector_norm": OpDoc(
            "reduce",
            (sig("vkml.linalg.vector_norm", _STATS.vector_norm),),
            _STATS.vector_norm,
            precision="in float32, rounded once to the result dtype: ord 2 is the correctly rounded sqrt of the tree sum "
            "of x*x; 1 the tree sum of |x|; ±inf the max/min of |x| (exact); 0 the count of nonzeros; other p "
            "pow(tree sum of pow(|x|, p), 1/p), pow within 1 ulp",
            special="NaN anywhere gives NaN; ±inf norms of an empty slice raise, as PyTorch; ord 0 counts NaN.",
            divergence="PyTorch sums in another order (and may scale): the last bits may differ.",
            gradient="Through the ops it is built of; at a zero norm (and at x = 0 for p-norms) the gradient is 0, "
            "as PyTorch's; ±inf norms share the gradient evenly among ties, as PyTorch's; ord 0 gives no "
            "gradient (None), as PyTorch's.",
        ),
        "linalg_matrix_norm": OpDoc(
            "reduce",
            (sig("vkml.linalg.matrix_norm", _STATS.matrix_norm),),
            _STATS.matrix_norm,
            precision="'fro' as `linalg_vector_norm` over both dims; ±1 and ±inf: tree sums of |A| along columns or "
            "rows, then their exact max or min",
            special="NaN anywhere in a matrix gives NaN.",
            divergence="ord 'nuc', 2 and -2 are the sum, max and min of `linalg_svdvals` (computed on the host in "
            "float64, rounded once): the last bits may differ from PyTorch's float32 LAPACK.",
            gradient=THROUGH,
        ),
        "linalg_norm": OpDoc(
            "reduce",
            (sig("vkml.linalg.norm", _STATS.linalg_norm),),
            _STATS.linalg_norm,
            precision="as `linalg_vector_norm` (one dim, or every element) or `linalg_matrix_norm` (two dims)",
            special="As those functions.",
            divergence="Matrix ords 'nuc', 2 and -2 as `linalg_matrix_norm`.",
            gradient=THROUGH,
        ),
        "cumsum": OpDoc(
            "scan",
            (sig("vkml.cumsum", _SCANS.cumsum), "Tensor.cumsum(dim, *, dtype=None)"),
            _SCANS.cumsum,
            precision=_HILLIS_STEELE + "; ⊕ is +; float16 adds in float32 and rounds each result once",
            special="NaN propagates from its position on; a cumsum of -0.0 stays -0.0 (the identity never enters).",
            divergence="PyTorch adds sequentially: float results may differ in the last bits (error bound "
            "γ_⌈log2 n⌉·Σ|x| here).",
            gradient="Through the slices, `cat` and additions it is built of (a reversed running sum).",
        ),
        "cumprod": OpDoc(
            "scan",
            (sig("vkml.cumprod", _SCANS.cumprod), "Tensor.cumprod(dim, *, dtype=None)"),
            _SCANS.cumprod,
            precision=_HILLIS_STEELE + "; ⊕ is ×; float16 multiplies in float32 and rounds each result once",
            special="NaN propagates from its position on; inf * 0 is NaN.",
            divergence="PyTorch multiplies sequentially: float results may differ in the last bits.",
            gradient="Through the products it is built of: exact with zeros in the input (no division).",
        ),
        "cummax": OpDoc(
            "scan",
            (sig("vkml.cummax", _SCANS.cummax), "Tensor.cummax(dim)"),
            _SCANS.cummax,
            precision="exact; " + _HILLIS_STEELE + "; ⊕ keeps the later (value, index) when its value is NaN or >= "
            "the earlier's (and the earlier's is not NaN)",
            special="As PyTorch: a NaN wins and stays, with the index of the last NaN so far; of equal values (also "
            "+0 and -0) the later index wins. Returns `vkml.return_types.cummax(values, indices)`.",
            gradient="Through `where`: each value's gradient goes to the element its index names, as PyTorch's.",
        ),
        "cummin": OpDoc(
            "scan",
            (sig("vkml.cummin", _SCANS.cummin), "Tensor.cummin(dim)"),
            _SCANS.cummin,
            precision="exact; " + _HILLIS_STEELE + "; ⊕ keeps the later (value, index) when its value is NaN or <= "
            "the earlier's (and the earlier's is not NaN)",
            special="As PyTorch: a NaN wins and stays, with the index of the last NaN so far; of equal values the "
            "later index wins. Returns `vkml.return_types.cummin(values, indices)`.",
            gradient="Through `where`: each value's gradient goes to the element its index names, as PyTorch's.",
        ),
        "logcumsumexp": OpDoc(
            "scan",
            (sig("vkml.logcumsumexp", _SCANS.logcumsumexp), "Tensor.logcumsumexp(dim)"),
            _SCANS.logcumsumexp,
            precision=_HILLIS_STEELE + "; a ⊕ b = log(exp(a - m) + exp(b - m)) + m, m = max(a, b) (0 where ±inf), "
            "in float32; exp and log ≤ 1 ulp",
            special="-inf entries add nothing; all -inf so far gives -inf; +inf gives +inf; NaN propagates.",
            divergence="PyTorch adds sequentially with log1p: results near 0 may differ by about 2^-23 absolutely. "
            "PyTorch's float32 gradient where the inputs are large (all 1e4) is off by about 1e-3 relatively "
            "(its exp(x - out) rounds out first); vkml's matches the float64 gradient there to float32 precision.",
            gradient=THROUGH,
        ),
    }
)
_SELECTION = vkml.frontend.selection
_RANKS = (
    "exact: each element's stable rank (the count of elements before it in PyTorch's order, NaN last) is its "
    "place in `sort`'s stable order (the inverse permutation, O(n log^2 n) device work a row), and the selected "
    "element comes through a one-hot tree sum unchanged"
)
_TO_INDEX = "Through a one-hot selection: the gradient goes to the element the index names, as PyTorch's."
_MEDIAN_GRAD = (
    "With `dim`: " + _TO_INDEX[0].lower() + _TO_INDEX[1:] + " Of all elements: shared evenly among the elements "
    "equal to the result (the NaNs when it is NaN), as PyTorch's `evenly_distribute_backward`."
)
_TIES = (
    "With ties, the index is the tied element whose stable rank was selected; PyTorch's quickselect may name "
    "another of them (its choice is unspecified)."
)
PAGES.update(
    {
        "kthvalue": OpDoc(
            "reduce",
            (sig("vkml.kthvalue", _SELECTION.kthvalue), "Tensor.kthvalue(k, dim=-1, keepdim=False)"),
            _SELECTION.kthvalue,
            precision=_RANKS,
            special="NaN sorts after every number (k = n picks a NaN if there is one). Returns "
            "`vkml.return_types.kthvalue(values, indices)`.",
            divergence=_TIES,
            gradient=_TO_INDEX,
        ),
        "median": OpDoc(
            "reduce",
            (sig("vkml.median", _SELECTION.median), "Tensor.median(dim=None, keepdim=False)"),
            _SELECTION.median,
            precision=_RANKS,
            special="The lower median; a NaN in the slice gives NaN with the first NaN's index; the median of no "
            "elements is NaN. With `dim`, returns `vkml.return_types.median(values, indices)`.",
            divergence=_TIES,
            gradient=_MEDIAN_GRAD,
        ),
        "nanmedian": OpDoc(
            "reduce",
            (sig("vkml.nanmedian", _SELECTION.nanmedian), "Tensor.nanmedian(dim=None, keepdim=False)"),
            _SELECTION.nanmedian,
            precision=_RANKS,
            special="NaN is skipped; an all-NaN slice gives NaN (index 0, the first NaN).",
            divergence=_TIES,
            gradient=_MEDIAN_GRAD,
        ),
        "mode": OpDoc(
            "reduce",
            (sig("vkml.mode", _SELECTION.mode), "Tensor.mode(dim=-1, keepdim=False)"),
            _SELECTION.mode,
            precision="exact: counts of equal elements (each value's run in the row's stable sort, found by "
            "binary search), then the exact max and min",
            special="Of equally frequent values the smallest; its last position is the index (as PyTorch). NaNs "
            "count as one value that sorts after every number.",
            divergence="PyTorch's result with NaN depends on where its unstable sort puts them (NaN for "
            "[nan, nan, 1], but 1 for [nan, 1, 1, nan, nan]); vkml's follows the rule above. In a row of more "
            "than 16 elements PyTorch's index is wherever that sort leaves one of the mode's positions (1 of "
            "17 zeros, 24 of 50), vkml's is still the last.",
            gradient=_TO_INDEX,
        ),
        "quantile": OpDoc(
            "reduce",
            (
                sig("vkml.quantile", _SELECTION.quantile),
                "Tensor.quantile(q, dim=None, keepdim=False, *, interpolation='linear')",
            ),
            _SELECTION.quantile,
            precision="positions q·(n-1) in float32 and the neighbours exactly (as `kthvalue`); linear and midpoint "
            "use torch.lerp's formula, each operation rounded",
            special="A NaN in the slice gives NaN.",
            divergence="PyTorch's vectorised lerp fuses its multiply-add: linear and midpoint results may differ by "
            "1 ulp. float64 inputs do not exist in vkml (PyTorch takes float32 and float64).",
            gradient=THROUGH,
        ),
        "nanquantile": OpDoc(
            "reduce",
            (
                sig("vkml.nanquantile", _SELECTION.nanquantile),
                "Tensor.nanquantile(q, dim=None, keepdim=False, *, interpolation='linear')",
            ),
            _SELECTION.nanquantile,
            precision="as `quantile`, over the elements that are not NaN (positions q·(count-1))",
            special="NaN is skipped; an all-NaN slice gives NaN.",
            divergence="As `quantile`.",
            gradient=THROUGH,
        ),
    }
)
