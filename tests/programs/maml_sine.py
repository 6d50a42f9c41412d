"""MAML on sine-wave regression, as Finn et al.'s sinusoid experiment is written in PyTorch.

Its idioms: a learner whose weights live in an ``nn.ParameterList`` (``nn.Parameter(torch.ones(out, in))``
then ``nn.init.kaiming_normal_``) and whose ``forward(x, vars=None)`` runs ``F.linear`` over either
its own parameters or a list of adapted tensors; the inner loop
``grad = torch.autograd.grad(loss, fast_weights, create_graph=True)`` and
``fast_weights = list(map(lambda p: p[1] - inner_lr * p[0], zip(grad, fast_weights)))`` (first-order
with ``create_graph=False`` and the gradients detached); the outer loss summed over the tasks of a
meta-batch and divided by their number, Adam on the meta-parameters; for the fine-tuning evaluation a
``copy.deepcopy`` of the learner, or ``torch.func.functional_call(net, params, (x,))`` over a dict of
adapted tensors from ``named_parameters()``; ``torch.stack`` of per-task losses."""

from __future__ import annotations

import copy

import numpy as np
from shim import F, nn, optim, torch

INNER_LR = 0.003
INNER_STEPS = 2
FIRST_ORDER = False
TASKS_PER_BATCH = 3
K_SHOT = 5
DEVICE = "cpu"


class Learner(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vars = nn.ParameterList()
        for out_features, in_features in config:
            w = nn.Parameter(torch.ones(out_features, in_features))
            nn.init.kaiming_normal_(w)
            self.vars.append(w)
            self.vars.append(nn.Parameter(torch.zeros(out_features)))

    def forward(self, x, vars=None):
        if vars is None:
            vars = self.vars
        idx = 0
        for i in range(len(self.config)):
            w, b = vars[idx], vars[idx + 1]
            x = F.linear(x, w, b)
            idx += 2
            if i < len(self.config) - 1:
                x = F.relu(x)
        return x

    def parameters(self, recurse=True):
        return self.vars


class Net(nn.Module):
    """The same network as modules, for the ``functional_call`` evaluation."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


class Meta(nn.Module):
    def __init__(self):
        super().__init__()
        self.learner = Learner([(16, 1), (16, 16), (1, 16)])
        self.probe = Net()

    def adapt(self, x_spt, y_spt):
        fast_weights = list(self.learner.parameters())
        for _ in range(INNER_STEPS):
            loss = F.mse_loss(self.learner(x_spt, fast_weights), y_spt)
            grad = torch.autograd.grad(loss, fast_weights, create_graph=not FIRST_ORDER)
            if FIRST_ORDER:
                grad = [g.detach() for g in grad]
            fast_weights = list(map(lambda p: p[1] - INNER_LR * p[0], zip(grad, fast_weights)))
        return fast_weights

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        task_num = x_spt.size(0)
        losses_q = []
        for i in range(task_num):
            fast_weights = self.adapt(x_spt[i], y_spt[i])
            losses_q.append(F.mse_loss(self.learner(x_qry[i], fast_weights), y_qry[i]))
        return torch.stack(losses_q).sum() / task_num


def sample_tasks(rng, n_tasks):
    amplitude = rng.uniform(0.1, 5.0, (n_tasks, 1, 1))
    phase = rng.uniform(0, np.pi, (n_tasks, 1, 1))
    x = rng.uniform(-5, 5, (n_tasks, 2 * K_SHOT, 1))
    y = amplitude * np.sin(x - phase)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    return x[:, :K_SHOT], y[:, :K_SHOT], x[:, K_SHOT:], y[:, K_SHOT:]


def build():
    torch.manual_seed(222)
    return Meta()


def train(model, steps=2):
    device = torch.device(DEVICE)
    model = model.to(device)
    rng = np.random.default_rng(222)
    meta_optim = optim.Adam(model.learner.parameters(), lr=1e-3)
    record = {"losses": [], "finetune": [], "functional": []}
    for _ in range(steps):
        x_spt, y_spt, x_qry, y_qry = (t.to(device) for t in sample_tasks(rng, TASKS_PER_BATCH))
        loss_q = model(x_spt, y_spt, x_qry, y_qry)
        meta_optim.zero_grad()
        loss_q.backward()
        meta_optim.step()
        record["losses"].append(loss_q.item())

    # fine-tuning on a new task, on a copy so that the meta-parameters stay as they are
    x_spt, y_spt, x_qry, y_qry = (t[0].to(device) for t in sample_tasks(rng, 1))
    learner = copy.deepcopy(model.learner)
    fast_weights = list(learner.parameters())
    for _ in range(INNER_STEPS):
        loss = F.mse_loss(learner(x_spt, fast_weights), y_spt)
        grad = torch.autograd.grad(loss, fast_weights)
        fast_weights = [w - INNER_LR * g for g, w in zip(grad, fast_weights)]
        with torch.no_grad():
            record["finetune"].append(F.mse_loss(learner(x_qry, fast_weights), y_qry).item())
    del learner

    # the same inner step with torch.func over a module's named parameters
    params = dict(model.probe.named_parameters())
    for _ in range(INNER_STEPS):
        prediction = torch.func.functional_call(model.probe, params, (x_spt,))
        loss = F.mse_loss(prediction, y_spt)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
        params = {name: p - INNER_LR * g for (name, p), g in zip(params.items(), grads)}
    query_loss = F.mse_loss(torch.func.functional_call(model.probe, params, (x_qry,)), y_qry)
    query_loss.backward()
    record["functional"].append(query_loss.item())
    record["probe_grad"] = [p.grad.norm().item() for p in model.probe.parameters()]
    record["meta_grad"] = [p.grad.norm().item() for p in model.learner.parameters()]
    return record


if __name__ == "__main__":
    print(train(build()))
