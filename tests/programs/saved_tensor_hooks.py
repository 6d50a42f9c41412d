"""The "Hooks for autograd saved tensors" tutorial, at a tiny size on synthetic images: a small CNN
trained while the activations autograd keeps for backward go through pack/unpack hooks.

Idioms: ``grad_fn._saved_self is x``, ``_saved_other``, ``_saved_result.equal(y)`` (a new handle) and
``grad_fn._raw_saved_self.register_hooks(pack, unpack)``, then the error of reading a freed saved tensor;
``torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)`` around the forward, with
pack hooks that keep the tensor, that return an index into a Python list (``storage.append(x); return
len(storage) - 1``), that write it to a file through ``torch.save`` in a ``tempfile.TemporaryDirectory``
named by ``uuid.uuid4()`` and read it back by ``torch.load`` (a ``SelfDeletingTempFile`` whose
``__del__`` removes it), and that keep only tensors of ``numel() >= SAVE_ON_DISK_THRESHOLD`` on disk;
hooks registered inside a module's ``forward``; ``torch.autograd.graph.save_on_cpu(pin_memory=...)``
around the forward; nested hook blocks (the innermost wins); an unpack hook that returns no tensor
(PyTorch's TypeError); a pack hook that records what it saw (``x.shape``, ``x.dtype``, ``x.requires_grad``)
without changing the numbers. The losses and gradients must be those of a run without hooks.
"""

from __future__ import annotations

import os
import tempfile
import uuid

from shim import F, nn, optim, torch

SAVE_ON_DISK_THRESHOLD = 64
MODES = ("plain", "identity", "list", "disk", "threshold", "module", "save_on_cpu")


class SelfDeletingTempFile:
    def __init__(self, tmp_dir):
        self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

    def __del__(self):
        os.remove(self.name)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 2 * 2, 3)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = F.gelu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class HookedNet(Net):
    """The tutorial's "registering hooks inside a module's forward": the hooks live with the model."""

    def __init__(self):
        super().__init__()
        self.packed = []

    def forward(self, x):
        def pack_hook(t):
            self.packed.append(t)
            return len(self.packed) - 1

        def unpack_hook(i):
            return self.packed[i]

        with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            return super().forward(x)


def build():
    torch.manual_seed(0)
    nets = {mode: Net() for mode in MODES if mode != "module"}
    nets["module"] = HookedNet()
    state = nets["plain"].state_dict()
    for net in nets.values():
        net.load_state_dict(state)
    return nn.ModuleDict(nets)


def images(n=4):
    ramp = torch.arange(n * 2 * 6 * 6, dtype=torch.float32)
    return torch.sin(ramp * 0.13).view(n, 2, 6, 6), torch.arange(n) % 3


def hooks_for(mode, tmp_dir, seen):
    """(pack_hook, unpack_hook) of one of the tutorial's examples."""
    if mode == "identity":

        def pack_hook(x):
            seen.append((tuple(x.shape), str(x.dtype).split(".")[-1]))
            return x

        return pack_hook, lambda x: x
    if mode == "list":
        storage = []

        def pack_hook(x):
            storage.append(x)
            return len(storage) - 1

        return pack_hook, lambda i: storage[i]

    def pack_to_disk(tensor):
        temp_file = SelfDeletingTempFile(tmp_dir)
        torch.save(tensor, temp_file.name)
        return temp_file

    def unpack_from_disk(temp_file):
        return torch.load(temp_file.name, weights_only=True)

    if mode == "disk":
        return pack_to_disk, unpack_from_disk

    def pack_hook(x):  # "threshold": only large tensors go to disk
        if x.numel() < SAVE_ON_DISK_THRESHOLD:
            return x
        return pack_to_disk(x)

    def unpack_hook(x):
        if isinstance(x, torch.Tensor):
            return x
        return unpack_from_disk(x)

    return pack_hook, unpack_hook


def probes():
    """Nesting (the innermost block's hooks run) and an unpack hook returning no tensor."""
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    outer, inner = [], []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            y = (x.exp() * 3).sum()
    y.backward()
    grad = x.grad.tolist()
    z = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 1):
        w = (z * z).sum()
    try:
        w.backward()
        error = ""
    except TypeError as e:
        error = str(e)
    # the tutorial's first part: what a node keeps, and hooks on one saved tensor
    a = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    b = torch.tensor([0.3, 0.2, -0.1], requires_grad=True)
    c = a * b
    p = a.pow(2)
    e = a.exp()
    kept = [c.grad_fn._saved_self is a, c.grad_fn._saved_other.equal(b), p.grad_fn._saved_self is a]
    kept += [e.grad_fn._saved_result.equal(e), e.grad_fn._saved_result is e]
    calls = []
    c.grad_fn._raw_saved_self.register_hooks(lambda t: calls.append("pack") or t, lambda t: calls.append("unpack") or t)
    c.sum().backward()
    try:
        c.grad_fn._saved_self  # noqa: B018 - the read is what raises
        freed = ""
    except RuntimeError as err:
        freed = str(err).split(" (")[0]
    return {
        "nesting": [len(outer) == 0, len(inner) > 0],
        "nested_grad": grad,
        "bad_unpack": error,
        "kept": kept,
        "raw_hooks": calls,
        "raw_grad": b.grad.tolist(),
        "freed": freed,
    }


def train(model, steps=2):
    x, target = images()
    result = {"losses": [], "grad_sums": []}
    seen = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        for mode in MODES:
            net = model[mode]
            optimizer = optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
            losses = []
            for _ in range(steps):
                optimizer.zero_grad()
                if mode in ("plain", "module"):
                    loss = F.cross_entropy(net(x), target)
                elif mode == "save_on_cpu":
                    with torch.autograd.graph.save_on_cpu(pin_memory=False):
                        loss = F.cross_entropy(net(x), target)
                else:
                    pack_hook, unpack_hook = hooks_for(mode, tmp_dir, seen)
                    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
                        loss = F.cross_entropy(net(x), target)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            if mode == "module":
                net.packed.clear()
            result["losses" if mode == "plain" else f"losses_{mode}"] = losses
            result["grad_sums"].append(sum(p.grad.abs().sum().item() for p in net.parameters()))
        left = os.listdir(tmp_dir)
    # the pack hook saw the input and the float32 activations (how many: each library's own choice)
    result["seen_input"] = ((4, 2, 6, 6), "float32") in seen
    result["files_left"] = len(left)
    result.update(probes())
    return result


if __name__ == "__main__":
    print(train(build()))
