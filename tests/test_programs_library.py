"""Programs written the way popular libraries write model code (tests/programs/) run under vkml as under
PyTorch, by their import lines alone: a Hugging Face GPT-2 modeling file with its sampling loop
(hf_gpt2), a timm ViT with its training utilities (timm_vit), a DiT with its Gaussian diffusion
(dit_adaln), a Conformer CTC recogniser with a torchaudio front end (conformer_ctc), a
Lightning-style trainer with callbacks, checkpoints and mixed precision (lightning_loop) and a
torchvision-style RetinaNet with an FPN, anchors, focal loss and NMS (retinanet_fpn); each
docstring lists the idioms it checks.

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into
the vkml model, and both train on the same data; random draws the programs make while training
(``bernoulli_``, ``randint``, ``randn_like``, ``rand``, ``multinomial``, a shuffling ``DataLoader``) stay
live, since vkml's generator gives PyTorch's draws; dropout is off (``DROPOUT = 0``). The whole
comparisons compile a few hundred kernels on the CPU interpreter (30-90 s each), so they run with
``make test-all`` (``-m stress``); the default suite compares the programs' pure functions. The gap
they found is tested in tests/test_programs_m_gaps.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, compare_program

# name: (steps, rtol)
PROGRAMS = {
    "hf_gpt2": (3, 1e-4),
    "timm_vit": (3, 1e-4),
    "dit_adaln": (3, 1e-4),
    "conformer_ctc": (3, 1e-4),
    "lightning_loop": (4, 1e-4),
    "retinanet_fpn": (3, 1e-4),
}
# Other module constants a program is compared under, besides its defaults, with their tolerance.
VARIANTS = [
    ("hf_gpt2", {"ATTN": "sdpa"}, 1e-4),
    # live drop-path draws; the written-out attention, timm's init, adaptive clipping, the foreach EMA
    ("timm_vit", {"DROP_PATH": 0.1, "ATTN": "manual", "INIT": "timm", "CLIP": "agc", "EMA": "v3"}, 1e-4),
    ("timm_vit", {"EMA": "swa_utils", "GRAD_CHECKPOINTING": True}, 1e-4),
    ("lightning_loop", {"PRECISION": "16-mixed"}, 1e-4),
    # bfloat16 autocast: the first loss is the same bits (tests/test_programs_m_gaps.py), but the first
    # gradients are not: PyTorch's CPU layer_norm backward for a bfloat16 input with float32 weight and
    # bias gives parameter gradients that are neither the float32 sums of the bfloat16 upstream gradient
    # nor their rounding, and vkml gives the float32 sums; a validation accuracy flips by the last epoch
    pytest.param(
        "lightning_loop",
        {"PRECISION": "bf16-mixed"},
        2e-3,
        marks=pytest.mark.xfail(strict=True, reason="bfloat16 layer_norm backward under CPU autocast"),
    ),
]


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    steps, rtol = PROGRAMS[name]
    got = compare_program(name, monkeypatch, steps, rtol)
    if name == "hf_gpt2":  # the cache gave the full pass's logits; lm_head stayed tied
        assert got["cache_ok"] and got["tied"] and got["buffers"] == 4
    if name == "dit_adaln":
        assert got["frozen_pos_embed"]
    if name == "lightning_loop":  # the run resumed from last.ckpt went on as the uninterrupted one
        assert got["resumes_exactly"] and got["precision"] == "high"


@pytest.mark.stress
@pytest.mark.parametrize(("name", "constants", "rtol"), VARIANTS, ids=lambda v: str(v))
def test_program_variant_matches_pytorch(name, constants, rtol, monkeypatch):
    steps = PROGRAMS[name][0]
    got = compare_program(name, monkeypatch, steps, rtol, constants=constants)
    if name == "lightning_loop":
        assert got["resumes_exactly"]


def _both(name, monkeypatch):
    return _load(name, "torch", monkeypatch), _load(name, "vkml", monkeypatch)


def test_hf_logits_processors_match_pytorch(monkeypatch):
    """Repetition penalty, temperature, top-k and top-p over one row of scores, then a seeded draw."""
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(2, 12)).astype(np.float32)
    input_ids = np.array([[1, 3, 3], [0, 5, 11]])
    results = []
    for program in _both("hf_gpt2", monkeypatch):
        torch = program.torch
        processed = torch.from_numpy(scores)
        for processor in (
            program.RepetitionPenaltyLogitsProcessor(1.3),
            program.TemperatureLogitsWarper(0.7),
            program.TopKLogitsWarper(top_k=6),
            program.TopPLogitsWarper(top_p=0.8),
        ):
            processed = processor(torch.from_numpy(input_ids), processed)
        torch.manual_seed(3)
        draws = torch.multinomial(processed.softmax(-1), num_samples=1).squeeze(1)
        results.append((processed.numpy(), draws.tolist()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    assert results[1][1] == results[0][1]


def test_timm_trunc_normal_and_pos_embed_resampling_match_pytorch(monkeypatch):
    """timm's erfinv-based ``trunc_normal_`` after a seed, and bicubic antialiased resampling."""
    posemb = np.random.default_rng(1).normal(size=(1, 1 + 16, 4)).astype(np.float32)
    results = []
    for program in _both("timm_vit", monkeypatch):
        torch = program.torch
        torch.manual_seed(5)
        weight = program.trunc_normal_(torch.empty(6, 5), std=0.02)
        resized = program.resample_abs_pos_embed(torch.from_numpy(posemb), (6, 6), num_prefix_tokens=1)
        results.append((weight.numpy(), resized.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def test_conformer_front_end_and_rel_shift_match_pytorch(monkeypatch):
    """The log-mel front end (``torch.stft``, the HTK filterbank, ``top_db``) and ESPnet's ``rel_shift``."""
    wave = np.sin(np.linspace(0, 60, 400)).astype(np.float32)[None] * np.array([[1.0], [0.5]], dtype=np.float32)
    scores = np.arange(2 * 2 * 3 * 5, dtype=np.float32).reshape(2, 2, 3, 5)
    results = []
    for program in _both("conformer_ctc", monkeypatch):
        torch = program.torch
        frontend = program.MelSpectrogram(sample_rate=1600, n_fft=64, hop_length=16, n_mels=8)
        features = program.AmplitudeToDB(top_db=80.0)(frontend(torch.from_numpy(wave)))
        attention = program.RelPositionMultiHeadedAttention(2, 4, 0.0)
        shifted = attention.rel_shift(torch.from_numpy(scores))
        mask = program.make_pad_mask(torch.tensor([3, 5]), 6)
        results.append((features.numpy(), shifted.numpy(), mask.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(results[1][1], results[0][1])
    np.testing.assert_array_equal(results[1][2], results[0][2])


def test_dit_embeddings_and_diffusion_terms_match_pytorch(monkeypatch):
    """DiT's sinusoidal timestep embedding, ``_extract_into_tensor`` over float64 schedules and the
    variational bound's Gaussian terms."""
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 2, 2)
    results = []
    for program in _both("dit_adaln", monkeypatch):
        torch = program.torch
        t = torch.tensor([0, 7])
        embedding = program.TimestepEmbedder.timestep_embedding(t, 8)
        diffusion = program.GaussianDiffusion(program.get_named_beta_schedule("squaredcos_cap_v2", 10))
        coef = program._extract_into_tensor(diffusion.sqrt_alphas_cumprod, t, x.shape)
        means = torch.from_numpy(x) * 0.5
        kl = program.normal_kl(torch.from_numpy(x), 0.0, means, coef.log())
        nll = program.discretized_gaussian_log_likelihood(torch.from_numpy(x), means=means, log_scales=coef * 0 - 1.0)
        results.append([embedding.numpy(), coef.numpy(), kl.numpy(), nll.numpy()])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_detection_box_ops_match_pytorch(monkeypatch):
    """torchvision's box IoU, the low-quality-allowing Matcher and box coding (``batched_nms``, a loop that
    realizes a shrinking tensor each pass, is compared by the whole program with ``-m stress``)."""
    rng = np.random.default_rng(4)
    corners = rng.uniform(0, 20, size=(12, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(2, 10, size=(12, 2)).astype(np.float32)], axis=1)
    results = []
    for program in _both("retinanet_fpn", monkeypatch):
        torch = program.torch
        b = torch.from_numpy(boxes)
        iou = program.box_iou(b[:3], b)
        matches = program.Matcher(0.5, 0.4, allow_low_quality_matches=True)(iou)
        coder = program.BoxCoder((1.0, 1.0, 1.0, 1.0))
        decoded = coder.decode_single(coder.encode_single(b[:6], b[6:]), b[6:])
        results.append([iou.numpy(), matches.numpy(), decoded.numpy()])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
