"""Magnitude pruning with fine-tuning, as the PyTorch pruning tutorial's readers write it.

Idioms: ``import torch.nn.utils.prune as prune``; ``prune.l1_unstructured(module, name="weight",
amount=0.3)`` and ``prune.ln_structured(conv, "weight", amount=0.25, n=2, dim=0)`` (filters);
iterative pruning (a second method on the same weight becomes a ``PruningContainer``); a custom
``prune.BasePruningMethod`` subclass with ``PRUNING_TYPE`` and ``compute_mask``;
``prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)``;
``module.named_buffers()`` holding ``weight_mask`` and ``named_parameters()`` ``weight_orig``;
the sparsity report ``100. * float(torch.sum(m.weight == 0)) / float(m.weight.nelement())``;
fine-tuning through the masks; ``prune.is_pruned``; ``prune.remove`` making it permanent before
saving the ``state_dict``.
"""

from __future__ import annotations

import numpy as np
from shim import BACKEND, F, nn, optim, torch

if BACKEND == "torch":
    import torch.nn.utils.prune as prune
else:
    import vkml.nn.utils.prune as prune

N, CLASSES = 24, 4


class EveryOtherColumn(prune.BasePruningMethod):
    """Prune every other input column of a Linear weight."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask[:, ::2] = 0
        return mask


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, 1, 8, 8)).astype(np.float32)
    y = (x[:, 0, :4].sum(axis=(1, 2)) > 0).astype(np.int64) + 2 * (x[:, 0, :, :4].mean(axis=(1, 2)) > 0)
    return torch.from_numpy(x), torch.from_numpy(y)


class LeNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 8, 3)
        self.fc1 = nn.Linear(8 * 2 * 2, 24)
        self.fc2 = nn.Linear(24, 16)
        self.fc3 = nn.Linear(16, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 1)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def build():
    torch.manual_seed(0)
    return LeNetish()


def fit(model, x, y, optimizer, epochs):
    losses = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def sparsity(module):
    return 100.0 * float(torch.sum(module.weight == 0)) / float(module.weight.nelement())


def train(model, steps=3):
    x, y = make_data()
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = fit(model, x, y, optimizer, steps)

    prune.l1_unstructured(model.fc1, name="weight", amount=0.3)
    prune.ln_structured(model.conv2, name="weight", amount=0.25, n=2, dim=0)
    prune.l1_unstructured(model.fc1, name="weight", amount=0.2)  # iterative: 20% of what is left
    EveryOtherColumn.apply(model.fc3, "weight")
    parameters_to_prune = ((model.conv1, "weight"), (model.fc2, "weight"), (model.fc2, "bias"))
    prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
    report = {
        "sparsity": [sparsity(m) for m in (model.conv1, model.conv2, model.fc1, model.fc2, model.fc3)],
        "buffers": [name for name, _ in model.named_buffers()],
        "params": [name for name, _ in model.named_parameters()],
        "hooks": [type(h).__name__ for h in model.fc1._forward_pre_hooks.values()],
        "pruned": prune.is_pruned(model),
    }

    # the optimizer holds weight_orig, the parameter itself, so it trains on through the masks
    losses += fit(model, x, y, optimizer, steps)
    report["masked_grad"] = model.fc1.weight_orig.grad[model.fc1.weight_mask == 0].abs().sum().item()
    report["still_sparse"] = [sparsity(m) for m in (model.fc1, model.fc3)]

    for module, name in [(model.conv1, "weight"), (model.conv2, "weight"), (model.fc1, "weight")]:
        prune.remove(module, name)
    for module, name in [(model.fc2, "weight"), (model.fc2, "bias"), (model.fc3, "weight")]:
        prune.remove(module, name)
    report["after_remove"] = sorted(model.state_dict())
    report["still_pruned"] = prune.is_pruned(model)
    with torch.no_grad():
        report["final_loss"] = F.cross_entropy(model(x), y).item()
        report["accuracy"] = (model(x).argmax(1) == y).float().mean().item()
    return {"losses": losses, **report}


if __name__ == "__main__":
    print(train(build(), steps=10))
