"""NLP, LLM and Hugging Face trainer programs (tests/programs/) run under vkml as under PyTorch, by their
import lines alone.

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; the random draws the programs make stay live, since vkml's
generator gives PyTorch's draws; dropout is off (``DROPOUT = 0``). The whole comparisons run with
``make test-all`` (``-m stress``); ``make test`` compares a few of the programs' functions. The gaps
they found are tested in tests/test_program_fixes_p.py.
"""

from __future__ import annotations

from test_programs import program_tests

# name: (steps, rtol)
PROGRAMS = {
    "bert_mlm_pretrain": (3, 1e-4),
    "hf_trainer_loop": (3, 1e-4),
    "beam_search_generate": (4, 1e-4),
    "sentence_embeddings": (4, 1e-4),
    "alibi_window_attention": (4, 1e-4),
    "whisper_tiny": (4, 1e-4),
    "text_cnn_ner": (4, 1e-4),
}
VARIANTS = {
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
