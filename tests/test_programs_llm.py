"""Modern LLM-family training code (tests/programs/) runs under vkml as under PyTorch, by its import
lines alone: a Llama-style decoder with a KV cache and top-p sampling (llama_decoder), a sparse
mixture of experts (moe_router), Mamba and RWKV blocks (selective_scan) and a T5 encoder-decoder
(t5_encoder_decoder); each docstring lists the idioms it checks.

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into
the vkml model, and both train on the same data; every number must agree to the program's
tolerance. Under PyTorch ``torch.compile`` is the identity (its CPU backend needs a C compiler and
compiles for minutes); vkml's is its own. The whole comparisons compile a few hundred kernels on the
CPU interpreter, so they run with ``make test-all`` (``-m stress``); the default suite compares the
programs' pure functions (relative position buckets, rotary embeddings, top-p sampling, segsum).
The gaps they found are tested in tests/test_llm_program_idioms.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, _numbers, compare_program, run_program

# name: (steps, rtol)
PROGRAMS = {
    "llama_decoder": (3, 1e-4),
    "moe_router": (3, 1e-4),
    "selective_scan": (3, 1e-4),
    "t5_encoder_decoder": (3, 1e-4),
}
# Other module constants a program is compared under, besides its defaults, with their tolerance.
VARIANTS = [
    ("llama_decoder", {"ROPE": "rotate_half", "ATTN": "repeat_interleave", "SAMPLER": "hf"}, 1e-4),
    ("llama_decoder", {"ATTN": "sdpa_gqa"}, 1e-4),
    ("llama_decoder", {"ROPE": "rotate_half", "ATTN": "sdpa_gqa", "COMPILE": False}, 1e-4),
    ("moe_router", {"ROUTER": "switch"}, 1e-4),
    ("moe_router", {"ROUTER": "gptfast"}, 1e-4),
    ("selective_scan", {"SCAN": "cumsum"}, 1e-4),
    ("selective_scan", {"MIXER": "rwkv"}, 1e-4),
    ("t5_encoder_decoder", {"FUSED": True}, 1e-4),
    # bfloat16 autocast: the first loss is the same bits; later steps differ by bfloat16 roundings of
    # values accumulated in another order (as tests/test_programs_training.py's gpt_amp_train)
    ("t5_encoder_decoder", {"AMP": True}, 2e-3),
]


def _eager_reference(monkeypatch):
    """A program's ``prepare``: under PyTorch, ``torch.compile`` hands back the model itself, so the
    reference run is PyTorch's eager one."""

    def prepare(program):
        if program.torch.__name__ == "torch":
            monkeypatch.setattr(program.torch, "compile", lambda model, **options: model)

    return prepare


def _run(name, backend, monkeypatch, initial=None, constants=None):
    steps = PROGRAMS[name][0]
    return run_program(name, backend, monkeypatch, steps, initial, constants, prepare=_eager_reference(monkeypatch))


def _compare(name, monkeypatch, constants=None, rtol=None):
    steps, default_rtol = PROGRAMS[name]
    prepare = _eager_reference(monkeypatch)
    return compare_program(name, monkeypatch, steps, rtol or default_rtol, constants=constants, prepare=prepare)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    got = _compare(name, monkeypatch)
    if name == "llama_decoder":  # the KV cache gave what one pass over the sequence gives
        assert got["cache_matches"] and got["inference"] == [True, False]
    if name == "selective_scan":  # the recurrent step gave what the scan gives
        assert got["step_matches"] and got["tied"]


@pytest.mark.stress
@pytest.mark.parametrize(("name", "constants", "rtol"), VARIANTS, ids=lambda v: str(v))
def test_program_variant_matches_pytorch(name, constants, rtol, monkeypatch):
    _compare(name, monkeypatch, constants, rtol)


@pytest.mark.stress
@pytest.mark.parametrize(("name", "constants"), [("moe_router", {"ROUTER": "gptfast"}), ("selective_scan", {})])
def test_program_same_bits_on_vulkan(name, constants, monkeypatch, gpu):
    """On a Vulkan device each number is the CPU backend's, bit for bit (and so PyTorch's, as above)."""
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial, constants)
    _, on_vulkan = _run(name, "vkml", monkeypatch, initial, dict(constants, DEVICE=str(gpu)))
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=PROGRAMS[name][1], atol=1e-6)


def _pieces(backend, monkeypatch):
    """The programs' pure functions on fixed inputs, forward only (each backward compiles a dozen more
    kernels on the CPU interpreter): the short form of the comparisons above, for ``make test``."""
    rng = np.random.default_rng(5)
    out = []
    t5 = _load("t5_encoder_decoder", backend, monkeypatch)
    torch = t5.torch
    relative = torch.arange(-20, 21)[None, :] - torch.arange(3)[:, None]
    for bidirectional in (True, False):
        out.append(t5.T5Attention._relative_position_bucket(relative, bidirectional, 8, 16).flatten().tolist())

    llama = _load("llama_decoder", backend, monkeypatch)
    torch = llama.torch
    xq = torch.tensor(rng.standard_normal((2, 3, 2, 4)).astype(np.float32))
    xk = torch.tensor(rng.standard_normal((2, 3, 1, 4)).astype(np.float32))
    q, k = llama.apply_rotary_emb(xq, xk, llama.precompute_freqs_cis(4, 6)[1:4])
    out += [q.flatten().tolist(), k.flatten().tolist()]
    logits = torch.tensor(rng.standard_normal((2, 7)).astype(np.float32))
    out.append(llama.sample_top_p(torch.softmax(logits, dim=-1), 1e-3).flatten().tolist())

    scan = _load("selective_scan", backend, monkeypatch)
    torch = scan.torch
    log_decay = torch.tensor(-rng.random((2, 5)).astype(np.float32))
    out.append(torch.exp(scan.segsum(log_decay)).flatten().tolist())
    return out


def test_program_pieces_match_pytorch(monkeypatch):
    expected = _pieces("torch", monkeypatch)
    got = _pieces("vkml", monkeypatch)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-5, atol=1e-6)
