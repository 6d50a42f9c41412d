"""NLP, LLM and Hugging Face trainer programs (tests/programs/) run under vkml as under PyTorch, by their
import lines alone.

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; the random draws the programs make stay live, since vkml's
generator gives PyTorch's draws; dropout is off (``DROPOUT = 0``). The whole comparisons run with
``make test-all`` (``-m stress``); ``make test`` compares a few of the programs' functions. The gaps
they found are tested in tests/test_program_fixes_p.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "bert_mlm_pretrain": (3, 1e-4),
    "hf_trainer_loop": (3, 1e-4),
    "beam_search_generate": (4, 1e-4),
    "sentence_embeddings": (4, 1e-4),
    "alibi_window_attention": (4, 1e-4),
    "whisper_tiny": (4, 1e-4),
    "text_cnn_ner": (4, 1e-4),
    "trl_dpo_reward": (4, 1e-4),
}
VARIANTS = {
    "trl_dpo_reward": [{"STAGE": "sft"}, {"STAGE": "reward"}, {"LOSS": "hinge"}, {"LOSS": "ipo"}],
    "text_cnn_ner": [
        {"TASK": "char"},
        {"TASK": "ner"},
        {"TASK": "ner", "ACTIVE_LOSS": True, "LABEL_ALL_TOKENS": True},
    ],
    "whisper_tiny": [{"SDPA": False}],
    "alibi_window_attention": [{"ATTN": "sliding", "PRETRAINING_TP": 2}, {"ATTN": "prefix"}],
    "sentence_embeddings": [
        {"LOSS": "cosent", "POOLING": "max"},
        {"LOSS": "cosine", "POOLING": "cls"},
        {"LOSS": "matryoshka", "POOLING": "mean_sqrt_len_tokens"},
    ],
    "beam_search_generate": [{"LENGTH_PENALTY": 2.0, "EARLY_STOPPING": True, "NUM_BEAMS": 2}],
    "hf_trainer_loop": [{"SCHEDULE": "linear", "ACCUMULATION": 1}],
    "bert_mlm_pretrain": [{"ATTN": "sdpa", "CHUNK": 4, "GRADIENT_CHECKPOINTING": False, "PAD_TO_MULTIPLE_OF_8": True}],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


def _both(name, monkeypatch):
    return _load(name, "torch", monkeypatch), _load(name, "vkml", monkeypatch)


def test_mlm_collator_masks_as_pytorch_after_the_same_seed(monkeypatch):
    """torch_mask_tokens' bernoulli draws and randint replacements, padded to a multiple of 8."""
    batches = []
    for program in _both("bert_mlm_pretrain", monkeypatch):
        program.torch.manual_seed(7)
        collator = program.DataCollatorForLanguageModeling(
            program.ToyTokenizer(), mlm_probability=0.4, pad_to_multiple_of=8
        )
        batch = collator(program.examples_for(1) + program.examples_for(2))
        batches.append({k: v.tolist() for k, v in batch.items()})
    assert batches[1] == batches[0]
    labels = np.array(batches[0]["labels"])
    assert labels.shape[1] % 8 == 0 and (labels != -100).any()


def test_attention_biases_and_masks_match_pytorch(monkeypatch):
    """ALiBi for 3 heads (the extra slopes), the log-banded sliding window, the prefix-LM mask, OPT's masks."""
    results = []
    for program, opt in zip(_both("alibi_window_attention", monkeypatch), _both("hf_trainer_loop", monkeypatch)):
        torch = program.torch
        attention_mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
        results.append(
            [
                program.build_alibi_tensor(attention_mask, 3, torch.float32).numpy(),
                program._make_sliding_window_causal_mask((2, 5), torch.float32, "cpu", sliding_window=2).numpy(),
                program._make_prefix_lm_mask(torch.tensor([2, 3]), 5, "cpu").numpy(),
                (program._expand_mask(attention_mask, 5) | program._make_causal_mask((2, 5), "cpu", 0)).numpy(),
                (
                    opt._expand_mask(attention_mask, torch.float32, 5)
                    + opt._make_causal_mask((2, 5), torch.float32, "cpu")
                )
                .clamp(min=-1.0)
                .numpy(),
                opt.OPTLearnedPositionalEmbedding(8, 2).weight.shape[0],
            ]
        )
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, expected)


def test_whisper_log_mel_spectrogram_matches_pytorch(monkeypatch):
    """pad_or_trim of a short clip, then stft, the mel filterbank, log10 and the dynamic-range clamp."""
    audio = (0.3 * np.random.default_rng(3).normal(size=100)).astype(np.float32)
    mels = []
    for program in _both("whisper_tiny", monkeypatch):
        torch = program.torch
        mels.append(program.log_mel_spectrogram(program.pad_or_trim(torch.tensor(audio))).numpy())
        assert program.pad_or_trim(torch.ones(2, 200)).shape == (2, program.N_SAMPLES)
    np.testing.assert_allclose(mels[1], mels[0], rtol=1e-5, atol=1e-6)


@pytest.mark.stress  # some forty kernels to compile on the CPU interpreter
def test_pooling_and_contrastive_losses_match_pytorch(monkeypatch):
    """Mean pooling of padded tokens, normalised, into CoSENT and MNRL losses, with the tokens' gradient."""
    rng = np.random.default_rng(3)
    tokens = rng.normal(size=(4, 5, 6)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0]])
    results = []
    for program in _both("sentence_embeddings", monkeypatch):
        torch = program.torch
        token_embeddings = torch.tensor(tokens, requires_grad=True)
        features = {"token_embeddings": token_embeddings, "attention_mask": torch.tensor(mask)}
        pooled = program.Normalize()(program.Pooling(6, "mean")(features))["sentence_embedding"]
        pair = [pooled[:2], pooled[2:]]
        cosent = program.CoSENTLoss(None).compute_loss_from_embeddings(pair, torch.tensor([0.2, 0.9]))
        mnrl = program.MultipleNegativesRankingLoss(None).compute_loss_from_embeddings(pair, None)
        (cosent + mnrl).backward()
        results.append([pooled.detach().numpy(), cosent.item(), mnrl.item(), token_embeddings.grad.numpy()])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_ner_label_alignment_and_entity_scores(monkeypatch):
    """tokenize_and_align_labels with and without label_all_tokens, the -100 padding, seqeval's chunks."""
    program = _load("text_cnn_ner", "torch", monkeypatch)
    examples = {"tokens": [["anna", "met", "paris"]], "ner_tags": [[1, 0, 3]]}
    assert program.tokenize_and_align_labels(examples)["labels"] == [[-100, 1, -100, 0, 3, -100, -100]]
    assert program.tokenize_and_align_labels(examples, label_all_tokens=True)["labels"] == [[-100, 1, 2, 0, 3, 4, -100]]
    assert program.get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"]) == [
        ("PER", 0, 1),
        ("LOC", 3, 3),
        ("LOC", 4, 4),
    ]
    scores = program.compute_metrics([[0, 1, 2, 0, 3]], [[-100, 1, 2, 0, 1]])
    assert scores == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
