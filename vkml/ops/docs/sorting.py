"""The pages of sorting, searching, counting and combining (vkml/frontend/sorting.py, searching.py,
counting.py, combining.py; their module docstrings state the algorithms)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

PAGES: dict[str, OpDoc] = {}
_SORTING = vkml.frontend.sorting
_SEARCHING = vkml.frontend.searching
_COUNTING = vkml.frontend.counting
_COMBINING = vkml.frontend.combining
_BITONIC = (
    "exact: a bitonic sorting network of device kernels over (key, original position) pairs, so the order is the "
    "unique stable one on every device; the values are gathered from the input unchanged (float16 compares as "
    "float32, exactly); rows padded to P = 2^ceil(log2 n) slots; the steps within 512-slot blocks run in shared "
    "memory (one dispatch per stage), the others one dispatch each"
)
_SORT_ORDER = (
    "NaN sorts as the largest value (last ascending, first descending), NaNs by position; -0.0 equals +0.0 (ties "
    "by position); inf and -inf in place."
)
_ALWAYS_STABLE = (
    "vkml's sort is always stable: `stable=False` gives the stable order too (PyTorch's unstable sort may order "
    "ties differently; its `stable=True` gives the same indices as vkml)."
)
_PERMUTED = (
    "The values' gradient is the output gradient sent back through the permutation (a device scatter), as PyTorch's."
)
_BINARY_SEARCH = (
    "exact: PyTorch's binary-search loop, one device invocation per value (lower bound: move right while "
    "!(seq[mid] >= v); upper bound: while !(seq[mid] > v)), compared in the promoted dtype"
)
_NO_GRAD_INT = "Not differentiable: the result is an integer tensor."
_READ_BACK = "reads the input back to the host (the result's size depends on it, as in PyTorch); the groups are exact"
PAGES.update(
    {
        "sort": OpDoc(
            "sort",
            (sig("vkml.sort", _SORTING.sort), "Tensor.sort(dim=-1, descending=False, *, stable=False)"),
            _SORTING.sort,
            precision=_BITONIC,
            special=_SORT_ORDER + " Returns `vkml.return_types.sort(values, indices)`; a 0-d input is its own sort.",
            divergence=_ALWAYS_STABLE,
            gradient=_PERMUTED,
        ),
        "argsort": OpDoc(
            "sort",
            (sig("vkml.argsort", _SORTING.argsort), "Tensor.argsort(dim=-1, descending=False, *, stable=False)"),
            _SORTING.argsort,
            precision=_BITONIC,
            special=_SORT_ORDER,
            divergence=_ALWAYS_STABLE,
            gradient=_NO_GRAD_INT,
        ),
        "msort": OpDoc(
            "sort",
            (sig("vkml.msort", _SORTING.msort), "Tensor.msort()"),
            _SORTING.msort,
            precision=_BITONIC,
            special=_SORT_ORDER,
            gradient=_PERMUTED,
        ),
        "topk": OpDoc(
            "sort",
            (sig("vkml.topk", _SORTING.topk), "Tensor.topk(k, dim=-1, largest=True, sorted=True)"),
            _SORTING.topk,
            precision="the first k of the stable sort (" + _BITONIC + ")",
            special="NaN counts as the largest value. Returns `vkml.return_types.topk(values, indices)`. bool "
            "inputs raise, as PyTorch's CPU.",
            divergence="Of tied elements the earlier positions are chosen, in position order. PyTorch's CPU "
            "(aten/src/ATen/native/TopKImpl.h) leaves ties as libstdc++ does: for k·64 ≤ n a `std::partial_sort` "
            "(a heap: it keeps the first maximum for k = 1, and for larger k lists tied values in the heap's "
            "order — `x = zeros(200); x[[5, 9, 20]] = 1; x.topk(3)` gives [20, 9, 5], vkml [5, 9, 20]), "
            "otherwise a `std::nth_element` then a `std::sort` of the first k − 1 (introselect: which tied "
            "element is chosen follows its median-of-three pivots, even for k = 1 — `x = zeros(10); "
            "x[[1, 5, 9]] = 1; x.topk(1)` gives [5], vkml and argmax [1]). The indices are PyTorch's exactly when "
            "the k chosen values are pairwise distinct, none equals the (k+1)-th (NaN ties NaN; -0.0 ties 0.0, so "
            "the sign of a zero picked may differ too) and `sorted=True`; or n ≤ 3; or k = 1 with 64 ≤ n. When "
            "no tie crosses the k-th position the chosen set is PyTorch's whatever the rest "
            "(tests/test_parity_gaps_21.py checks these rules). `sorted=False` gives the sorted order (PyTorch's "
            "is its algorithm's). The cost is a full sort of each row.",
            gradient="The values' gradient goes to the elements chosen (0 elsewhere), as PyTorch's.",
        ),
        "searchsorted": OpDoc(
            "search",
            (sig("vkml.searchsorted", _SEARCHING.searchsorted),),
            _SEARCHING.searchsorted,
            precision=_BINARY_SEARCH,
            special="A NaN value goes past the end (index n); a NaN or an unsorted sequence gives whatever "
            "PyTorch's loop gives. `sorter`'s range is checked on the host, as PyTorch does.",
            divergence="bool inputs raise NotImplementedError, as PyTorch's CPU.",
            gradient=_NO_GRAD_INT,
        ),
        "bucketize": OpDoc(
            "search",
            (sig("vkml.bucketize", _SEARCHING.bucketize),),
            _SEARCHING.bucketize,
            precision=_BINARY_SEARCH,
            special="As `searchsorted(boundaries, input, right=right)`.",
            gradient=_NO_GRAD_INT,
        ),
        "isin": OpDoc(
            "search",
            (sig("vkml.isin", _SEARCHING.isin),),
            _SEARCHING.isin,
            precision="exact: `test_elements` sorted on the device (as `sort`), each element binary-searched twice",
            special="Equality is `==`: -0.0 is in [0.0]; NaN is in nothing. bool inputs raise, as PyTorch's.",
            gradient="Not differentiable: the result is a bool.",
        ),
        "unique": OpDoc(
            "count",
            (
                sig("vkml.unique", _COUNTING.unique),
                "Tensor.unique(sorted=True, return_inverse=False, return_counts=False, dim=None)",
            ),
            _COUNTING.unique,
            precision=_READ_BACK,
            special="NaNs are all distinct and sort last; of -0.0 and 0.0 the first in stable order stands for "
            "both, as PyTorch. With `dim`, slices compare elementwise and sort lexicographically.",
            divergence="`sorted=False` returns sorted results (as PyTorch's CPU does). With `dim`, slices holding NaN "
            "sort with NaN after every number; PyTorch's slice comparison treats NaN as equal to everything (not "
            "an order), so its order of such slices can differ.",
            gradient="Not differentiable (PyTorch's backward raises; vkml's results do not require grad).",
        ),
        "unique_consecutive": OpDoc(
            "count",
            (
                sig("vkml.unique_consecutive", _COUNTING.unique_consecutive),
                "Tensor.unique_consecutive(return_inverse=False, return_counts=False, dim=None)",
            ),
            _COUNTING.unique_consecutive,
            precision=_READ_BACK,
            special="NaN equals nothing: each NaN is its own run; -0.0 and 0.0 are one run.",
            gradient="Not differentiable (as PyTorch).",
        ),
        "bincount": OpDoc(
            "count",
            (sig("vkml.bincount", _COUNTING.bincount), "Tensor.bincount(weights=None, minlength=0)"),
            _COUNTING.bincount,
            precision=_READ_BACK + "; weights are added on the device in index order (PyTorch's CPU order), "
            "each sum rounded",
            special="Empty input gives `minlength` zeros.",
            gradient="Not differentiable (as PyTorch).",
        ),
        "histc": OpDoc(
            "count",
            (sig("vkml.histc", _COUNTING.histc), "Tensor.histc(bins=100, min=0, max=0)"),
            _COUNTING.histc,
            precision="exact counts: bin = trunc((x - min) * bins / (max - min)) in the input's dtype, each "
            "operation rounded (PyTorch's formula); the bin numbers are sorted and counted by binary search on "
            "the device",
            special="Elements outside [min, max] and NaN are not counted; x == max goes to the last bin. "
            "min == max takes the data's extremes (read back, as PyTorch), widened by 1 if equal; a NaN or "
            "infinite range raises.",
            divergence="Integer inputs raise NotImplementedError, as PyTorch's CPU.",
            gradient="Not differentiable (as PyTorch).",
        ),
        "diff": OpDoc(
            "composite",
            (sig("vkml.diff", _COMBINING.diff), "Tensor.diff(n=1, dim=-1, prepend=None, append=None)"),
            _COMBINING.diff,
            precision="each difference one rounded subtraction of neighbours (slices), repeated n times",
            special="bool inputs give `x[i + 1] != x[i]`; prepend/append join first (promoted dtype); n larger than "
            "the length gives an empty result.",
            gradient=THROUGH,
        ),
        "cross": OpDoc(
            "composite",
            (sig("vkml.cross", _COMBINING.cross), "Tensor.cross(other, dim=None)"),
            _COMBINING.cross,
            precision="each component a[i]·b[j] - a[j]·b[i], both products and the difference rounded",
            special="Inputs broadcast (same number of dims); `dim=None` takes the first dim of size 3 and warns, "
            "as PyTorch.",
            divergence="PyTorch's CPU build may fuse one product into the subtraction: results can differ by an ulp.",
            gradient=THROUGH,
        ),
        "linalg_cross": OpDoc(
            "composite",
            (sig("vkml.linalg.cross", _COMBINING.linalg_cross),),
            _COMBINING.linalg_cross,
            precision="as `cross`",
            special="Inputs broadcast (same number of dims); `dim` defaults to the last.",
            divergence="As `cross`.",
            gradient=THROUGH,
        ),
        "kron": OpDoc(
            "composite",
            (sig("vkml.kron", _COMBINING.kron), "Tensor.kron(other)"),
            _COMBINING.kron,
            precision="each element one rounded product (a broadcast `mul` of interleaved views)",
            special="The shorter shape is padded with leading 1s.",
            gradient=THROUGH,
        ),
        "block_diag": OpDoc(
            "composite",
            (sig("vkml.block_diag", _COMBINING.block_diag),),
            _COMBINING.block_diag,
            special="0-d tensors are 1x1 blocks, 1-d tensors one row; the blocks' promoted dtype; no blocks give "
            "a (1, 0) float32 tensor, as PyTorch.",
            gradient=THROUGH,
        ),
        "cdist": OpDoc(
            "composite",
            (sig("vkml.cdist", _COMBINING.cdist),),
            _COMBINING.cdist,
            precision="direct differences reduced with the tree order of `sum`/`amax`: p=2 the correctly rounded "
            "sqrt of the sum of squares, p=1 the sum of |d|, inf the exact max of |d|, 0 the count of nonzero d, "
            "other p pow(sum(pow(|d|, p)), 1/p) (pow within 1 ulp)",
            special="NaN propagates; batch dims broadcast.",
            divergence="`compute_mode` is accepted but always computes directly: PyTorch's matmul form (used for "
            "p=2 past 25 rows) differs in the last bits and is less exact. With p=inf the gradient is shared "
            "evenly among tied maxima (PyTorch gives each the full gradient).",
            gradient="Through the ops it is built of; at a zero distance the gradient is 0, as PyTorch's.",
        ),
    }
)
