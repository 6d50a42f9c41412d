"""One-line idioms of ordinary PyTorch training scripts give what PyTorch gives, under `import vkml as torch`.

The programs in tests/programs/ stop at their first missing feature; these lines are checked one
by one, so each gap has its own strict xfail (it fails as soon as the feature lands, to be
unmarked). Each idiom is a function of (torch, nn, F) returning plain Python values, run under
both libraries on the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

_X = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75], [-2.0, 1.0, 0.125], [0.0, -0.5, 3.0]], dtype=np.float32)
_Y = np.array([2, 0, 1, 2])


def _data(torch):
    return torch.tensor(_X), torch.tensor(_Y)


def _model(torch, nn):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(np.linspace(-1, 1, p.numel(), dtype=np.float32).reshape(tuple(p.shape)) * (i + 1)))
    return model


def _loss(torch, nn, F):
    x, y = _data(torch)
    return F.cross_entropy(_model(torch, nn)(x), y)


# name -> idiom; the names are the test ids
IDIOMS = {
    "format_spec_on_loss": lambda torch, nn, F: f"loss {_loss(torch, nn, F):.4f}",
    "item_and_float": lambda torch, nn, F: (_loss(torch, nn, F).item(), float(_loss(torch, nn, F).detach())),
    "accuracy_from_argmax": lambda torch, nn, F: (
        (_model(torch, nn)(_data(torch)[0]).argmax(dim=1) == _data(torch)[1]).float().mean().item()
    ),
    "max_returns_values_and_indices": lambda torch, nn, F: [
        v for t in torch.max(_data(torch)[0], 1) + tuple(_data(torch)[0].max(dim=0)) for v in t.tolist()
    ],
    "boolean_mask_select": lambda torch, nn, F: _data(torch)[0][_data(torch)[0] > 0].tolist(),
    "size_compares_to_tuple": lambda torch, nn, F: (_data(torch)[0].size() == (4, 3), _data(torch)[0].size(1)),
    "tensor_as_python_index": lambda torch, nn, F: [[10, 20, 30][torch.tensor(1)], *range(torch.tensor(2))],
    "to_device_non_blocking": lambda torch, nn, F: _data(torch)[0].to("cpu", non_blocking=True).tolist(),
    "module_repr": lambda torch, nn, F: repr(_model(torch, nn)),
    "tensor_repr": lambda torch, nn, F: repr(torch.tensor([1.0, 2.5, -3.0])),
    "state_dict_keys": lambda torch, nn, F: list(_model(torch, nn).state_dict().keys()),
    "count_trainable_parameters": lambda torch, nn, F: sum(
        p.numel() for p in _model(torch, nn).parameters() if p.requires_grad
    ),
    "one_hot": lambda torch, nn, F: F.one_hot(_data(torch)[1], num_classes=3).tolist(),
    "softmax_module": lambda torch, nn, F: nn.Softmax(dim=1)(_data(torch)[0]).tolist(),
    "log_softmax_module": lambda torch, nn, F: nn.LogSoftmax(dim=1)(_data(torch)[0]).tolist(),
    "cross_entropy_class_weights": lambda torch, nn, F: nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))(
        _data(torch)[0], _data(torch)[1]
    ).item(),
    "cross_entropy_label_smoothing": lambda torch, nn, F: nn.CrossEntropyLoss(label_smoothing=0.1)(
        _data(torch)[0], _data(torch)[1]
    ).item(),
    "embedding_padding_idx": lambda torch, nn, F: nn.Embedding(5, 2, padding_idx=0)(torch.tensor([0, 0])).tolist(),
    "dropout_inplace_argument": lambda torch, nn, F: nn.Dropout(0.1, inplace=False).eval()(_data(torch)[0]).tolist(),
    "relu_inplace_positional": lambda torch, nn, F: nn.ReLU(True)(_data(torch)[0].clone()).tolist(),
    "leaky_relu_inplace": lambda torch, nn, F: nn.LeakyReLU(0.2, inplace=True)(_data(torch)[0].clone()).tolist(),
    "adamw_fused_flag": lambda torch, nn, F: torch.optim.AdamW(
        _model(torch, nn).parameters(), lr=1e-3, fused=False
    ).param_groups[0]["lr"],
    "isinstance_tensor": lambda torch, nn, F: isinstance(_data(torch)[0], torch.Tensor),
    "no_grad_decorator": lambda torch, nn, F: torch.no_grad()(lambda: _loss(torch, nn, F).requires_grad)(),
}


def _missing(feature: str, error: type[Exception]):
    return pytest.mark.xfail(strict=True, raises=error, reason=f"vkml: {feature}")


XFAIL: dict = {}


def _has_text(value) -> bool:
    if isinstance(value, list | tuple):
        return any(_has_text(v) for v in value)
    return isinstance(value, str)


@pytest.mark.parametrize("name", [pytest.param(name, marks=XFAIL.get(name, ())) for name in IDIOMS])
def test_idiom_gives_what_pytorch_gives(name):
    import torch
    import torch.nn as tnn
    import torch.nn.functional as tF

    import vkml
    import vkml.nn as vnn
    import vkml.nn.functional as vF

    expected = IDIOMS[name](torch, tnn, tF)
    got = IDIOMS[name](vkml, vnn, vF)
    if _has_text(expected):
        assert got == expected
    else:
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), rtol=1e-5)
