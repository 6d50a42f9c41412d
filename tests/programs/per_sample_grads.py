"""Per-sample gradients, model ensembling and derivatives with torch.func, as its users write them.

Idioms: ``functional_call(model, (params, buffers), (x,))`` over ``{k: v.detach() for k, v in
model.named_parameters()}``; ``vmap(grad(compute_loss), in_dims=(None, None, 0, 0))`` for per-sample
gradients, checked against the batch gradient of ``loss.backward()``; DP-SGD style clipping of
each sample's gradient norm before averaging into ``p.grad`` and stepping an optimizer;
``grad_and_value``; ``stack_module_state(models)`` and ``vmap(fmodel, in_dims=(0, 0, None))``
running an ensemble of copies (through a ``copy.deepcopy`` base);
``jacrev`` of the outputs with respect to an input and ``jacrev(..., argnums=1)``; ``hessian`` of
the loss in the last bias; ``vmap`` with ``out_dims`` and a ``chunk_size``.
"""

from __future__ import annotations

import copy

import numpy as np
from shim import F, nn, optim, torch

func = torch.func
N, FEATURES, CLASSES, CLIP = 8, 5, 3, 0.5


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, 12)
        self.norm = nn.LayerNorm(12)
        self.fc2 = nn.Linear(12, CLASSES)

    def forward(self, x):
        return self.fc2(torch.tanh(self.norm(self.fc1(x))))


def build():
    torch.manual_seed(0)
    return SmallNet()


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32)
    y = (x[:, :CLASSES] + 0.3 * rng.normal(size=(N, CLASSES))).argmax(1)
    return torch.from_numpy(x), torch.from_numpy(y)


def train(model, steps=3):
    x, y = make_data()
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        out = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(out, target.unsqueeze(0))

    per_sample_grads = func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))
    optimizer = optim.SGD(model.parameters(), lr=0.2)
    losses, clip_factors, batch_diffs = [], [], []
    for _ in range(steps):
        params = {k: v.detach() for k, v in model.named_parameters()}
        grads = per_sample_grads(params, buffers, x, y)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        batch_diffs.append(max((grads[k].mean(0) - p.grad).abs().max().item() for k, p in model.named_parameters()))
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads.values()], dim=1).norm(dim=1)
        factor = (CLIP / (norms + 1e-6)).clamp(max=1.0)
        clip_factors.append(factor.tolist())
        for name, p in model.named_parameters():
            g = grads[name]
            p.grad = (g * factor.view(-1, *([1] * (g.dim() - 1)))).mean(0)
        optimizer.step()
        losses.append(loss.item())

    params = {k: v.detach() for k, v in model.named_parameters()}
    gradients, value = func.grad_and_value(compute_loss)(params, buffers, x[0], y[0])

    models = [copy.deepcopy(model) for _ in range(3)]
    with torch.no_grad():
        for i, member in enumerate(models):
            for p in member.parameters():
                p.mul_(1.0 + 0.1 * i)
    stacked_params, stacked_buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0])

    def fmodel(params, buffers, inputs):
        return func.functional_call(base, (params, buffers), (inputs,))

    ensemble = func.vmap(fmodel, in_dims=(0, 0, None))(stacked_params, stacked_buffers, x)
    looped = torch.stack([m(x) for m in models])
    chunked = func.vmap(lambda row: model(row.unsqueeze(0)).squeeze(0), out_dims=1, chunk_size=3)(x)

    jac_input = func.jacrev(lambda inp: func.functional_call(model, params, (inp,)))(x[0])
    jac_bias = func.jacrev(lambda p, inp: func.functional_call(model, p, (inp,)), argnums=0)(params, x[:2])
    bias = params["fc2.bias"]

    def loss_of_bias(b):
        return F.cross_entropy(func.functional_call(model, {**params, "fc2.bias": b}, (x,)), y)

    hess = func.hessian(loss_of_bias)(bias)
    return {
        "losses": losses,
        "clip_factors": clip_factors,
        "batch_diff_small": [d < 1e-5 for d in batch_diffs],
        "grad_and_value": [value.item(), gradients["fc2.bias"].tolist()],
        "stacked_shape": list(stacked_params["fc1.weight"].shape),
        "ensemble_diff": (ensemble - looped).abs().max().item(),
        "ensemble": ensemble[:, 0].tolist(),
        "chunked_shape": list(chunked.shape),
        "chunked": chunked[:, 0].tolist(),
        "jac_input": jac_input.tolist(),
        "jac_bias_shape": list(jac_bias["fc2.bias"].shape),
        "jac_bias": jac_bias["fc2.weight"].sum().item(),
        "hessian": hess.tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=10))
