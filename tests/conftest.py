"""Shared pytest configuration: an isolated kernel cache and hypothesis profiles.

Nothing op-specific belongs here; fixtures for one area live beside that area's tests.
"""

from __future__ import annotations

import gc
import os
import platform
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# PyTorch's CPU kernels, the tests' oracle, give other last bits on other instruction sets: its
# vectorized gelu and its oneDNN half-precision convolutions round otherwise under AVX-512 (FP16, AMX)
# than under AVX2, measured on the GPU machine's CPU. The tests' expectations are AVX2's, the widest
# set every x86-64 CI machine has; set before any test module imports torch (each reads them once).
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
    os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")

# "ci" (the default): no per-example deadline, since timings on a shared 2-core machine with a
# software Vulkan driver say nothing about the code; few enough examples to keep the suite short.
settings.register_profile(
    "ci", deadline=None, max_examples=20, print_blob=True, derandomize=True
)  # CI: same examples every run
# "thorough": for a deliberate bug hunt, `HYPOTHESIS_PROFILE=thorough make test`.
settings.register_profile("thorough", deadline=None, max_examples=2000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_CACHE_DIR_KEY = pytest.StashKey[Path]()


_OWNS_CACHE_DIR_KEY = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    # Set here rather than in a fixture: a module that reads VKML_CACHE_DIR on import may be
    # imported while tests are collected, before any fixture runs.
    # pytest-xdist workers use the controller's folder (pytest_configure_node): a kernel one worker
    # compiled is a disk hit for the others, as for a second process of a user. The cache is made for
    # processes that share a folder (vkml/runtime/vulkan/kernel_cache.py); tests of the cache itself
    # use folders of their own.
    shared = getattr(config, "workerinput", {}).get("vkml_cache_dir")
    cache_dir = Path(shared) if shared else Path(tempfile.mkdtemp(prefix="vkml-test-cache-"))
    config.stash[_CACHE_DIR_KEY] = cache_dir
    config.stash[_OWNS_CACHE_DIR_KEY] = not shared
    os.environ["VKML_CACHE_DIR"] = str(cache_dir)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist, in the controller: each worker gets the controller's kernel-cache folder."""
    node.workerinput["vkml_cache_dir"] = str(node.config.stash[_CACHE_DIR_KEY])


def pytest_unconfigure(config: pytest.Config) -> None:
    cache_dir = config.stash.get(_CACHE_DIR_KEY, None)
    if cache_dir is not None and config.stash.get(_OWNS_CACHE_DIR_KEY, False):
        shutil.rmtree(cache_dir, ignore_errors=True)


# The garbage collector's full collections walked every object the session had kept (torch, vkml's
# modules, plan and kernel caches: over a million), about a quarter of a worker's CPU time. After each
# test its cyclic garbage is collected (a collection of what the test made: frozen objects are not
# walked), and what survives is frozen (gc.freeze: left out of later collections, still freed by
# reference counting), so a full collection walks only what later tests made. A frozen cycle that dies
# later (a module fixture's, an evicted cache entry's) waits for the sweep every _GC_SWEEP_EVERY tests,
# which collects everything once. Garbage must not be frozen: a dead check, say, found by a later
# test's weak sets (test_edge_inputs.py::test_a_check_is_forgotten_with_the_tensors_it_guards).
_GC_SWEEP_EVERY = 500
_tests_since_sweep = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _tests_since_sweep
    yield
    _tests_since_sweep += 1
    if _tests_since_sweep >= _GC_SWEEP_EVERY:
        _tests_since_sweep = 0
        gc.unfreeze()
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def vkml_cache_dir(pytestconfig: pytest.Config) -> Path:
    """The kernel-cache folder this test session (all its xdist workers) uses in place of the user's own."""
    return pytestconfig.stash[_CACHE_DIR_KEY]


@pytest.fixture(scope="session")
def gpu():
    """The best Vulkan device: lavapipe in CI (make test installs it as root), the H200 on the GPU machine."""
    import vkml

    assert vkml.vulkan_device_reports(), "no Vulkan device: install lavapipe (make test does, as root)"
    return vkml.best_device()


@pytest.fixture
def cpu_tuning():
    """Set the CPU device's kernel tuning for one test (``cpu_tuning(t)``); the default comes back afterwards."""
    import vkml
    from vkml.kernels import tuning as kernels_tuning

    cpu = vkml.device("cpu")
    yield lambda tuning: kernels_tuning.set_tuning(cpu, tuning)
    kernels_tuning.set_tuning(cpu, None)


@pytest.fixture
def no_channels_last_seen_yet(monkeypatch):
    """Count what a program that never used channels-last pays: while a tensor with that format is alive
    (an earlier test's ``.to(memory_format=channels_last)`` not yet collected, or one a module keeps), ops
    carry formats and the counts would depend on which tests a worker ran first. Files that count nodes or
    bytecodes use it for every test (``pytestmark = pytest.mark.usefixtures(...)``)."""
    import gc

    from vkml.frontend import memory_format

    if memory_format.ACTIVE:
        gc.collect()  # the dead ones leave the count (memory_format._forget)
    if memory_format.ACTIVE:  # kept alive elsewhere: hidden from this test only
        monkeypatch.setattr(memory_format, "_LIVE", {})
        monkeypatch.setattr(memory_format, "ACTIVE", False)


# Long checks that run with `make test-all` (-m stress) rather than in `make test`, which CI runs
# on a 2-core machine within 10 minutes. Each took over ~15 s there (the tests' durations under
# `pytest --durations`); a shorter sibling of each stays in the default suite (the other
# programs, example runs, memory and RNN checks).
LONG_RUNNING = (
    "tests/test_programs.py::test_program_matches_pytorch[char_lstm]",
    "tests/test_programs.py::test_program_matches_pytorch[checkpoint_resume]",
    "tests/test_programs.py::test_program_matches_pytorch[transformer_lm]",
    "tests/test_examples.py::test_cnn_classifier",
    "tests/test_examples.py::test_char_sampler",
    "tests/test_cache_memory.py::test_a_new_batch_size_every_step_keeps_memory_flat",
    "tests/test_gpt_example.py::test_gpt_mixed_precision_run_resumes_with_the_same_bits",
    "tests/test_nn_rnn.py::test_input_state_and_second_order_gradients_match_torch[lstm_bidirectional]",
    "tests/test_schedule.py::test_a_chain_of_thousands_of_ops_realizes",
    "tests/test_nn_transformer.py::test_transformer_xavier_init_and_dropout_in_training",
    "tests/test_reduce_columns.py::test_same_bits_as_the_tree_under_every_tuning[one-block]",
    "tests/test_reduce_columns.py::test_same_bits_as_the_tree_under_every_tuning[tiny]",
    "tests/test_reduce_columns.py::test_same_bits_as_the_tree_under_every_tuning[wide-blocks]",
    "tests/test_memory.py::test_many_realizes_keep_device_and_host_memory_flat[10000]",
    "tests/test_nn_rnn.py::test_rnn_modules_match_torch[lstm_bidirectional_2_layers]",
    "tests/test_demo.py::test_demo_report_and_cpu_losses_bit_for_bit",
    "tests/test_huge_tensors.py::test_reductions_of_a_broadcast_of_2_to_the_32_plus_5_on_vulkan",
    "tests/test_huge_tensors.py::test_argmax_past_2_to_the_32_on_vulkan",
    "tests/test_gpt_example.py::test_gpt_main_runs_as_a_program_from_a_text_file",
    "tests/test_examples.py::test_modules_and_buffers",
    "tests/test_programs.py::test_program_matches_pytorch[gpt_attention]",
    "tests/test_programs.py::test_program_matches_pytorch[mnist_style]",
    "tests/test_programs.py::test_program_matches_pytorch[word_language_model]",
    "tests/test_programs.py::test_program_matches_pytorch[fast_neural_style]",
    "tests/test_threads.py::test_threads_realize_shared_graphs_with_single_thread_bits[cpu]",
    "tests/test_ops_trig.py::test_dsl_functions_give_the_ops_bits_and_torchs_gradients",
    "tests/test_nn_rnn.py::test_rnn_vulkan_equals_cpu[gru_bidirectional_batch_first]",
    "tests/test_memory.py::test_cpu_backend_releases_intermediates",
    "tests/test_registry_ir.py::",  # every op's IR per dtype; the ops' own tests run their IR too
    "tests/test_ops_trig.py::test_gradient_matches_torch[lgamma]",
    "tests/test_ops_trig.py::test_gradient_matches_torch[digamma]",
    # Boundary lengths under each tuning: every tuning runs at 3 rows, the CPU's at 1 row and the small
    # GPU layout's at 40 rows (rows that fill a chunk) by default; the other pairings with -m stress.
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[1-small-gpu]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[1-shared-only]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[1-h200]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[40-cpu]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[40-shared-only]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[40-h200]",
    # Cooperative-matrix tile candidates interpreted on the CPU: the default suite keeps the default
    # shape, element-wise staging (v1), K-steps of 16 and of 64, 8 subgroups (sg32x64) and the
    # two-block epilogue (e2); the larger tiles (seconds each) run with -m stress.
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[128x128x32 sg64x64 v4]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[128x128x32 sg64x64 v4 e2]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[256x128x16 sg64x64 v4]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[128x256x16 sg64x64 v4]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[256x128x16 sg128x32 v4]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[128x128x16 sg64x32 v4 e2]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[64x128x32 sg32x32 v4]",
    # The float16 rows of the two largest kernels on lavapipe; their float32 rows stay, and
    # tests/test_polygamma_zeta.py checks polygamma on lavapipe too.
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[zeta-float16]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[polygamma-float16]",
    # Session 19's trim of the default suite (docs/testing.md): each row took 4-30 s of one core, and a
    # sibling stays in `make test`. Max-pool's window-order gradient keeps its float32 rows and the
    # float16 row of the 3x3 window; coopmat2's device path keeps its two smaller products (the
    # largest is the H200's case, scalar on lavapipe); the tunings' rows in one kernel keep
    # shared-only and h200; nn's module table keeps its other rows (GELU and LayerNorm are checked in
    # tests/test_nn_norm.py and the op tables); the programs keep mlp_classifier, cnn_batchnorm and
    # the others; the norm layers' steps keep bn1d and bn2d (BatchNorm3d is their _BatchNorm over one
    # more axis; its repr and state stay in make test).
    "tests/test_nn_pool.py::test_overlapping_max_pool_gradients_add_in_pytorchs_order[5-2-2-1-float16]",
    "tests/test_nn_pool.py::test_overlapping_max_pool_gradients_add_in_pytorchs_order[3-1-1-2-float16]",
    "tests/test_matmul_coopmat2.py::test_the_device_runs_the_path_its_features_choose[1000-1024-1100]",
    "tests/test_kernels_tuning.py::test_rows_in_one_kernel_give_the_bits_of_the_cpu_layout[small-gpu]",
    "tests/test_nn.py::test_modules_match_torch_and_vulkan_equals_cpu[gelu_layernorm]",
    "tests/test_programs.py::test_program_matches_pytorch[forward_forward]",
    "tests/test_programs.py::test_program_matches_pytorch[conv_autoencoder]",
    "tests/test_programs.py::test_program_matches_pytorch[neural_style]",
    "tests/test_programs.py::test_program_matches_pytorch[nn_tutorial]",
    "tests/test_nn_norm.py::test_norm_layers_match_torch_over_train_and_eval_steps[bn3d]",
    # The float16 rows of the gamma family's large float32 kernels (their float32 rows stay, as for
    # zeta and polygamma above).
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[digamma-float16]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[lgamma-float16]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[trigamma-float16]",
    # Session 20 (make test at 10:04 in pytest on CI's machine): the slowest cases with siblings of the same
    # test left in the default run (the other pool shapes and dtypes, tuning boundaries, RNN kinds, norm
    # layers, special functions, attention variants)
    "tests/test_nn_pool.py::test_overlapping_max_pool_gradients_add_in_pytorchs_order[3-1-1-1-float16]",
    "tests/test_nn_pool.py::test_overlapping_max_pool_gradients_add_in_pytorchs_order[5-2-2-1-float32]",
    "tests/test_kernels_tuning.py::test_rows_in_one_kernel_give_the_bits_of_the_cpu_layout[shared-only]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[3-h200]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[3-cpu]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[3-small-gpu]",
    "tests/test_nn_rnn.py::test_rnn_modules_match_torch[gru_bidirectional_batch_first]",
    "tests/test_adafactor.py::test_adafactor_follows_pytorch[maximize]",
    "tests/test_nn_norm.py::test_norm_layers_match_torch_over_train_and_eval_steps[instancenorm stats affine]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[zeta-float32]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[polygamma-float32]",
    "tests/test_attention_fused.py::test_fused_vulkan_equals_cpu[gqa-float16-1]",
    "tests/test_torch_names.py::test_dist_matches_torch[3.5]",
    "tests/test_clip_grad.py::test_clip_grad_norm_matches_torch[0.01-3.5]",
    "tests/test_nn_transformer.py::test_transformer_modules_match_torch[decoder_stack_norm_first]",
    "tests/test_nn_transformer.py::test_transformer_vulkan_equals_cpu[decoder_layer]",
    "tests/test_dtype_view.py::test_view_dtype_every_pair_gives_torch_bits[gpu]",
    "tests/test_nn_norm.py::test_norm_layers_match_torch_over_train_and_eval_steps[groupnorm]",
    "tests/test_optim.py::test_steps_match_torch[SGD-0]",
    "tests/test_nn_rnn.py::test_input_state_and_second_order_gradients_match_torch[gru_2_layers]",
    "tests/test_nn_layers_more.py::test_layers_match_torch[cosine similarity broadcast]",
    "tests/test_nn_transformer.py::test_transformer_modules_match_torch[decoder_layer]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[3-shared-only]",
    "tests/test_kernels_tuning.py::test_reductions_follow_the_tree_at_every_boundary[40-small-gpu]",
    "tests/test_kernels_tuning.py::test_rows_of_views_keep_the_bits_of_the_cpu_layout[small-gpu-staged]",
    "tests/test_matmul_coopmat.py::test_every_candidate_gives_the_scalar_bits[128x128x32 sg32x64 v4]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[digamma-float32]",
    "tests/test_vulkan_ops.py::test_elementwise_op_same_bits_as_cpu[lgamma-float32]",
    "tests/test_mathlib_rounding.py::test_exp_bits_unchanged_on_every_97th_pattern_of_its_range[exp-_old_exp--104.0-89.0]",
    # session 21 (make test took 13:16 in pytest on this machine; each below 3-8 s, a sibling stays)
    "tests/test_adafactor.py::test_adafactor_follows_pytorch[defaults]",
    "tests/test_clip_grad.py::test_clip_grad_norm_matches_torch[10.0-3.5]",
    "tests/test_nn_rnn.py::test_kernels_per_time_step[LSTM]",
    "tests/test_nn_transformer.py::test_transformer_modules_match_torch[transformer]",
    "tests/test_optim.py::test_steps_match_torch[SGD-1]",
    "tests/test_reduce_columns.py::test_same_bits_as_the_tree_under_every_tuning[h200]",
    "tests/test_pytorch_suite_reductions.py::test_reductions[dims]",
)
# The per-op, per-dtype tables run every op on the dtypes most programs use (float32, float16)
# by default; the other dtypes' rows run with `make test-all`. Each dtype's own tests
# (tests/test_uint16.py, test_mathlib_f64.py, test_dtype_*.py, ...) stay in the default suite.
DTYPE_TABLES = (
    "tests/test_vulkan_ops.py::",
    "tests/test_registry_ir.py::",
    "tests/test_dtypes.py::",
    "tests/test_ops_elementwise_more.py::",
)
_OTHER_DTYPE = re.compile(r"[\[-](int8|uint8|int16|uint16|int32|int64|bool|bfloat16|float64)[\]-]")


# torch.special's ops (vkml/ops/special.py) are large float64 kernels (seconds to compile on lavapipe each):
# their same-bits rows of the per-op table run with `make test-all`; tests/test_special.py checks a few
# of them on lavapipe by default, the rest with -m stress.
_SPECIAL_ROW = re.compile(r"test_vulkan_ops\.py::test_elementwise_op_same_bits_as_cpu\[(\w+)-")


def _special_op_row(nodeid: str) -> bool:
    from vkml.ops import special

    match = _SPECIAL_ROW.search(nodeid)
    return match is not None and match.group(1) in special.OPS


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        if (
            item.nodeid.startswith(LONG_RUNNING)
            or (item.nodeid.startswith(DTYPE_TABLES) and _OTHER_DTYPE.search(item.nodeid))
            or _special_op_row(item.nodeid)
        ):
            item.add_marker(pytest.mark.stress)
