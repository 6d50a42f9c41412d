"""A network whose weights are parametrized, as torch.nn.utils.parametrize's users write it.

Idioms: ``nn.utils.parametrizations.weight_norm`` (``original0``/``original1``) and the older
``nn.utils.weight_norm`` (``weight_g``/``weight_v``, ``dim=0``); ``spectral_norm`` with its power
iteration's ``_u``/``_v`` buffers advancing in training mode only; ``orthogonal`` on a square
layer; ``register_parametrization`` of a user module (a symmetric matrix from its upper
triangle, with ``right_inverse``); ``parametrize.is_parametrized``; ``parametrize.cached()``
around a forward that reads a weight twice; ``model.mix.parametrizations.weight.original``;
``remove_parametrizations(..., leave_parametrized=True)`` and the plain state_dict it leaves.
"""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

P = nn.utils.parametrizations
parametrize = nn.utils.parametrize
N, FEATURES, CLASSES = 24, 6, 3


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32)
    y = (x[:, :CLASSES] + 0.2 * rng.normal(0, 1, size=(N, CLASSES))).argmax(1)
    return torch.from_numpy(x), torch.from_numpy(y)


class Net(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.inp = P.weight_norm(nn.Linear(FEATURES, hidden))
        self.mix = nn.Linear(hidden, hidden)
        parametrize.register_parametrization(self.mix, "weight", Symmetric())
        self.rot = P.orthogonal(nn.Linear(hidden, hidden, bias=False))
        self.sn = P.spectral_norm(nn.Linear(hidden, 8))
        self.out = nn.utils.weight_norm(nn.Linear(8, CLASSES), dim=0)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        h = h + 0.5 * F.linear(torch.tanh(self.mix(h)), self.mix.weight)  # the weight read twice
        h = self.rot(h)
        return self.out(F.relu(self.sn(h)))


def build():
    torch.manual_seed(0)
    return Net()


def train(model, steps=4):
    x, y = make_data()
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad(), parametrize.cached():
        eval_loss = F.cross_entropy(model(x), y).item()
        w = model.rot.weight
        orthogonality = (w.T @ w - torch.eye(w.shape[0])).abs().max().item()
        symmetry = (model.mix.weight - model.mix.weight.T).abs().max().item()
        sigma = torch.linalg.matrix_norm(model.sn.weight, ord=2).item()
        inp_norms = model.inp.weight.norm(dim=1).tolist()
    u = model.sn.parametrizations.weight[0]._u
    names = sorted(name for name, _ in model.named_parameters())
    parametrized = [parametrize.is_parametrized(m) for m in (model.inp, model.mix, model.rot, model.sn, model.out)]
    upper = model.mix.parametrizations.weight.original.tril(-1).abs().max().item()

    parametrize.remove_parametrizations(model.mix, "weight", leave_parametrized=True)
    parametrize.remove_parametrizations(model.rot, "weight")
    with torch.no_grad():
        after_remove = F.cross_entropy(model(x), y).item()
    return {
        "losses": losses,
        "eval_loss": eval_loss,
        "after_remove": after_remove,
        "orthogonality": orthogonality,
        "symmetry": symmetry,
        "sigma": sigma,
        "inp_norms": inp_norms,
        "u": u.tolist(),
        "names": names,
        "parametrized": parametrized,
        "below_diagonal": upper,
        "state_keys": sorted(model.state_dict()),
        "g_shape": list(model.out.weight_g.shape),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
