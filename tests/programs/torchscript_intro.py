"""The "Introduction to TorchScript" and "Loading a TorchScript Model" tutorials' Python side, at a tiny
size on synthetic sequences: a cell with a data-dependent gate, scripted and traced, looped over time,
trained, exported by ``torch.jit.save`` and loaded back by ``torch.jit.load`` for inference.

Idioms: ``MyDecisionGate`` branching on ``x.sum() > 0``; ``MyCell`` returning ``(new_h, new_h)``;
``torch.jit.script`` of the gate, of a module holding it and of a loop module whose cell is
``torch.jit.trace(MyCell(scripted_gate), (x, h))``; ``torch.jit.trace`` of a wrapper module over the
scripted loop; scripted functions as decorators (``@torch.jit.script def``) with type annotations;
``torch.jit.is_scripting()``; calling scripted and traced modules as modules (``parameters()``,
``train()``, ``eval()``, ``state_dict()``); ``torch.jit.save(traced, f)`` with ``_extra_files`` and
``torch.jit.load(f, map_location="cpu", _extra_files=...)``, the loaded model's outputs equal to the
original's. Printing ``.code`` and ``.graph`` (TorchScript's IR) is the part vkml does not offer
(docs/jit.md), and tracing's ``TracerWarning`` on the data-dependent branch is PyTorch's alone, so the
program asks for neither.
"""

from __future__ import annotations

import io
import warnings

from shim import F, nn, optim, torch

HIDDEN = 4


class MyDecisionGate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCell(nn.Module):
    def __init__(self, dg):
        super().__init__()
        self.dg = dg
        self.linear = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


@torch.jit.script
def scaled_residual(x: torch.Tensor, scale: float) -> torch.Tensor:
    if torch.jit.is_scripting():
        return x * scale + x
    return x * scale + x


class MyRNNLoop(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class WrapRNN(nn.Module):
    def __init__(self, loop):
        super().__init__()
        self.loop = loop
        self.head = nn.Linear(HIDDEN, 2)

    def forward(self, xs):
        y, h = self.loop(xs)
        return self.head(scaled_residual(torch.relu(y), 0.5))


def example():
    x = torch.sin(torch.arange(3 * HIDDEN, dtype=torch.float32) * 0.7).view(3, HIDDEN)
    h = torch.cos(torch.arange(3 * HIDDEN, dtype=torch.float32) * 0.3).view(3, HIDDEN) * 0.5
    return x, h


def sequences(steps=5):
    xs = torch.sin(torch.arange(steps * 3 * HIDDEN, dtype=torch.float32) * 0.23).view(steps, 3, HIDDEN)
    target = torch.tensor([0, 1, 1])
    return xs, target


def build():
    torch.manual_seed(0)
    x, h = example()
    scripted_gate = torch.jit.script(MyDecisionGate())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's warning about the gate's branch
        traced_cell = torch.jit.trace(MyCell(scripted_gate), (x, h))
    rnn_loop = torch.jit.script(MyRNNLoop(traced_cell))
    wrapped = WrapRNN(rnn_loop)
    xs, _ = sequences()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(wrapped, (xs,))
    return nn.ModuleDict({"model": traced})


def train(model, steps=3):
    traced = model["model"]
    x, h = example()
    scripted_cell = torch.jit.script(MyCell(torch.jit.script(MyDecisionGate())))
    scripted_cell.load_state_dict(traced.loop.cell.state_dict())
    cell_out = [t.sum().item() for t in scripted_cell(x, h)] + [t.sum().item() for t in scripted_cell(-x, h)]
    xs, target = sequences()
    optimizer = optim.SGD(traced.parameters(), lr=0.2, momentum=0.9)
    traced.train()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(traced(xs), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    traced.eval()
    with torch.no_grad():
        expected = traced(xs)
    buffer = io.BytesIO()
    torch.jit.save(traced, buffer, _extra_files={"meta.txt": "steps=3"})
    buffer.seek(0)
    extra = {"meta.txt": ""}
    loaded = torch.jit.load(buffer, map_location="cpu", _extra_files=extra)
    with torch.no_grad():
        got = loaded(xs)
    return {
        "losses": losses,
        "cell": cell_out,
        "exported": [(got - expected).abs().max().item(), got.sum().item()],
        "extra": extra["meta.txt"].decode() if isinstance(extra["meta.txt"], bytes) else extra["meta.txt"],
        "keys": sorted(loaded.state_dict())[:3],
        "scripting": torch.jit.is_scripting(),
    }


if __name__ == "__main__":
    print(train(build()))
