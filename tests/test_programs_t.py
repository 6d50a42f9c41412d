"""Dive into Deep Learning's PyTorch code after the modern CNNs and RNNs (tests/programs/d2l_*.py, part two)
runs under vkml as under PyTorch, by its import lines alone: attention pooling and scoring, the Bahdanau
decoder, multi-head attention, the Transformer and the ViT; the optimization chapter's algorithms from
scratch and its learning-rate schedules; object detection with anchor boxes and the single-shot detector;
the vision chapter's fine-tuning, FCN and style transfer; word2vec and BERT pretraining; sentiment analysis and
natural language inference; recommender systems and GANs.

Their idioms are the book's from-scratch tensor code: ``X[~mask] = value`` through a reshaped view,
``v[:] = beta * v + p.grad`` and ``p[:] -= lr * v`` under ``no_grad``, ``torch.meshgrid(..., indexing='ij')``,
``torch.tensor(keep)`` of 0-dim tensors, ``state[2][self.i]`` caches, lazy layers materialized by a first
forward. The comparisons, and one of the anchor-box functions alone, run with ``make test-all`` (``-m stress``).
The gaps they found are tested in tests/test_program_fixes_t.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, _numbers, program_tests

# name: (steps, rtol)
PROGRAMS = {
    "d2l_attention": (2, 1e-4),
    "d2l_transformer": (2, 1e-4),
    "d2l_optimization": (2, 1e-4),
    "d2l_object_detection": (2, 1e-4),
    "d2l_vision": (2, 1e-4),
    "d2l_nlp_pretraining": (2, 1e-4),
    "d2l_nlp_applications": (2, 1e-4),
    "d2l_recsys_gan": (2, 1e-4),
}
VARIANTS = {
    "d2l_attention": [{"ATTENTION": "dot"}],
    "d2l_transformer": [{"MODEL": "vit"}],
    "d2l_optimization": [
        {"ALGORITHM": "sgd"},
        {"ALGORITHM": "momentum", "SCHEDULER": "square_root"},
        {"ALGORITHM": "adagrad", "SCHEDULER": "factor"},
        {"ALGORITHM": "rmsprop", "SCHEDULER": "cosine_warmup"},
        {"ALGORITHM": "adadelta"},
        {"ALGORITHM": "yogi"},
    ],
    "d2l_vision": [{"MODEL": "fcn"}, {"MODEL": "style"}],
    "d2l_nlp_pretraining": [{"MODEL": "bert"}],
    "d2l_nlp_applications": [{"MODEL": "textcnn"}, {"MODEL": "decomposable"}],
    "d2l_recsys_gan": [{"MODEL": "autorec"}, {"MODEL": "neumf"}, {"MODEL": "fm"}, {"MODEL": "gan"}, {"MODEL": "dcgan"}],
}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress  # some fifty small kernels of data-dependent shapes (nonzero, nms): ~5 s of lowering
def test_d2l_anchor_boxes_match_pytorch(monkeypatch):
    """The book's anchor-box functions by both libraries: ``multibox_prior``, ``box_iou``, ``multibox_target``
    (``torch.argmax`` over a whole IoU matrix, ``max_idx % num_gt_boxes``, the discards), ``nms`` and
    ``multibox_detection`` (``torch.tensor(keep)`` of 0-dim tensors, ``unique(return_counts=True)``)."""
    results = []
    for backend in ("torch", "vkml"):
        detection = _load("d2l_object_detection", backend, monkeypatch)
        detection.torch.manual_seed(0)
        record = {}
        detection.anchors_section(record)
        results.append(record)
    np.testing.assert_allclose(_numbers(results[1]), _numbers(results[0]), rtol=1e-5, atol=1e-6)
