"""A Kaggle tabular kernel of 2018-2020 (the MoA-competition block: BatchNorm1d, Dropout, a weight-normed Linear) with the helpers such kernels copied from older GitHub code.

Its idioms: ``torch.manual_seed`` + ``np.random.seed`` + ``random.seed`` in a ``seed_everything``;
``torch.Tensor(np_array)`` (float64 data made float32) and ``torch.LongTensor(list)``; a model as
``nn.Sequential(OrderedDict([...]))`` with ``torch.nn.utils.weight_norm`` linears (the deprecated
hook API) and a custom ``Function`` (a gated linear unit with ``ctx.save_for_backward`` and
``ctx.needs_input_grad``); ``torch.addmm(bias, x, w.t(), beta=, alpha=)``; ``x.expand_as``;
``register_hook`` on an intermediate tensor to read its gradient; a per-sample loss
``nn.MSELoss(reduce=False)`` weighted by hand and ``F.mse_loss(..., size_average=False)``;
``F.softmax(x)`` without ``dim``; K folds' predictions gathered by ``torch.cat`` of a list built in a
loop and averaged by ``torch.stack(preds).mean(0)``; ``torch.topk(scores, k, sorted=True)``;
``mask.index_fill_``; ``x.new(size).fill_``, ``.type(torch.FloatTensor)`` and ``.type('torch.DoubleTensor')``;
``buf.resize_``; ``print(model)`` and the parameter count; and the whole model saved by
``torch.save(model, path)`` and read back with ``torch.load(path, weights_only=False)``."""

# ruff: noqa: UP008, UP031, UP032, B007  (the old repositories' spelling is the point: super(Net, self), % and .format)

from __future__ import annotations

import os
import random
import tempfile
import warnings
from collections import OrderedDict

import numpy as np
from shim import F, nn, optim, torch

N_FEATURES, HIDDEN, N_FOLDS, BATCH = 6, 8, 2, 8


def seed_everything(seed=42):
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.backends.cudnn.deterministic = True


class GatedLinear(torch.autograd.Function):
    """y = (x @ w.t()) * sigmoid(gate), gradients by hand."""

    @staticmethod
    def forward(ctx, x, w, gate):
        h = x.mm(w.t())
        s = torch.sigmoid(gate)
        ctx.save_for_backward(x, w, h, s)
        return h * s

    @staticmethod
    def backward(ctx, grad_output):
        x, w, h, s = ctx.saved_tensors
        grad_x = grad_w = grad_gate = None
        grad_h = grad_output * s
        if ctx.needs_input_grad[0]:
            grad_x = grad_h.mm(w)
        if ctx.needs_input_grad[1]:
            grad_w = grad_h.t().mm(x)
        if ctx.needs_input_grad[2]:
            grad_gate = (grad_output * h * s * (1 - s)).sum(0)
        return grad_x, grad_w, grad_gate


class TabularNet(nn.Module):
    def __init__(self):
        super(TabularNet, self).__init__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # weight_norm's deprecation (recorded in train)
            self.body = nn.Sequential(
                OrderedDict(
                    [
                        ("bn1", nn.BatchNorm1d(N_FEATURES)),
                        ("drop1", nn.Dropout(DROPOUT)),
                        ("fc1", nn.utils.weight_norm(nn.Linear(N_FEATURES, HIDDEN))),
                        ("relu1", nn.ReLU()),
                    ]
                )
            )
        self.glu_w = nn.Parameter(torch.randn(HIDDEN, HIDDEN) * 0.3)
        self.glu_gate = nn.Parameter(torch.zeros(HIDDEN))
        self.head_w = nn.Parameter(torch.randn(1, HIDDEN) * 0.3)
        self.head_b = nn.Parameter(torch.zeros(1))
        self.hidden_grads = []

    def forward(self, x):
        h = self.body(x)
        h = GatedLinear.apply(h, self.glu_w, self.glu_gate)
        if h.requires_grad:
            h.register_hook(lambda grad: self.hidden_grads.append(grad.abs().sum().item()))
        out = torch.addmm(self.head_b.expand_as(h[:, :1]), h, self.head_w.t(), beta=0.5, alpha=2.0)
        return out.view(-1)


DROPOUT = 0.2


def build():
    seed_everything(7)
    return TabularNet()


def make_data(n):
    rng = np.random.RandomState(0)
    X = rng.randn(n, N_FEATURES)  # float64, as pandas gives it
    y = X[:, 0] * 0.5 - X[:, 1] ** 2 + 0.1 * rng.randn(n)
    folds = (np.arange(n) % N_FOLDS).tolist()
    return X, y, folds


def train(model, steps=3):
    seed_everything(7)
    X, y, folds = make_data(BATCH * N_FOLDS * 2)
    record = {"losses": [], "later_folds": [], "sum_losses": [], "hidden_grads": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.utils.weight_norm(nn.Linear(2, 2))
        probs = F.softmax(torch.Tensor([[1.0, 2.0], [0.5, 0.0]]))
        nn.MSELoss(reduce=False)
    record["warnings"] = sorted(w.category.__name__ for w in caught)
    record["probs"] = probs.tolist()
    record["print_model"] = str(model).replace("vkml", "torch")
    record["n_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    record["param_names"] = "|".join(n for n, _ in model.named_parameters())

    fold_ids = torch.LongTensor(folds)
    X_all, y_all = torch.Tensor(X), torch.Tensor(y)
    criterion = nn.MSELoss(reduce=False)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    path = os.path.join(tempfile.mkdtemp(), "model.pt")
    preds = []
    for fold in range(N_FOLDS):
        train_idx = (fold_ids != fold).nonzero().view(-1)
        valid_idx = (fold_ids == fold).nonzero().view(-1)
        xb, yb = X_all[train_idx], y_all[train_idx]
        weights = xb.new(xb.size(0)).fill_(1.0)
        weights.index_fill_(0, torch.LongTensor([0, 1]), 2.0)
        model.train()
        for step in range(steps):
            optimizer.zero_grad()
            out = model(xb)
            loss = (criterion(out, yb) * weights).sum() / weights.sum()
            loss.backward()
            optimizer.step()
            record["losses" if fold == 0 else "later_folds"].append(loss.item())
            record["sum_losses"].append(F.mse_loss(out, yb, size_average=False).item())
        torch.save(model, path)
        model = torch.load(path, weights_only=False)
        optimizer = optim.Adam(model.parameters(), lr=1e-2)
        model.eval()
        with torch.no_grad():
            pred_parts = []
            for start in range(0, len(valid_idx), 4):
                pred_parts.append(model(X_all[valid_idx[start : start + 4]]))
            preds.append(torch.cat(pred_parts, 0))
    record["fold_preds"] = [p.tolist() for p in preds]
    blended = torch.stack(preds).mean(0)
    values, indices = torch.topk(blended, 3, sorted=True)
    buf = torch.FloatTensor(2)
    buf.resize_(3).copy_(values)
    record["blend"] = blended.type(torch.FloatTensor).tolist()
    record["top"] = [buf.tolist(), indices.tolist()]
    record["double"] = [str(blended.type("torch.DoubleTensor").dtype).replace("vkml", "torch")]
    record["hidden_grads"] = model.hidden_grads[:]
    return record


if __name__ == "__main__":
    print(train(build()))
