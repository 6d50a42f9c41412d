"""The pages of the first composites, movement and creation ops (vkml/frontend/operators.py, creation.py,
random.py), the first layers and losses (vkml/nn/functional.py) and the composites of issue 17
(vkml/frontend/pointwise.py, vkml/nn/activation.py)."""

from __future__ import annotations

from .page import LEAF, THROUGH, OpDoc, functions, nnf, sig, vkml

PAGES: dict[str, OpDoc] = {
    "mean": OpDoc(
        "composite",
        (sig("vkml.mean", functions.mean), "Tensor.mean(dim=None, keepdim=False, *, dtype=None)"),
        functions.mean,
        precision="the tree sum of `sum` (exact order, float32 accumulation), then one correctly rounded division by the count",
        special="NaN anywhere gives NaN; inf and -inf give NaN; the mean of an empty dim is NaN (as PyTorch).",
        divergence="A mean of -0.0 values is -0.0 (the tree sum keeps -0.0); PyTorch gives +0.0.",
        gradient="Through the ops it is built of (a cast, `sum`, a division by the count): each element gets the "
        "result's gradient divided by the count.",
    ),
    "softmax": OpDoc(
        "composite",
        (sig("vkml.softmax", functions.softmax), "Tensor.softmax(dim)", "vkml.nn.functional.softmax(input, dim)"),
        functions.softmax,
        precision="exp(x - max) times the row's reciprocal of the tree sum, 1/sum rounded once per row: within "
        "3 + |x - max| + ceil(log2 n) ulp of the exact softmax (exp ≤ 1 ulp; the rounding of x - max up to "
        "|x - max| ulp, as PyTorch; the tree sum ceil(log2 n); the product by the rounded reciprocal 1.5 ulp of "
        "e/sum, at most one float from the correctly rounded quotient)",
        special="-inf entries give 0; a row of only -inf gives NaN; a row containing +inf or NaN gives NaN "
        "(as PyTorch). float16 computes in float32 and rounds once.",
        divergence="The quotient is e * fl(1/sum), two roundings, where PyTorch's formula divides: a deliberate, "
        "bounded divergence for speed (one multiply a element instead of a ~70-instruction division). A result "
        "differs from the correctly rounded e/sum by at most one float (about one in seven on random rows).",
        gradient="softmax",
    ),
    "log_softmax": OpDoc(
        "composite",
        (sig("vkml.log_softmax", functions.log_softmax), "vkml.nn.functional.log_softmax(input, dim)"),
        functions.log_softmax,
        precision="(x - max) - log(tree sum of exp(x - max)); log and exp ≤ 1 ulp",
        special="A -inf entry gives -inf; a row of only -inf gives NaN; NaN or +inf in a row gives NaN (as PyTorch).",
        divergence="float16: computed in float32 and rounded once; PyTorch's own float16 kernel loses small results "
        "(it returns 0.0 where the value is -0.000424).",
        gradient="log_softmax",
    ),
    "logsumexp": OpDoc(
        "composite",
        (sig("vkml.logsumexp", functions.logsumexp), "Tensor.logsumexp(dim, keepdim=False)"),
        functions.logsumexp,
        precision="log(tree sum of exp(x - m)) + m with m the finite max; log and exp ≤ 1 ulp",
        special="All -inf gives -inf; +inf anywhere gives +inf (also with -inf); an empty dim gives -inf; NaN gives NaN "
        "(as PyTorch).",
        divergence="`dim=()` reduces every dim, as `sum`'s; PyTorch raises for it where the input has size-1 dims "
        "(an output-shape check).",
        gradient="logsumexp",
    ),
    "matmul": OpDoc(
        "composite",
        (sig("vkml.matmul", functions.matmul), "Tensor.matmul(other)"),
        functions.matmul,
        precision="the contract's named exception to the pairwise tree: each float output starts from -0.0 and adds "
        "its float32 products for k = 0, 1, ..., K-1 in turn, every product and sum rounded (no fused multiply-add), so "
        "that each invocation can accumulate a register tile. The order depends on K alone: the same bits on every "
        "device, tile size and layout. Bound: |computed - exact| <= γ_K Σ_k |a_ik||b_kj|, γ_K = Ku/(1 - Ku), "
        "u = 2^-24 (the tree's would be γ_(⌈log2 K⌉+1)). float16 operands are exact in float32 and the result rounds "
        "once; integer matmul is exact (a sum of products over the tree). On GPUs that get "
        "the large tiles (32-wide subgroups, ≥ 48 KiB shared memory), a product of at least 2^27 "
        "multiply-adds (m·n·k over the whole batch, e.g. 512³) does each step as one fused multiply-add instead (GLSL.std.450 Fma, "
        "rounded once where the driver fuses it, as NVIDIA's does; about 1.5x faster there): the same order, the same "
        "bits every run on that device, but not always the CPU's bits: within 2γ_K Σ|a||b| of them, plus K·2^-126 "
        "where the device flushes subnormal products to zero (NVIDIA's Fma does). Smaller products keep the CPU's bits "
        "on every device. `VKML_MATMUL_FMA=0` turns fusing off (every size, every device: the CPU's bits); `1` fuses "
        "every size on those GPUs. "
        "float16 × float16 on devices with cooperative matrices (VK_KHR_cooperative_matrix listing 16×16×16 "
        "float16 × float16 → float32 per subgroup; vkml/kernels/matmul/coopmat.py) runs on the matrix "
        "units: each output starts from -0.0 and adds its products in 16-deep blocks of k in ascending order, a "
        "block's products and sums in the order and precision the device chooses (exact float16 products, "
        "float32 accumulation). Bound there: |computed - exact| <= 2γ_(K+16) Σ_k |a_ik||b_kj| before the one "
        "rounding to float16 (twice u for hardware that truncates, 16 more terms for a block's alignment); "
        "tests/test_matmul_coopmat.py checks the device against the CPU with it. The bits are the same on every "
        "run on that device, not the CPU's; the CPU interpreter runs the same kernel with the scalar order above "
        "(its bits). A float32 product of two float16 tensors widened where they are read (a value cast, under "
        "views: half `linear` with a bias, `addmm` and `baddbmm`, which add to the float32 sums and round once, "
        "and their gradients' products) is that float16 product with its float32 sums kept: the same kernel, "
        "order and bound, no rounding before its fused epilogue (bfloat16 has no matrix kernel: the scalar tiles). "
        "The plain product of two 2-D float16 matrices stored as they are, on devices with "
        "VK_NV_cooperative_matrix2 (workgroup-scope matrices loaded by tensor layouts; "
        "vkml/kernels/matmul/coopmat2.py, about 1.9x the subgroup-scope kernel there), adds 64-deep blocks of k "
        "in ascending order the same way, within the same bound, and narrows the float32 sum to float16 in "
        "hardware (OpFConvert under RoundingModeRTE 16: round to nearest even with subnormals, the software "
        "narrowing's rounding); positions past M, N or K read +0.0, so only the sign of an exactly-zero sum may "
        "differ from the scalar order's. tests/test_matmul_coopmat2.py checks it against the float64 product "
        "within that bound plus half a float16 ulp. `VKML_MATMUL_COOPMAT2=0` keeps the subgroup-scope kernel; "
        "`VKML_MATMUL_COOPMAT=0` keeps the scalar tiles and the CPU's bits. That template computes the product "
        "alone: a bias or an activation after it runs as a kernel of its own. A product with few outputs and a long "
        "k (fewer than 1024 output tiles of 64×64 over its batch, k at least 4096, as a convolution's weight "
        "gradient) splits k into c equal chunks (`split_k_chunks` in vkml/frontend/operators.py: the largest "
        "divisor of k up to 1024 / tiles leaving chunks of at least 2048, chosen from the shapes alone, so on every "
        "device): each chunk is a product as above, kept in float32, and the c float32 results are added over "
        "`sum`'s fixed tree before the one rounding to the result dtype. Bound there: γ_(k/c + ⌈log2 c⌉ + 1) "
        "Σ_k |a_ik||b_kj| (the scalar order; on matrix units as above with k/c for K)",
        special="NaN and inf propagate through products and sums as IEEE 754 says (0 * inf is NaN; inf - inf is NaN). "
        "The sum starts from -0.0, the exact identity of addition, so an output whose products are all -0.0 is -0.0; "
        "K = 0 gives +0.0 (as PyTorch). On cooperative matrices a device may give +0.0 for such an output.",
        divergence="PyTorch (BLAS) sums in another order (blocked, with fused multiply-adds): float32 results differ in "
        "the last bits, within both orders' error bounds. An output whose products are all -0.0 is -0.0; PyTorch "
        "gives +0.0.",
        gradient="matmul",
    ),
    "max": OpDoc(
        "reduce",
        (sig("vkml.max", functions.max), "Tensor.max(dim=None, keepdim=False)"),
        functions.max,
        precision="exact",
        special="As `amax` and `argmax`: with `dim`, returns `vkml.return_types.max(values, indices)`, a named "
        "tuple, like PyTorch.",
        gradient="`max(x)`: ties share the gradient evenly, as PyTorch's; a NaN result shares it among the NaNs "
        "(`RULES['extreme_of_all']`; amax's rule gives NaN there, as PyTorch's). `max(x, dim)`: the "
        "whole gradient goes to the element the returned index names, as PyTorch's (`RULES['value_at_index']`); "
        "the indices are not differentiable.",
    ),
    "min": OpDoc(
        "reduce",
        (sig("vkml.min", functions.min), "Tensor.min(dim=None, keepdim=False)"),
        functions.min,
        precision="exact",
        special="As `amin` and `argmin`: with `dim`, returns `vkml.return_types.min(values, indices)`, a named "
        "tuple, like PyTorch.",
        gradient="`min(x)`: ties share the gradient evenly, as PyTorch's; a NaN result shares it among the NaNs "
        "(`RULES['extreme_of_all']`; amin's rule gives NaN there, as PyTorch's). `min(x, dim)`: the "
        "whole gradient goes to the element the returned index names, as PyTorch's (`RULES['value_at_index']`); "
        "the indices are not differentiable.",
    ),
    "reshape": OpDoc(
        "movement",
        (sig("vkml.reshape", functions.reshape), "Tensor.reshape(*shape)", "Tensor.view(*shape)"),
        functions.reshape,
        gradient="reshape",
    ),
    "permute": OpDoc(
        "movement",
        (sig("vkml.permute", functions.permute), "Tensor.permute(*dims)"),
        functions.permute,
        gradient="permute",
    ),
    "transpose": OpDoc(
        "movement",
        (sig("vkml.transpose", functions.transpose), "Tensor.transpose(dim0, dim1)", "Tensor.T"),
        functions.transpose,
        divergence="`Tensor.T` reverses all dims for any number of dims with PyTorch's deprecation warning where the "
        "tensor is not 2-D (PyTorch warns once per process; vkml as Python's warning filters decide).",
        gradient="Through `permute`.",
    ),
    "expand": OpDoc(
        "movement",
        (sig("vkml.expand", functions.expand), "Tensor.expand(*sizes)"),
        functions.expand,
        gradient="expand",
    ),
    "squeeze": OpDoc(
        "movement",
        (sig("vkml.squeeze", functions.squeeze), "Tensor.squeeze(dim=None)"),
        functions.squeeze,
        gradient="Through `reshape`.",
    ),
    "unsqueeze": OpDoc(
        "movement",
        (sig("vkml.unsqueeze", functions.unsqueeze), "Tensor.unsqueeze(dim)"),
        functions.unsqueeze,
        gradient="Through `reshape`.",
    ),
    "flip": OpDoc("movement", (sig("vkml.flip", functions.flip), "Tensor.flip(dims)"), functions.flip, gradient="flip"),
    "cat": OpDoc("movement", (sig("vkml.cat", functions.cat),), functions.cat, gradient="cat"),
    "getitem": OpDoc(
        "movement",
        ("Tensor.__getitem__(index)",),
        functions.getitem,
        divergence="Negative slice steps raise ValueError, as in PyTorch. Tensor, list and mask indices are read back "
        "and checked at the call (docs/mutation.md).",
        gradient="slice",
    ),
    "to": OpDoc(
        "conversion",
        ("Tensor.to(dtype)", "Tensor.to(device, dtype=None)", "Tensor.float() / half() / int() / long() / bool()"),
        functions.cast,
        precision="exact where the value fits; float → float16 rounds to nearest even in software; int → float rounds "
        "to nearest even",
        special="float → int truncates toward zero; NaN, ±inf and out-of-range values give INT_MIN (what PyTorch "
        "gives on x86-64); float → bool: NaN is True, ±0 is False; float32 → float16 keeps a NaN's sign and top "
        "payload bits and sets its quiet bit (as PyTorch).",
        divergence="`Tensor.type()` names vkml's classes: 'vkml.FloatTensor' where PyTorch gives 'torch.FloatTensor' "
        "(both take either name as the target type).",
        gradient="cast",
    ),
    "tensor": OpDoc("creation", (sig("vkml.tensor", vkml.tensor),), vkml.tensor, gradient=LEAF),
    "zeros": OpDoc("creation", (sig("vkml.zeros", vkml.zeros),), vkml.zeros, gradient=LEAF),
    "ones": OpDoc("creation", (sig("vkml.ones", vkml.ones),), vkml.ones, gradient=LEAF),
    "full": OpDoc("creation", (sig("vkml.full", vkml.full),), vkml.full, gradient=LEAF),
    "arange": OpDoc(
        "creation",
        (sig("vkml.arange", vkml.arange),),
        vkml.arange,
        precision="start + i·step computed in float64, then rounded once to the dtype (as PyTorch)",
        gradient=LEAF,
    ),
    "constant_pad_nd": OpDoc(
        "movement",
        (sig("vkml.constant_pad_nd", functions.constant_pad_nd), sig("vkml.nn.functional.pad", nnf.pad)),
        functions.constant_pad_nd,
        special="Padded positions hold `value` exactly (NaN and ±inf included).",
        gradient="pad",
    ),
    "rand": OpDoc(
        "creation",
        (sig("vkml.rand", vkml.rand), sig("vkml.rand_like", vkml.rand_like)),
        vkml.rand,
        precision="exact: PyTorch's CPU values for the same seed (its Mersenne Twister, drawn on the host and "
        "uploaded: docs/random.md): one 32-bit word per element, its low 24 bits times 2^-24; float64 53 bits of "
        "two words; float16 and bfloat16 round the float32 value (within 1 unit of PyTorch's in 3e-5 and 3e-3 of "
        "the elements of `uniform_(a, b)` with other bounds than [0, 1)); the same bits on every device",
        special="float32 and float64 values lie in [0, 1); float16 and bfloat16 ones may round to 1, as PyTorch's.",
        divergence="PyTorch's CUDA generator (Philox) gives other values; vkml gives the CPU's on every device.",
        gradient=LEAF,
    ),
    "randn": OpDoc(
        "creation",
        (sig("vkml.randn", vkml.randn), sig("vkml.randn_like", vkml.randn_like)),
        vkml.randn,
        precision="exact: PyTorch's CPU values for the same seed (docs/random.md). 16 or more float32 values: "
        "uniforms for all, Box–Muller on each block of 16 (8 radii from the first half, 8 angles from the second; "
        "Cephes' float32 log and sin/cos with the multiply-adds PyTorch's AVX2 kernel fuses, reproduced in numpy "
        "on the host; a size not a multiple of 16 draws its last 16 anew); fewer than 16 values (any dtype): "
        "PyTorch's double-precision pair per two values, the second kept in the generator for the next draw. "
        "float64 from 4097 values on: numpy's log/sin/cos, last-bit differences from PyTorch's C library in "
        "about 0.1% of the elements. float16 and bfloat16: the float32 values rounded, their last block made of "
        "the leftover uniforms and new ones, as PyTorch's. Checked bit for bit over 786 432 values (tests/test_random.py: smaller)",
        special="Finite: |x| ≤ 5.8 (24-bit uniforms, as PyTorch's).",
        divergence="Bit-exact with PyTorch on x86 CPUs with AVX2 (its Box–Muller kernel); PyTorch on other CPUs "
        "(its scalar libm path) and on CUDA gives other values.",
        gradient=LEAF,
    ),
    "linear": OpDoc(
        "composite",
        (sig("vkml.nn.functional.linear", nnf.linear), "vkml.nn.Linear(in_features, out_features, bias=True)"),
        nnf.linear,
        precision="as `matmul`, then one addition. float16 and bfloat16 with a bias (an input of at most 2 dims or "
        "a contiguous one, PyTorch's addmm path) add the bias to the product's float32 sums and round once: for "
        "float16 the product runs on `matmul`'s cooperative-matrix kernel where a device has one, its bound, with "
        "the float32 sums kept and the bias and the rounding fused at its store (so do the input's and weight's "
        "gradients, rounded once to the half dtype); bfloat16 runs on the scalar tiles",
        gradient=THROUGH,
    ),
    "cross_entropy": OpDoc(
        "loss",
        (
            sig("vkml.nn.functional.cross_entropy", nnf.cross_entropy),
            "vkml.nn.CrossEntropyLoss(weight=None, size_average=None, ignore_index=-100, reduce=None, "
            "reduction='mean', label_smoothing=0.0)",
        ),
        nnf.cross_entropy,
        precision="`log_softmax`, a select, products by the class weights, tree sums and one division by the "
        "summed weights (the count of targets without `weight`)",
        special="A target out of [0, C) (not `ignore_index`) is PyTorch's IndexError, raised when a result is read, or by a later realize that computes from it once the device has checked the targets.",
        gradient=THROUGH,
    ),
    "mse_loss": OpDoc(
        "loss",
        (
            sig("vkml.nn.functional.mse_loss", nnf.mse_loss),
            "vkml.nn.MSELoss(size_average=None, reduce=None, reduction='mean')",
        ),
        nnf.mse_loss,
        precision="a difference, a square, then `mean` or `sum`",
        gradient=THROUGH,
    ),
    "layer_norm": OpDoc(
        "composite",
        (sig("vkml.nn.functional.layer_norm", nnf.layer_norm), "vkml.nn.LayerNorm(normalized_shape, eps=1e-05)"),
        nnf.layer_norm,
        precision="two `mean`s (two-pass variance), `rsqrt` and products; PyTorch's CPU kernel uses other "
        "summation orders, so the last bits may differ",
        gradient=THROUGH,
    ),
    "embedding": OpDoc(
        "composite",
        (
            sig("vkml.nn.functional.embedding", nnf.embedding),
            "vkml.nn.Embedding(num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0, "
            "scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None)",
        ),
        nnf.embedding,
        precision="exact: each output is one row element (the other products are zeros)",
        special="A NaN or inf anywhere in `weight` makes every output NaN (0 × inf in the one-hot product).",
        divergence="Sparse gradients raise NotImplementedError; PyTorch copies rows, so only a looked-up row's NaN "
        "or inf reaches its output.",
        gradient=THROUGH,
    ),
    "dropout": OpDoc(
        "composite",
        (sig("vkml.nn.functional.dropout", nnf.dropout), "vkml.nn.Dropout(p=0.5, inplace=False)"),
        nnf.dropout,
        precision="kept elements are multiplied by 1/(1-p) rounded to float32 (one rounding)",
        divergence="The mask is vkml's own: a fused counter-based stream (Threefry-2x32-20 of (element, 0) keyed by "
        "one 32-bit word of the generator and the seed's low half), computed in the kernel that applies it, not "
        "uploaded. PyTorch's CPU mask is `bernoulli_(1 - p)`, whose stream depends on the machine: on Intel CPUs "
        "with MKL a VSL MCG31 stream seeded by one `random()` word (which vkml's one key word matches, so the draws "
        "after a dropout stay PyTorch's there), elsewhere `u < 1 - p` for a double uniform (two words) per "
        "element (checked equal on an AMD machine). Neither is taken: the MKL stream cannot be checked on this "
        "project's machines, so no mask matches PyTorch's everywhere, and the other would be a host mask uploaded "
        "every step, outside the fused kernels and vkml.jit's fused replay (docs/random.md).",
        gradient=THROUGH,
    ),
    "scaled_dot_product_attention": OpDoc(
        "fused",
        (
            sig("vkml.nn.functional.scaled_dot_product_attention", nnf.scaled_dot_product_attention),
            "vkml.nn.MultiheadAttention(embed_dim, num_heads, ...) with need_weights=False",
            "vkml.nn.TransformerEncoderLayer, vkml.nn.TransformerDecoderLayer, vkml.nn.Transformer",
        ),
        nnf.scaled_dot_product_attention,
        precision="fused: float32 throughout (ascending-order dot products, exp and log within 1 ulp, the online "
        "softmax's rescalings, one division per output), one rounding to float16/bfloat16 at the output; within "
        "atol = rtol = 2e-6 (float32) and 1e-3 (float16) of PyTorch in float64 on unit-scale data "
        "(tests/test_attention_fused.py); the same bits on every device and run, other bits than the composite's; "
        "float16 on a device with cooperative matrices: float16 weights times v on matrix units, within the "
        "bound below (tests/test_attention_coopmat.py); there the weights' e^x is a shorter routine for x <= 0 "
        "(relative error below 2^-22 + |x|·2^-23, inside that bound; vkml/kernels/attention_coopmat.py weight_exp); "
        "float16 with head dims 64 or 128, no mask but the causal one and no dropout on a device with "
        "VK_NV_cooperative_matrix2's reductions and per-element functions: the flash-attention kernel on "
        "workgroup-scope matrices, within the same bound (vkml/kernels/attention_cm2.py, tests/test_attention_cm2.py; "
        "its weights are 2^x in log2 units by a cubic with relative error below 2^-13.6, inside the bound for rows of "
        "up to 2^16 keys: the error analysis below)",
        special="A row whose every score is -inf after masking gives zeros, as PyTorch's math path, not NaN; "
        "a NaN in q, k or v makes its rows NaN.",
        divergence="PyTorch multiplies q and k by sqrt(scale) each and picks a fused or math CPU kernel, so last "
        "bits differ; dropout masks come from vkml's generator (drawn in the kernels by the rule of F.dropout's "
        "keep_mask: the composite path's masks for the same seed).",
        gradient="Fused path: two kernels (vkml/kernels/attention_backward.py: dQ by query blocks; dK and dV by key "
        "blocks, over each GQA head of the group in turn) recompute each block's weights P = exp(S - lse) from the "
        "saved per-row log-sum-exp, no (L, S) matrix in memory: dV = Pᵀ dO, dS = P · (dO Vᵀ - rowsum(dO · O)), "
        "dQ = dS K · scale, dK = dSᵀ Q · scale, in float32, rounded once to the inputs' dtype; within 1e-5 "
        "(float32) and 2e-3 (float16) of PyTorch in float64. Broadcast batch dims: the same formulas as composite "
        "ops. With create_graph=True the gradients come from the composite forward, recorded (differentiable again). "
        "Composite path: through the ops it is built of.",
    ),
    "full_like": OpDoc("creation", (sig("vkml.full_like", vkml.full_like),), vkml.full_like, gradient=LEAF),
    "zeros_like": OpDoc("creation", (sig("vkml.zeros_like", vkml.zeros_like),), vkml.zeros_like, gradient=LEAF),
    "ones_like": OpDoc("creation", (sig("vkml.ones_like", vkml.ones_like),), vkml.ones_like, gradient=LEAF),
}
# Composites of issue 17 (vkml/frontend/pointwise.py, vkml/nn/activation.py).
PAGES.update(
    {
        "isclose": OpDoc(
            "composite",
            (sig("vkml.isclose", vkml.isclose), "Tensor.isclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)"),
            vkml.isclose,
            precision="PyTorch's formula: |a - b| <= atol + |rtol·b| with each step rounded in the tensors' dtype "
            "(integers in float32), or a == b",
            special="Equal infinities are close; NaN is close to NaN only with equal_nan.",
            gradient="Not differentiable: the result is bool.",
        ),
        "allclose": OpDoc(
            "composite",
            (sig("vkml.allclose", vkml.allclose), "Tensor.allclose(other, ...)"),
            vkml.allclose,
            precision="as `isclose`",
            special="As `isclose`; returns a Python bool (reads the result back).",
            gradient="Not differentiable: the result is a Python bool.",
        ),
        "equal": OpDoc(
            "composite",
            (sig("vkml.equal", vkml.equal), "Tensor.equal(other)"),
            vkml.equal,
            precision="exact",
            special="NaN differs from NaN; different shapes give False.",
            gradient="Not differentiable: the result is a Python bool.",
        ),
        "float_power": OpDoc(
            "composite",
            (
                sig("vkml.float_power", vkml.float_power),
                "Tensor.float_power(exponent)",
                "Tensor.float_power_(exponent)",
            ),
            vkml.float_power,
            precision="as `pow` in float64 (≤ 1 ulp of float64); the result is float64, as PyTorch's",
            special="As `pow`. A device without float64 (shaderFloat64) refuses it with DTypeError. "
            "`float_power_` writes the float64 result back, so a tensor of another dtype refuses it "
            "(PyTorch's RuntimeError).",
            gradient="Through `pow` and the casts.",
        ),
        "softmin": OpDoc(
            "composite",
            (sig("vkml.nn.functional.softmin", nnf.softmin), "vkml.nn.Softmin(dim=None)"),
            nnf.softmin,
            precision="as `softmax` of -input",
            special="As `softmax`.",
            gradient=THROUGH,
        ),
        "glu": OpDoc(
            "composite",
            (sig("vkml.nn.functional.glu", nnf.glu), "vkml.nn.GLU(dim=-1)"),
            nnf.glu,
            precision="`sigmoid` (≤ 2 ulp) and one product",
            special="As `sigmoid` and the product.",
            gradient=THROUGH,
        ),
        "prelu": OpDoc(
            "composite",
            (sig("vkml.nn.functional.prelu", nnf.prelu), "vkml.nn.PReLU(num_parameters=1, init=0.25)"),
            nnf.prelu,
            precision="exact select of x or one product",
            special="NaN gives NaN (NaN > 0 is False, and weight·NaN is NaN).",
            gradient=THROUGH,
        ),
    }
)

# Strided window views and the in-place view methods (vkml/frontend/windows.py).
_windows = vkml.frontend.windows
PAGES.update(
    {
        "as_strided": OpDoc(
            "movement",
            (
                sig("vkml.as_strided", _windows.as_strided),
                "Tensor.as_strided(size, stride, storage_offset=None)",
                "Tensor.as_strided_(size, stride, storage_offset=None)",
                sig("vkml.as_strided_copy", _windows.as_strided_copy),
            ),
            _windows.as_strided,
            divergence="vkml keeps the tensors its ops make row-major, where PyTorch may keep an input's layout "
            "(`x.t().clone()`, an elementwise result of a permuted input): `as_strided` of such a tensor reads its "
            "row-major order here. A write through a view two of whose elements are one storage element raises "
            "PyTorch's overlap RuntimeError (PyTorch raises it for stride 0, and runs other overlapping writes "
            "element by element in memory order). NotImplementedError for a view taken with `view(dtype)`.",
            gradient="as_strided",
        ),
        "tensor_unfold": OpDoc(
            "movement",
            ("Tensor.unfold(dimension, size, step)",),
            _windows.unfold,
            divergence="A write through overlapping windows (step < size) raises PyTorch's overlap RuntimeError, "
            "where PyTorch runs it element by element in memory order (its result depends on that order); writes "
            "through windows that do not overlap, or through a part of the windows that shows no element twice, "
            "reach the tensor as in PyTorch.",
            gradient="window",
        ),
        "inplace_views": OpDoc(
            "movement",
            (
                "Tensor.unsqueeze_(dim)",
                "Tensor.squeeze_(dim=None)",
                "Tensor.t_()",
                "Tensor.transpose_(dim0, dim1)",
                "Tensor.swapdims_(dim0, dim1)",
                "Tensor.swapaxes_(axis0, axis1)",
                "Tensor.resize_(*sizes)",
                "Tensor.resize_as_(the_template)",
            ),
            _windows,
            divergence="`resize_` that grows a view past its storage raises NotImplementedError; a tensor that "
            "owns its storage grows it with zeros (PyTorch's new elements are uninitialised). Changing the view "
            "of a leaf that requires grad under `no_grad` raises NotImplementedError (PyTorch allows it there; "
            "with grad enabled both raise PyTorch's leaf error).",
            gradient="Through `reshape` and `permute` (`as_strided` for `resize_`): the tensor's history gains "
            "the view op, as PyTorch's grad_fn does; its storage's version is bumped.",
        ),
    }
)
