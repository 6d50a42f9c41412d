"""Compare PyTorch's public API with vkml's and write docs/coverage.md.

    PYTHONPATH=$PWD python tools/api_coverage.py             # rewrite docs/coverage.md
    PYTHONPATH=$PWD python tools/api_coverage.py --check     # exit 1 if docs/coverage.md is stale
    PYTHONPATH=$PWD python tools/api_coverage.py --snapshot  # re-read the installed torch's names

PyTorch's side is a snapshot (tools/torch_api.json), not the installed torch: the page and the
test that checks it must not change with the torch a machine happens to have (the GPU machine
runs an older one). ``--snapshot`` refreshes it from the installed torch.

"Commonly used" is a curated tier list, per namespace, in order of use:

- tier 1: names that typical training and inference scripts use. Read for it: pytorch/examples
  (mnist/main.py, vae/main.py, dcgan/main.py, word_language_model/model.py), karpathy/nanoGPT
  (model.py, train.py), and the official tutorials' basics, save/load, char-RNN, seq2seq and
  transformer pages; a name is tier 1 when several of them use it, or one of them leans on it
  (nanoGPT's weight tying, clip_grad_norm_, scaled_dot_product_attention).
- tier 2: public names a model or a training loop uses less often, i.e. the rest of each small
  namespace (nn layers, functional, optimizers, schedulers, data, linalg, special), and the
  curated TIER2 names of the big ones (torch, Tensor).
- tier 3: everything else: backend-specific, legacy, deprecated aliases and internals. Listed on
  the page but not in the headline.

Names outside the comparison altogether (EXCLUDED, each with its reason): private names, complex32,
sparse layouts other than COO, quantization, distributed, jit/fx/onnx/export internals and other
backends' hooks.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tools" / "torch_api.json"
PAGE = ROOT / "docs" / "coverage.md"
COMMAND = "PYTHONPATH=$PWD python tools/api_coverage.py"


@dataclass(frozen=True)
class Namespace:
    torch: str  # e.g. "torch.nn.functional"; "torch.Tensor" is the class
    vkml: str  # the same place in vkml
    default_tier: int  # the tier of a name no curated list names
    tier1: str = ""  # most used first
    tier2: str = ""
    tier3: str = ""  # names of a default-tier-2 namespace that are legacy or internal
    only: str = ""  # when set, the namespace is compared on these names alone
    note: str = ""
    # For a class: makes an instance from the library's root module (torch or vkml), whose
    # attributes set in __init__ count as the class's names.
    instance: Callable | None = None


# Operators a Tensor gets from Python syntax. They are public API although they start with "__".
_TENSOR_DUNDER_TIER1 = (
    "__getitem__ __setitem__ __add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ "
    "__truediv__ __rtruediv__ __itruediv__ __matmul__ __rmatmul__ __neg__ __pow__ __rpow__ __eq__ __ne__ __lt__ "
    "__le__ __gt__ __ge__ __len__ __iter__ __bool__ __float__ __int__ __index__ __repr__ __format__ __hash__ "
    "__deepcopy__ __reduce_ex__ __array__"
)
_TENSOR_DUNDER_TIER2 = (
    "__abs__ __pos__ __invert__ __and__ __or__ __xor__ __rand__ __ror__ __rxor__ __iand__ __ior__ __ixor__ "
    "__floordiv__ __rfloordiv__ __ifloordiv__ __mod__ __rmod__ __imod__ __ipow__ __lshift__ __rshift__ "
    "__ilshift__ __irshift__ __rlshift__ __rrshift__ __contains__ __reversed__ __array_wrap__ __array_priority__ __setstate__"
)

NAMESPACES = (
    Namespace(
        "torch",
        "vkml",
        3,
        tier1="tensor zeros ones arange randn rand randint rand_like mul manual_seed no_grad cat stack float32 long float int64 "
        "bool device Tensor save load exp log sqrt tanh sigmoid relu softmax matmul sum mean max min argmax where "
        "clamp flatten zeros_like ones_like randn_like full tril triu multinomial from_numpy linspace eye abs pow "
        "sin cos empty randperm allclose cumsum topk sort gather einsum bmm mm split chunk reshape transpose "
        "permute squeeze unsqueeze set_grad_enabled enable_grad int32 float64 double int uint8 float16 half "
        "bfloat16 is_tensor numel inference_mode dtype Generator Size",
        tier2="add sub div neg square rsqrt reciprocal exp2 expm1 log2 log10 log1p floor ceil round trunc frac "
        "sign tan asin acos atan atan2 sinh cosh asinh acosh atanh erf erfc erfinv lgamma digamma logit "
        "log_softmax logsumexp logaddexp hypot fmod remainder floor_divide maximum minimum fmax fmin lerp "
        "addcmul addcdiv addmm addmv baddbmm outer dot mv cross cdist dist norm std var std_mean var_mean median "
        "nanmedian mode quantile nanquantile prod cumprod cummax cummin logcumsumexp nansum nanmean amax amin "
        "aminmax argmin argsort kthvalue unique unique_consecutive bincount histc bucketize searchsorted isnan "
        "isinf isfinite isclose nan_to_num equal masked_fill masked_select index_select index_add index_copy "
        "index_fill scatter scatter_add scatter_reduce take take_along_dim roll flip fliplr flipud rot90 "
        "repeat_interleave tile broadcast_to broadcast_tensors meshgrid narrow diag diag_embed diagonal trace "
        "tril_indices triu_indices full_like empty_like randint_like normal bernoulli poisson "
        "get_default_dtype set_default_dtype is_floating_point is_grad_enabled seed initial_seed get_rng_state "
        "set_rng_state use_deterministic_algorithms set_printoptions set_num_threads get_num_threads count_nonzero "
        "nonzero argwhere logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor "
        "bitwise_not eq ne lt le gt ge any all movedim moveaxis swapaxes unbind unflatten hstack vstack dstack "
        "column_stack atleast_1d atleast_2d atleast_3d tensor_split hsplit vsplit kron tensordot cov corrcoef "
        "clip clamp_min clamp_max logspace cumulative_trapezoid trapezoid diff float_power xlogy sgn signbit "
        "isin select expand_copy as_tensor asarray int8 int16 uint16 uint32 uint64 float8_e4m3fn "
        "compile finfo iinfo promote_types result_type can_cast get_device set_default_device "
        "get_default_device pi e inf nan is_nonzero block_diag cartesian_prod rsub true_divide positive "
        "absolute negative multiply subtract divide greater less greater_equal less_equal not_equal",
    ),
    Namespace(
        "torch.Tensor",
        "vkml.Tensor",
        3,
        instance=lambda lib: lib.zeros(1),
        tier1="shape size view reshape to item backward grad requires_grad requires_grad_ detach numpy cpu float "
        "long int bool dtype device dim numel sum mean max min argmax eq view_as contiguous transpose permute "
        "unsqueeze squeeze flatten split chunk masked_fill clone copy_ fill_ zero_ normal_ uniform_ data t T exp "
        "log pow sqrt abs clamp softmax tolist expand repeat type add_ mul_ sub_ div_ add mul sub div matmul "
        "new_zeros norm std var topk sort gather index_select double half grad_fn is_leaf sigmoid tanh relu "
        "masked_fill_ clamp_ ne lt gt le ge any all nonzero cumsum type_as expand_as ndim cuda is_cuda "
        "retain_grad register_hook log_softmax argsort unbind narrow new_ones new_tensor new_full "
        "new_empty prod square neg floor round " + _TENSOR_DUNDER_TIER1,
        tier2="abs_ neg_ exp_ log_ sqrt_ pow_ sigmoid_ tanh_ relu_ addcmul_ addcdiv_ lerp_ lerp clamp_min "
        "clamp_max clip clip_ copysign sign sgn ceil trunc frac reciprocal rsqrt log1p expm1 log2 log10 sin cos "
        "tan asin acos atan atan2 sinh cosh asinh acosh atanh erf erfinv logit amax amin aminmax argmin "
        "median mode kthvalue quantile nanquantile logsumexp cumprod cummax cummin logcumsumexp nansum nanmean "
        "unique bincount histc masked_select masked_scatter masked_scatter_ index_add index_add_ "
        "index_copy index_copy_ index_fill index_fill_ index_put index_put_ scatter scatter_ scatter_add "
        "scatter_add_ scatter_reduce scatter_reduce_ take take_along_dim put_ roll flip fliplr flipud rot90 "
        "repeat_interleave tile broadcast_to movedim moveaxis swapaxes swapdims diag diag_embed diagonal trace "
        "tril triu tril_ triu_ outer dot mv mm bmm baddbmm addmm addmv cross dist floor_divide fmod "
        "remainder maximum minimum fmax fmin isnan isinf isfinite isclose nan_to_num nan_to_num_ allclose equal "
        "logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not "
        "random_ bernoulli bernoulli_ exponential_ geometric_ log_normal_ cauchy_ multinomial "
        "unfold unflatten tensor_split hsplit vsplit split_with_sizes select stride storage_offset "
        "is_contiguous is_floating_point element_size nbytes itemsize data_ptr is_shared "
        "share_memory_ pin_memory is_pinned apply_ map_ detach_ untyped_storage nelement ndimension "
        "short byte char bfloat16 as_strided squeeze_ unsqueeze_ t_ transpose_ resize_ resize_as_ "
        "reshape_as count_nonzero argwhere signbit square_ true_divide "
        "float_power xlogy greater less greater_equal less_equal not_equal absolute negative multiply "
        "subtract divide mT output_nr get_device is_set_to new_empty_strided " + _TENSOR_DUNDER_TIER2,
    ),
    Namespace(
        "torch.nn",
        "vkml.nn",
        2,
        tier1="Module Linear Conv2d ReLU Sequential Dropout BatchNorm2d MaxPool2d CrossEntropyLoss MSELoss Embedding "
        "LayerNorm Parameter ModuleList ModuleDict LSTM GRU RNN GELU Tanh Sigmoid Flatten Softmax LogSoftmax "
        "NLLLoss BCELoss BCEWithLogitsLoss ConvTranspose2d LeakyReLU Conv1d AdaptiveAvgPool2d AvgPool2d "
        "TransformerEncoder TransformerEncoderLayer MultiheadAttention Transformer Identity BatchNorm1d L1Loss "
        "SmoothL1Loss Upsample SiLU Dropout2d",
        tier2="GroupNorm InstanceNorm2d Conv3d MaxPool1d AdaptiveAvgPool1d AdaptiveMaxPool2d AvgPool1d Mish ELU "
        "Softplus PReLU ReLU6 Hardswish TransformerDecoder TransformerDecoderLayer LSTMCell GRUCell RNNCell "
        "KLDivLoss HuberLoss ParameterList ParameterDict Unflatten PixelShuffle RMSNorm ZeroPad2d ReflectionPad2d "
        "ReplicationPad2d ConstantPad2d Dropout1d Dropout3d BatchNorm3d InstanceNorm3d CosineSimilarity "
        "PairwiseDistance EmbeddingBag Bilinear TripletMarginLoss MarginRankingLoss CosineEmbeddingLoss "
        "MultiLabelSoftMarginLoss PoissonNLLLoss GaussianNLLLoss CTCLoss Softmax2d RReLU AlphaDropout "
        "LocalResponseNorm MaxUnpool2d LPPool2d FractionalMaxPool2d",
        tier3="RNNBase RNNCellBase factory_kwargs CrossMapLRN2d LinearCrossEntropyOptions Container LazyLinear LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d "
        "LazyConvTranspose3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
        "LazyInstanceNorm3d UninitializedParameter UninitializedBuffer NLLLoss2d Buffer",
    ),
    Namespace(
        "torch.nn.functional",
        "vkml.nn.functional",
        2,
        tier1="relu softmax log_softmax cross_entropy dropout mse_loss nll_loss gelu layer_norm "
        "scaled_dot_product_attention max_pool2d linear embedding sigmoid tanh binary_cross_entropy "
        "binary_cross_entropy_with_logits pad conv2d interpolate normalize one_hot silu leaky_relu avg_pool2d "
        "adaptive_avg_pool2d softplus l1_loss smooth_l1_loss kl_div batch_norm cosine_similarity",
        tier2="group_norm instance_norm conv1d conv_transpose2d max_pool1d avg_pool1d adaptive_max_pool2d "
        "hardtanh relu6 elu selu mish hardswish glu logsigmoid softmin grid_sample affine_grid pixel_shuffle "
        "unfold fold huber_loss pairwise_distance pdist gumbel_softmax embedding_bag triplet_margin_loss "
        "margin_ranking_loss cosine_embedding_loss ctc_loss poisson_nll_loss gaussian_nll_loss dropout1d dropout3d "
        "relu_ leaky_relu_ elu_ bilinear",
        tier3="ScalingType SwizzleType grouped_mm scaled_grouped_mm scaled_mm conv_tbc multi_head_attention_forward "
        "adaptive_max_pool1d_with_indices adaptive_max_pool2d_with_indices adaptive_max_pool3d_with_indices "
        "fractional_max_pool2d_with_indices fractional_max_pool3d_with_indices max_pool1d_with_indices "
        "max_pool2d_with_indices max_pool3d_with_indices "
        "has_torch_function has_torch_function_unary has_torch_function_variadic "
        "assert_int_or_pair upsample upsample_nearest upsample_bilinear",
    ),
    Namespace(
        "torch.nn.Module",
        "vkml.nn.Module",
        2,
        tier1="parameters named_parameters state_dict load_state_dict train eval to apply zero_grad register_buffer "
        "children modules named_modules training cuda cpu forward requires_grad_ add_module buffers named_buffers",
        tier3="dump_patches call_super_init T_destination",
        instance=lambda lib: lib.nn.Module(),
    ),
    Namespace(
        "torch.optim.Optimizer",
        "vkml.optim.Optimizer",
        2,
        tier1="zero_grad step param_groups state_dict load_state_dict state add_param_group defaults",
        tier3="OptimizerPostHook OptimizerPreHook profile_hook_step",
        instance=lambda lib: lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1),
    ),
    Namespace(
        "torch.nn.init",
        "vkml.nn.init",
        2,
        tier1="normal_ zeros_ uniform_ xavier_uniform_ kaiming_normal_ "
        "ones_ constant_ kaiming_uniform_ xavier_normal_ trunc_normal_ orthogonal_",
        tier3="normal uniform constant xavier_uniform xavier_normal kaiming_uniform kaiming_normal orthogonal "
        "dirac eye",
    ),
    Namespace(
        "torch.nn.utils",
        "vkml.nn.utils",
        2,
        tier1="clip_grad_norm_ clip_grad_value_",
        tier3="fuse_conv_bn_eval fuse_conv_bn_weights fuse_linear_bn_eval fuse_linear_bn_weights "
        "convert_conv2d_weight_memory_format convert_conv3d_weight_memory_format skip_init",
    ),
    Namespace(
        "torch.optim",
        "vkml.optim",
        2,
        tier1="SGD Adam AdamW Optimizer lr_scheduler Adadelta RMSprop",
        tier2="Adagrad NAdam RAdam Adamax LBFGS ASGD Rprop Adafactor Muon",
        tier3="swap_in_optimizer_params_and_state",
    ),
    Namespace(
        "torch.optim.lr_scheduler",
        "vkml.optim.lr_scheduler",
        2,
        tier1="StepLR CosineAnnealingLR LambdaLR OneCycleLR ReduceLROnPlateau MultiStepLR ExponentialLR LinearLR "
        "LRScheduler",
    ),
    Namespace(
        "torch.utils.data",
        "vkml.utils.data",
        2,
        tier1="DataLoader Dataset TensorDataset random_split Subset",
        tier3="DataChunk DFIterDataPipe IterDataPipe MapDataPipe functional_datapipe guaranteed_datapipes_determinism "
        "non_deterministic runtime_validation runtime_validation_disabled argument_validation",
    ),
    Namespace(
        "torch.linalg",
        "vkml.linalg",
        2,
        tier1="norm vector_norm matrix_norm",
        tier2="inv solve det svd qr eigh cholesky pinv lstsq matrix_rank slogdet eig eigvalsh svdvals matrix_power "
        "matrix_exp cross vecdot multi_dot cond",
    ),
    Namespace(
        "torch.special",
        "vkml.special",
        2,
        tier2="expit logit erf erfc erfinv gammaln digamma xlogy xlog1py log_ndtr ndtr ndtri i0 sinc entr softmax "
        "log_softmax logsumexp expm1 exp2 log1p round psi polygamma multigammaln zeta",
    ),
    Namespace(
        "torch.sparse",
        "vkml.sparse",
        2,
        tier2="mm addmm sum softmax log_softmax",
        only="mm addmm sum softmax log_softmax sampled_addmm spsolve spdiags as_sparse_gradcheck "
        "check_sparse_tensor_invariants",
        note="The sparse COO tensors themselves (`sparse_coo_tensor`, `to_sparse`, `coalesce`, `indices`, ...) are "
        "compared in torch and torch.Tensor; docs/sparse.md says what vkml has.",
    ),
    Namespace(
        "torch.fft",
        "vkml.fft",
        2,
        note="The transforms are products with DFT matrices (docs/fft.md).",
    ),
    Namespace(
        "torch.autograd",
        "vkml.autograd",
        3,
        tier1="grad backward Function",
        tier2="Variable gradcheck gradgradcheck no_grad enable_grad set_grad_enabled inference_mode "
        "detect_anomaly set_detect_anomaly",
    ),
    Namespace(
        "torch.cuda",
        "vkml.cuda",
        2,
        tier1="is_available manual_seed manual_seed_all synchronize empty_cache memory_allocated max_memory_allocated",
        only="is_available device_count current_device set_device get_device_name synchronize manual_seed "
        "manual_seed_all seed seed_all initial_seed get_rng_state set_rng_state get_rng_state_all "
        "set_rng_state_all empty_cache memory_allocated max_memory_allocated memory_reserved max_memory_reserved "
        "reset_peak_memory_stats memory_stats memory_summary mem_get_info",
        note="The memory and seed functions alone. vkml keeps its memory functions at the top level "
        "(`vkml.memory_allocated`, ...: docs/memory.md); a script that calls `torch.cuda.X` needs `vkml.cuda.X`.",
    ),
    Namespace("torch.testing", "vkml.testing", 2, tier1="assert_close", only="assert_close"),
    Namespace(
        "torch.distributions",
        "vkml.distributions",
        2,
        tier1="Categorical Normal Distribution kl_divergence",
        note="docs/distributions.md: which distributions and transforms vkml has, and where it differs.",
    ),
)

# (reason, pattern). A name matching a pattern is left out of the comparison, whatever its tier.
EXCLUDED = (
    ("private (a leading underscore)", r"^_(?!_)|^__\w+__$"),
    (
        "complex32 (chalf), which vkml refuses (docs/complex.md)",
        r"^chalf$|^complex32$",
    ),
    (
        "sparse layouts other than COO (docs/sparse.md), and nn.init.sparse_",
        r"csr|csc|bsr|bsc|crow_indices|col_indices|row_indices|ccol_indices|semi_structured|SemiStructured|"
        r"^sparse_compressed|^sparse_mask$|^sparse_resize|^smm$|^sspaddmm$|^hspmm$|^saddmm$|"
        r"^to_mkldnn$|^sparse_?$|^resize_as_sparse_$",
    ),
    ("quantization", r"quantiz|^dequantize|^q_|qscheme|int_repr|qint|quint|fbgemm|per_channel|per_tensor|fake_"),
    ("distributed", r"[Dd]istributed|^rpc|DataParallel|SyncBatchNorm|^Join"),
    (
        "jit/fx/onnx/export internals and other backends' hooks",
        r"jit|^fx$|onnx|^export|mkldnn|cudnn|miopen|^nnpack|xnnpack|vulkan|^mps|^xpu|^hpu|^ipu|^mtia|^native_|"
        r"^nested|^Sym|^sym_|symint|^is_inference|^torch_function|^__torch_|^library|^Opaque|^ScriptObject|"
        r"^Aggregation|^Future|^AVG$|^SUM$|^wait$|^fork$|^DisableTorchFunction|^OpOverload|^ops$|^classes$|"
        r"^cpp$|^dlpack|^__dlpack|^__cuda_array_interface__$|^use_deterministic_algorithms_warn_only|"
        r"^from_dlpack$|^to_dlpack$",
    ),
)
# Tensor dunders that are Python syntax stay in the comparison (the private pattern drops the rest).
_KEPT_DUNDERS = frozenset((_TENSOR_DUNDER_TIER1 + " " + _TENSOR_DUNDER_TIER2).split())


# Arguments PyTorch keeps only for old code: not counted as missing.
DEPRECATED_ARGUMENTS = frozenset(("size_average", "reduce"))


def counted_argument(name: str) -> bool:
    return not name.startswith("_") and name not in DEPRECATED_ARGUMENTS


def excluded_reason(name: str) -> str | None:
    if name in _KEPT_DUNDERS:
        return None
    for reason, pattern in EXCLUDED:
        if re.search(pattern, name):
            return reason
    return None


# -- PyTorch's side: the snapshot ------------------------------------------------------------


def _kind(value) -> str:
    import torch

    if isinstance(value, torch.dtype):
        return "dtype"
    if isinstance(value, type):
        return "class"
    if callable(value):
        return "function"
    return "constant"


def _own(namespace: str, value) -> bool:
    """Whether ``value`` belongs to ``namespace`` rather than being a re-export of another place."""
    import torch

    if isinstance(value, types.ModuleType):
        return namespace == "torch.optim" and value.__name__ == "torch.optim.lr_scheduler"
    if namespace == "torch":
        return True
    if value is torch.Tensor or not callable(value):
        return False  # a re-export of the Tensor class, typing helpers, notes and mode tables
    # Natively bound functions say torch or torch._C... (or nothing); Python ones their defining module.
    module = getattr(value, "__module__", None) or ""
    return module.startswith((namespace, "torch._C")) or module in ("", "torch", "torch.functional")


def _class_names(cls, instance) -> dict[str, str]:
    """Public names of a class and of one instance of it (attributes set in __init__ count)."""
    names = {}
    for name in set(dir(cls)) | set(dir(instance)):
        if name.startswith("_") and not (cls.__name__ == "Tensor" and name.startswith("__")):
            continue
        raw = inspect.getattr_static(instance, name, None)
        names[name] = "method" if callable(raw) and not isinstance(raw, property | type) else "attribute"
    return names


def read_torch() -> dict:
    """PyTorch's public names per namespace, with their kinds: {"version": ..., namespace: {name: kind}}."""
    import torch

    out: dict = {"version": torch.__version__.split("+")[0], "signatures": {}}
    for ns in NAMESPACES:
        names: dict[str, str] = {}
        if ns.instance:
            names = _class_names(_resolve(torch, ns.torch), ns.instance(torch))
        else:
            module = importlib.import_module(ns.torch)
            wanted = ns.only.split() if ns.only else dir(module)
            for name in wanted:
                if name.startswith("__"):
                    continue
                value = getattr(module, name)
                if not _own(ns.torch, value):
                    continue
                if isinstance(value, types.ModuleType):
                    names[name] = "module"
                    continue
                names[name] = _kind(value)
        out[ns.torch] = dict(sorted(names.items()))
        owner = _resolve(torch, ns.torch) if ns.instance else importlib.import_module(ns.torch)
        signatures = {}
        for name in out[ns.torch]:
            params = parameters(getattr(owner, name, None))
            if params is not None:
                signatures[name] = params
        out["signatures"][ns.torch] = signatures
    return out


def parameters(value) -> list[str] | None:
    """The named parameters of a function, or of a class's __init__ (self left out); None where Python
    cannot tell (a C function) or where ``**kwargs`` takes any name."""
    if isinstance(value, type):
        value = value.__init__
    if not callable(value):
        return None
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in signature.parameters.values()]
    if inspect.Parameter.VAR_KEYWORD in kinds:
        return None
    return [
        p.name
        for p in signature.parameters.values()
        if p.name != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL
    ]


def _resolve(root, dotted: str):
    """``torch.nn.Module`` from the torch module and "torch.nn.Module" (or the same under vkml)."""
    value = root
    for part in dotted.split(".")[1:]:
        value = getattr(value, part)
    return value


def load_snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


# -- vkml's side --------------------------------------------------------------------------------


def vkml_names(ns: Namespace) -> set[str] | None:
    """The public names ``ns.vkml`` has, or None when vkml has no such namespace."""
    if ns.instance:
        import vkml

        try:
            cls = _resolve(vkml, ns.vkml)
        except AttributeError:
            return None
        # dir of an instance as well: attributes set in __init__ count; no property is evaluated.
        return set(dir(cls)) | set(dir(ns.instance(vkml)))
    try:
        module = importlib.import_module(ns.vkml)
    except ModuleNotFoundError:
        return None
    return set(dir(module))


# -- the comparison -----------------------------------------------------------------------------


@dataclass
class Row:
    namespace: Namespace
    vkml_exists: bool
    present: dict[int, list[str]] = field(default_factory=lambda: {1: [], 2: [], 3: []})
    missing: dict[int, list[str]] = field(default_factory=lambda: {1: [], 2: [], 3: []})
    excluded: dict[str, list[str]] = field(default_factory=dict)
    # per tier, (name, PyTorch arguments vkml's same-named function or class lacks)
    missing_arguments: dict[int, list[tuple[str, list[str]]]] = field(default_factory=lambda: {1: [], 2: [], 3: []})


def tier_of(ns: Namespace, name: str) -> int:
    for tier, listed in ((1, ns.tier1), (2, ns.tier2), (3, ns.tier3)):
        if name in listed.split():
            return tier
    return ns.default_tier


def _order(ns: Namespace, tier: int) -> dict[str, int]:
    listed = (ns.tier1, ns.tier2, ns.tier3)[tier - 1].split()
    return {name: i for i, name in enumerate(listed)}


def vkml_owner(ns: Namespace):
    import vkml

    if ns.instance:
        return _resolve(vkml, ns.vkml)
    return importlib.import_module(ns.vkml)


def compare(snapshot: dict | None = None) -> list[Row]:
    snapshot = snapshot or load_snapshot()
    rows = []
    for ns in NAMESPACES:
        have = vkml_names(ns)
        row = Row(ns, have is not None)
        signatures = snapshot["signatures"].get(ns.torch, {})
        for name in snapshot[ns.torch]:
            reason = excluded_reason(name)
            if reason:
                row.excluded.setdefault(reason, []).append(name)
                continue
            tier = tier_of(ns, name)
            present = bool(have) and name in have
            (row.present if present else row.missing)[tier].append(name)
            # Operators are called by syntax, never with keywords: their parameter names do not matter.
            if present and name in signatures and not name.startswith("__"):
                ours = parameters(getattr(vkml_owner(ns), name))
                if ours is not None:
                    lacking = [a for a in signatures[name] if a not in ours and counted_argument(a)]
                    if lacking:
                        row.missing_arguments[tier].append((name, lacking))
        for tier in (1, 2, 3):
            order = _order(ns, tier)
            for group in (row.present, row.missing):
                group[tier].sort(key=lambda n, order=order: (order.get(n, len(order)), n))
            row.missing_arguments[tier].sort(key=lambda item, order=order: (order.get(item[0], len(order)), item[0]))
        rows.append(row)
    return rows


def missing_tier1(rows: list[Row] | None = None) -> set[str]:
    """Tier-1 names vkml lacks, as "namespace.name"."""
    return {f"{row.namespace.torch}.{n}" for row in rows or compare() for n in row.missing[1]}


def missing_tier1_arguments(rows: list[Row] | None = None) -> set[str]:
    """Arguments of tier-1 names that vkml's same-named function or class lacks, as "namespace.name(argument)"."""
    return {
        f"{row.namespace.torch}.{name}({argument})"
        for row in rows or compare()
        for name, arguments in row.missing_arguments[1]
        for argument in arguments
    }


# -- the page -----------------------------------------------------------------------------------


def _count(row: Row, tier: int) -> str:
    have, total = len(row.present[tier]), len(row.present[tier]) + len(row.missing[tier])
    return f"{have}/{total}" if total else "-"


def _folded(summary: str, body: str) -> list[str]:
    """A collapsed block: tier 3 and the exclusions are there to look up, not to read through."""
    return ["<details><summary>" + summary + "</summary>", "", body, "", "</details>", ""]


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def render(rows: list[Row] | None = None, snapshot: dict | None = None) -> str:
    snapshot = snapshot or load_snapshot()
    rows = rows or compare(snapshot)
    lines = [
        "# PyTorch API coverage",
        "",
        f"Generated by `{COMMAND}` (do not edit): PyTorch {snapshot['version']}'s public names "
        "(the snapshot tools/torch_api.json) against what vkml has under the same name and place, "
        "so that a script runs after `import vkml as torch`. A name counts as present when the attribute "
        "exists; whether every argument of it is supported is each op's page's business (docs/ops/).",
        "",
        "Tiers, most used first within each (the lists and their sources are in tools/api_coverage.py): "
        "tier 1 is what typical training scripts use (pytorch/examples, nanoGPT, the tutorials), tier 2 the "
        "less common public API, tier 3 legacy, backend-specific and internal names (not in the headline). "
        "tests/test_api_coverage.py fails on a tier-1 name missing that its KNOWN_MISSING list does not name.",
        "",
        "Arguments: where both sides are Python functions or classes (not C builtins) and vkml's takes no "
        "`**kwargs`, the page lists the parameters of PyTorch's that vkml's lacks (deprecated `size_average`/`reduce` "
        "and private ones left out); tier-1 gaps are held by the test's KNOWN_MISSING_ARGUMENTS the same way.",
        "",
        "| namespace | vkml | tier 1 | tier 2 | headline (1+2) | tier 3 | excluded |",
        "|---|---|---|---|---|---|---|",
    ]
    all_have = all_total = 0
    for row in rows:
        have = len(row.present[1]) + len(row.present[2])
        total = have + len(row.missing[1]) + len(row.missing[2])
        all_have, all_total = all_have + have, all_total + total
        place = f"`{row.namespace.vkml}`" if row.vkml_exists else f"no `{row.namespace.vkml}`"
        lines.append(
            f"| `{row.namespace.torch}` | {place} | {_count(row, 1)} | {_count(row, 2)} | {have}/{total} "
            f"| {_count(row, 3)} | {sum(map(len, row.excluded.values()))} |"
        )
    lines += ["", f"Headline: vkml has {all_have} of PyTorch's {all_total} tier-1 and tier-2 names.", ""]
    for row in rows:
        ns = row.namespace
        lines += [f"## `{ns.torch}`", ""]
        if ns.note:
            lines += [ns.note, ""]
        if not row.vkml_exists:
            lines += [f"vkml has no `{ns.vkml}`: every name below is missing.", ""]
        for tier in (1, 2):
            if row.missing[tier]:
                lines += [f"Missing, tier {tier} ({len(row.missing[tier])}): {_names(row.missing[tier])}", ""]
        if row.missing[3]:
            lines += _folded(f"Missing, tier 3 ({len(row.missing[3])})", _names(row.missing[3]))
        if not any(row.missing.values()):
            lines += ["Nothing missing.", ""]
        for tier in (1, 2):
            if row.missing_arguments[tier]:
                listed = ", ".join(f"`{name}({', '.join(args)})`" for name, args in row.missing_arguments[tier])
                lines += [f"Arguments vkml lacks, tier {tier} ({len(row.missing_arguments[tier])}): {listed}", ""]
        for reason, names in sorted(row.excluded.items()):
            lines += _folded(f"Excluded, {reason} ({len(names)})", _names(names))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/coverage.md is stale")
    parser.add_argument("--snapshot", action="store_true", help="re-read tools/torch_api.json from installed torch")
    args = parser.parse_args(argv)
    if args.snapshot:
        SNAPSHOT.write_text(json.dumps(read_torch(), indent=1) + "\n")
    text = render()
    if args.check:
        current = PAGE.exists() and PAGE.read_text() == text
        print("docs/coverage.md is current" if current else f"docs/coverage.md is stale: run `{COMMAND}`")
        return 0 if current else 1
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
