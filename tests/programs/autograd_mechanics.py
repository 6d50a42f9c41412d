"""The "Autograd mechanics" notes and the autograd tutorial's idioms as training code uses them, at a
tiny size on synthetic data: a small MLP trained with gradients read, changed and accumulated by hand.

Idioms: ``requires_grad_(False)`` to freeze a layer (and ``requires_grad`` of what it feeds);
``retain_grad()`` on an intermediate and ``is_leaf``; ``Tensor.register_hook`` scaling a gradient and
one clamping a parameter's gradient (removed again by its handle); the graph's nodes:
``grad_fn.name()``, ``next_functions`` walked to the leaves' ``AccumulateGrad`` (``.variable``),
``isinstance(grad_fn, torch.autograd.graph.Node)``, ``grad_fn.register_prehook`` and
``grad_fn.register_hook`` (which sees ``grad_inputs`` and ``grad_outputs`` and may replace the
former), ``grad_fn.metadata``; a module's ``register_full_backward_pre_hook`` and
``register_full_backward_hook``; ``torch.autograd.grad(..., create_graph=True)`` for a gradient penalty;
gradients accumulated over two ``backward()`` calls (``retain_graph=True``) and
``torch.autograd.backward(tensors, grad_tensors)``; ``zero_grad(set_to_none=True)`` against
``set_to_none=False``; ``torch.no_grad`` as a decorator with ``torch.enable_grad`` inside,
``set_grad_enabled(False)``, ``inference_mode``; and the error of a saved tensor modified in place.
"""

from __future__ import annotations

from shim import F, nn, optim, torch


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 6)
        self.hidden = nn.Linear(6, 6)
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        h = torch.tanh(self.embed(x))
        h = F.relu(self.hidden(h))
        return self.head(h)


def build():
    torch.manual_seed(0)
    return MLP()


def data(n=8):
    x = torch.sin(torch.arange(n * 4, dtype=torch.float32) * 0.41).view(n, 4)
    y = torch.stack([x[:, 0] - x[:, 1], x[:, 2] * x[:, 3]], 1)
    return x, y


def graph_names(root, limit=12):
    """The node names met walking ``next_functions`` from ``root``, breadth first."""
    names, frontier = [], [root]
    while frontier and len(names) < limit:
        node = frontier.pop(0)
        if node is None:
            continue
        names.append(node.name())
        frontier.extend(next_node for next_node, _ in node.next_functions)
    return names


@torch.no_grad()
def evaluate(model, x, y):
    with torch.enable_grad():
        probe = x.clone().requires_grad_()
        inside = (probe * 2).sum().requires_grad
    return F.mse_loss(model(x), y).item(), inside


def probes(model, x, y):
    out = {}
    h = torch.tanh(model.embed(x))
    h.retain_grad()
    loss = F.mse_loss(model.head(F.relu(model.hidden(h))), y)
    out["graph"] = graph_names(loss.grad_fn)
    out["is_node"] = [isinstance(loss.grad_fn, torch.autograd.graph.Node), h.is_leaf, x.is_leaf]
    leaf_edges = [n for n, _ in loss.grad_fn.next_functions[0][0].next_functions if n is not None]
    out["accumulate"] = [any(getattr(n, "variable", None) is model.head.bias for n in leaf_edges)]
    seen = []
    loss.grad_fn.metadata["step"] = 1
    pre = h.grad_fn.register_prehook(lambda grad_outputs: seen.append("pre") or None)

    def double_inputs(grad_inputs, grad_outputs):
        seen.append(("post", len(grad_inputs), len(grad_outputs)))
        return tuple(None if g is None else g * 2 for g in grad_inputs)

    post = h.grad_fn.register_hook(double_inputs)
    loss.backward(retain_graph=True)
    first = model.embed.weight.grad.clone()
    pre.remove()
    post.remove()
    loss.backward()  # accumulates, without the node hooks
    out["node_hooks"] = [str(s) for s in seen]
    out["metadata"] = loss.grad_fn.metadata["step"]
    out["h_grad"] = h.grad.abs().sum().item()
    out["accumulated"] = [first.abs().sum().item(), model.embed.weight.grad.abs().sum().item()]
    model.zero_grad(set_to_none=False)
    out["zeroed"] = [p.grad.abs().sum().item() for p in model.parameters()]
    model.zero_grad()
    out["none"] = [p.grad is None for p in model.parameters()]
    # torch.autograd.backward with explicit grad_tensors
    pred = model(x)
    torch.autograd.backward([pred], grad_tensors=[torch.ones_like(pred) * 0.5])
    out["backward_api"] = model.head.weight.grad.sum().item()
    model.zero_grad()
    # a saved tensor modified in place
    s = torch.sigmoid(model.embed(x))
    s.mul_(2)
    try:
        s.sum().backward()
        out["inplace_error"] = ""
    except RuntimeError as e:
        out["inplace_error"] = str(e).split(";")[0].split(":")[0]
    model.zero_grad()
    with torch.inference_mode():
        inf = model(x)
    with torch.set_grad_enabled(False):
        off = model(x)
    out["modes"] = [inf.requires_grad, off.requires_grad, torch.is_inference_mode_enabled()]
    return out


def train(model, steps=3):
    x, y = data()
    result = probes(model, x, y)
    for p in model.embed.parameters():
        p.requires_grad_(False)
    optimizer = optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1, momentum=0.9)
    scaled = model.hidden.weight.register_hook(lambda g: g * 0.5)
    model.head.weight.register_hook(lambda g: g.clamp(-0.05, 0.05))
    seen = []
    model.hidden.register_full_backward_pre_hook(
        lambda m, grad_output: seen.append(tuple(grad_output[0].shape)) or None
    )
    model.hidden.register_full_backward_hook(lambda m, grad_input, grad_output: seen.append(len(grad_input)) or None)
    losses, penalties, evals = [], [], []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        inputs = x.clone().requires_grad_(True)
        out = model(inputs)
        loss = F.mse_loss(out, y)
        (input_grad,) = torch.autograd.grad(loss, inputs, create_graph=True)
        penalty = input_grad.pow(2).sum()
        (loss + 0.1 * penalty).backward()
        optimizer.step()
        if step == 1:
            scaled.remove()
        losses.append(loss.item())
        penalties.append(penalty.item())
        evals.append(evaluate(model, x, y))
    result.update(
        losses=losses,
        penalties=penalties,
        evals=evals,
        frozen=[model.embed.weight.grad is None, model.embed.weight.requires_grad],
        module_hooks=[str(s) for s in seen],
    )
    return result


if __name__ == "__main__":
    print(train(build()))
