"""Dive into Deep Learning's optimization algorithms (PyTorch edition): gradient descent and Newton's method
on tensors, stochastic gradient descent with learning-rate functions, and the from-scratch minibatch SGD,
momentum, AdaGrad, RMSProp, Adadelta, Adam and Yogi of ``train_ch11`` on a synthetic airfoil-like regression,
each beside its concise ``torch.optim`` twin by ``train_concise_ch11``; then the learning-rate scheduling
chapter: a small LeNet trained with ``lr_scheduler.MultiStepLR`` and with the book's hand-written square-root,
factor and cosine-with-warmup schedulers set through ``trainer.param_groups``.

Its idioms: ``get_data_ch11``'s normalization ``(data - data.mean(axis=0)) / data.std(axis=0)``; ``train_ch11``'s
``w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1), requires_grad=True)``, ``b = torch.zeros((1),
requires_grad=True)``, ``net, loss = lambda X: linreg(X, w, b), squared_loss`` and ``trainer_fn([w, b], states,
hyperparams)``; ``sgd``'s ``p.data.sub_(hyperparams['lr'] * p.grad)`` and ``p.grad.data.zero_()``; momentum's
``v[:] = hyperparams['momentum'] * v + p.grad`` and ``p[:] -= hyperparams['lr'] * v`` under ``torch.no_grad()``;
AdaGrad's ``s[:] += torch.square(p.grad)``; RMSProp's ``s[:] = gamma * s + (1 - gamma) * torch.square(p.grad)``;
Adadelta's ``delta[:] = rho * delta + (1 - rho) * g * g``; Adam's ``v_bias_corr = v / (1 - beta1 **
hyperparams['t'])`` over ``init_adam_states`` and ``hyperparams['t'] += 1``; Yogi's ``torch.sign(torch.square(
p.grad) - s)``; ``train_concise_ch11``'s ``trainer_fn(net.parameters(), **hyperparams)``, ``nn.MSELoss(reduction=
'none')`` and ``l.mean().backward()``; Newton's ``c = torch.tensor(0.15 * np.pi)`` with ``torch.cosh(c * x)``;
SGD's ``torch.normal(0.0, 1, (1,)).item()`` noise; and the schedulers' ``scheduler.step()``, ``trainer.param_groups
[0]['lr']`` and ``for param_group in trainer.param_groups: param_group['lr'] = scheduler(epoch)``."""

from __future__ import annotations

import math

import numpy as np
from shim import lr_scheduler, nn, torch

data = torch.utils.data  # from torch.utils import data

ALGORITHM = "adam"  # the from-scratch one beside its concise twin: "sgd", "momentum", "adagrad", "rmsprop",
# "adadelta", "adam" or "yogi"
SCHEDULER = "multistep"  # the LeNet's schedule: "multistep", "square_root", "factor" or "cosine_warmup"
SHUFFLE = True


# ---- gradient descent, Newton's method, SGD on a toy objective ----


def gd_and_newton(record):
    def f(x):  # Objective function
        return x**2

    def f_grad(x):  # Gradient (derivative) of the objective function
        return 2 * x

    def gd(eta, f_grad):
        x = 10.0
        results = [x]
        for _ in range(10):
            x -= eta * f_grad(x)
            results.append(float(x))
        return results

    c = torch.tensor(0.15 * np.pi)

    def f_cosh(x):  # Objective function
        return torch.cosh(c * x)

    def f_cosh_grad(x):  # Gradient of the objective function
        return c * torch.sinh(c * x)

    def f_cosh_hess(x):  # Hessian of the objective function
        return c**2 * torch.cosh(c * x)

    def newton(eta=1):
        x = 10.0
        results = [x]
        for _ in range(10):
            x -= eta * f_cosh_grad(x) / f_cosh_hess(x)
            results.append(float(x))
        return results

    c_nonconvex = torch.tensor(0.15 * np.pi)

    def f_nonconvex(x):
        return x * torch.cos(c_nonconvex * x)

    def f_nonconvex_grad(x):
        return torch.cos(c_nonconvex * x) - c_nonconvex * x * torch.sin(c_nonconvex * x)

    def f_nonconvex_hess(x):
        return -2 * c_nonconvex * torch.sin(c_nonconvex * x) - x * c_nonconvex**2 * torch.cos(c_nonconvex * x)

    x = 10.0
    nonconvex = []
    for _ in range(5):
        x -= 0.5 * f_nonconvex_grad(x) / f_nonconvex_hess(x)
        nonconvex.append(float(x))
    record["gd"] = [gd(0.2, f_grad), newton(), nonconvex, float(f_cosh(torch.tensor(2.0))), float(f(torch.tensor(3.0)))]


def sgd_toy(record):
    def f(x1, x2):  # Objective function
        return x1**2 + 2 * x2**2

    def f_grad(x1, x2):  # Gradient of the objective function
        return 2 * x1, 4 * x2

    eta = 0.1

    def constant_lr():
        return 1

    t = 0

    def exponential_lr():
        # Global variable that is defined outside this function and updated inside
        nonlocal t
        t += 1
        return math.exp(-0.1 * t)

    def sgd(x1, x2, s1, s2, f_grad, lr):
        g1, g2 = f_grad(x1, x2)
        # Simulate noisy gradient
        g1 += torch.normal(0.0, 1, (1,)).item()
        g2 += torch.normal(0.0, 1, (1,)).item()
        eta_t = eta * lr()
        return (x1 - eta_t * g1, x2 - eta_t * g2, 0, 0)

    results = []
    for lr in (constant_lr, exponential_lr):
        x1, x2, s1, s2 = -5, -2, 0, 0
        for _ in range(8):
            x1, x2, s1, s2 = sgd(x1, x2, s1, s2, f_grad, lr)
        results.append([x1, x2, f(x1, x2)])
    record["sgd_toy"] = results


# ---- minibatch algorithms from scratch on the airfoil-like data ----


def get_data_ch11(batch_size=10, n=120):
    g = torch.Generator().manual_seed(3)
    features = torch.rand((n, 5), generator=g) * torch.tensor([20000.0, 20.0, 0.3, 70.0, 0.05])
    noise = torch.rand((n,), generator=g)
    labels = 130 - features[:, 0] / 4000 - features[:, 1] / 2 + 10 * features[:, 2] + features[:, 3] / 20 + noise
    data_np = torch.cat((features, labels.reshape(-1, 1)), 1).numpy().astype(np.float32)
    data_np = (data_np - data_np.mean(axis=0)) / data_np.std(axis=0)
    data_iter = load_array((torch.tensor(data_np[:n, :-1]), torch.tensor(data_np[:n, -1])), batch_size, is_train=True)
    return data_iter, data_np.shape[1] - 1


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a PyTorch data iterator."""
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train and SHUFFLE)


def linreg(X, w, b):
    """The linear regression model."""
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    """Squared loss."""
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def evaluate_loss(net, data_iter, loss):
    """Evaluate the loss of a model on the given dataset."""
    total, count = 0.0, 0
    for X, y in data_iter:
        out = net(X)
        y = y.reshape(out.shape)
        l = loss(out, y)  # noqa: E741  (the book's name)
        total += float(l.sum())
        count += l.numel()
    return total / count


def sgd(params, states, hyperparams):
    for p in params:
        p.data.sub_(hyperparams["lr"] * p.grad)
        p.grad.data.zero_()


def init_momentum_states(feature_dim):
    v_w = torch.zeros((feature_dim, 1))
    v_b = torch.zeros(1)
    return (v_w, v_b)


def sgd_momentum(params, states, hyperparams):
    for p, v in zip(params, states, strict=False):
        with torch.no_grad():
            v[:] = hyperparams["momentum"] * v + p.grad
            p[:] -= hyperparams["lr"] * v
        p.grad.data.zero_()


def init_adagrad_states(feature_dim):
    s_w = torch.zeros((feature_dim, 1))
    s_b = torch.zeros(1)
    return (s_w, s_b)


def adagrad(params, states, hyperparams):
    eps = 1e-6
    for p, s in zip(params, states, strict=False):
        with torch.no_grad():
            s[:] += torch.square(p.grad)
            p[:] -= hyperparams["lr"] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()


def init_rmsprop_states(feature_dim):
    s_w = torch.zeros((feature_dim, 1))
    s_b = torch.zeros(1)
    return (s_w, s_b)


def rmsprop(params, states, hyperparams):
    gamma, eps = hyperparams["gamma"], 1e-6
    for p, s in zip(params, states, strict=False):
        with torch.no_grad():
            s[:] = gamma * s + (1 - gamma) * torch.square(p.grad)
            p[:] -= hyperparams["lr"] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()


def init_adadelta_states(feature_dim):
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    delta_w, delta_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((s_w, delta_w), (s_b, delta_b))


def adadelta(params, states, hyperparams):
    rho, eps = hyperparams["rho"], 1e-5
    for p, (s, delta) in zip(params, states, strict=False):
        with torch.no_grad():
            # In-place updates via [:]
            s[:] = rho * s + (1 - rho) * torch.square(p.grad)
            g = (torch.sqrt(delta + eps) / torch.sqrt(s + eps)) * p.grad
            p[:] -= g
            delta[:] = rho * delta + (1 - rho) * g * g
        p.grad.data.zero_()


def init_adam_states(feature_dim):
    v_w, v_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((v_w, s_w), (v_b, s_b))


def adam(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, states, strict=False):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = beta2 * s + (1 - beta2) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams["t"])
            s_bias_corr = s / (1 - beta2 ** hyperparams["t"])
            p[:] -= hyperparams["lr"] * v_bias_corr / (torch.sqrt(s_bias_corr) + eps)
        p.grad.data.zero_()
    hyperparams["t"] += 1


def yogi(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-3
    for p, (v, s) in zip(params, states, strict=False):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = s + (1 - beta2) * torch.sign(torch.square(p.grad) - s) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams["t"])
            s_bias_corr = s / (1 - beta2 ** hyperparams["t"])
            p[:] -= hyperparams["lr"] * v_bias_corr / (torch.sqrt(s_bias_corr) + eps)
        p.grad.data.zero_()
    hyperparams["t"] += 1


# name: (trainer_fn, init_states, hyperparams, concise trainer, concise hyperparams)
ALGORITHMS = {
    "sgd": (sgd, None, {"lr": 0.05}, torch.optim.SGD, {"lr": 0.05}),
    "momentum": (sgd_momentum, init_momentum_states, {"lr": 0.02, "momentum": 0.5}, torch.optim.SGD,
                 {"lr": 0.02, "momentum": 0.5}),
    "adagrad": (adagrad, init_adagrad_states, {"lr": 0.1}, torch.optim.Adagrad, {"lr": 0.1}),
    "rmsprop": (rmsprop, init_rmsprop_states, {"lr": 0.01, "gamma": 0.9}, torch.optim.RMSprop,
                {"lr": 0.01, "alpha": 0.9}),
    "adadelta": (adadelta, init_adadelta_states, {"rho": 0.9}, torch.optim.Adadelta, {"rho": 0.9}),
    "adam": (adam, init_adam_states, {"lr": 0.01, "t": 1}, torch.optim.Adam, {"lr": 0.01}),
    "yogi": (yogi, init_adam_states, {"lr": 0.01, "t": 1}, torch.optim.Adam, {"lr": 0.01}),
}  # fmt: skip


def train_ch11(trainer_fn, states, hyperparams, data_iter, feature_dim, num_epochs=2):
    # Initialization
    w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1), requires_grad=True)
    b = torch.zeros((1), requires_grad=True)
    net, loss = lambda X: linreg(X, w, b), squared_loss
    # Train
    losses = []
    for _ in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y).mean()  # noqa: E741  (the book's name)
            l.backward()
            trainer_fn([w, b], states, hyperparams)
        losses.append(evaluate_loss(net, data_iter, loss))
    return losses, w.detach().reshape(-1).tolist(), float(b)


def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=2):
    # Initialization
    net = nn.Sequential(nn.Linear(5, 1))

    def init_weights(module):
        if type(module) == nn.Linear:  # noqa: E721  (the book's test)
            torch.nn.init.normal_(module.weight, std=0.01)

    net.apply(init_weights)
    optimizer = trainer_fn(net.parameters(), **hyperparams)
    loss = nn.MSELoss(reduction="none")
    losses = []
    for _ in range(num_epochs):
        for X, y in data_iter:
            optimizer.zero_grad()
            out = net(X)
            y = y.reshape(out.shape)
            l = loss(out, y)  # noqa: E741  (the book's name)
            l.mean().backward()
            optimizer.step()
        # `MSELoss` computes squared error without the 1/2 factor
        losses.append(evaluate_loss(net, data_iter, loss) / 2)
    return losses, net[0].weight.detach().reshape(-1).tolist()


# ---- learning-rate scheduling on a small LeNet ----


class SquareRootScheduler:
    def __init__(self, lr=0.1):
        self.lr = lr

    def __call__(self, num_update):
        return self.lr * pow(num_update + 1.0, -0.5)


class FactorScheduler:
    def __init__(self, factor=1, stop_factor_lr=1e-7, base_lr=0.1):
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.base_lr = base_lr

    def __call__(self, num_update):
        self.base_lr = max(self.stop_factor_lr, self.base_lr * self.factor)
        return self.base_lr


class CosineScheduler:
    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0):
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.max_steps = self.max_update - self.warmup_steps

    def get_warmup_lr(self, epoch):
        increase = (self.base_lr_orig - self.warmup_begin_lr) * float(epoch) / float(self.warmup_steps)
        return self.warmup_begin_lr + increase

    def __call__(self, epoch):
        if epoch < self.warmup_steps:
            return self.get_warmup_lr(epoch)
        if epoch <= self.max_update:
            self.base_lr = (
                self.final_lr
                + (self.base_lr_orig - self.final_lr)
                * (1 + math.cos(math.pi * (epoch - self.warmup_steps) / self.max_steps))
                / 2
            )
        return self.base_lr


def net_fn():
    model = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 8, kernel_size=3),
        nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(8 * 2 * 2, 32),
        nn.ReLU(),
        nn.Linear(32, 10),
    )
    return model


def load_data_fashion_mnist(batch_size, size=12):
    g = torch.Generator().manual_seed(0)
    templates = torch.rand((10, 1, size, size), generator=torch.Generator().manual_seed(7))
    labels = torch.randint(0, 10, (48,), generator=g)
    images = (0.7 * templates[labels] + 0.3 * torch.rand((48, 1, size, size), generator=g)).clamp(0, 1)
    train_iter = data.DataLoader(data.TensorDataset(images[:32], labels[:32]), batch_size, shuffle=SHUFFLE)
    test_iter = data.DataLoader(data.TensorDataset(images[32:], labels[32:]), batch_size, shuffle=False)
    return train_iter, test_iter


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def train_lenet(net, train_iter, test_iter, num_epochs, loss, trainer, device, scheduler=None):
    net.to(device)
    history = {"losses": [], "lrs": [], "test_acc": []}
    for epoch in range(num_epochs):
        total, count = 0.0, 0
        for X, y in train_iter:
            net.train()
            trainer.zero_grad()
            X, y = X.to(device), y.to(device)
            y_hat = net(X)
            l = loss(y_hat, y)  # noqa: E741  (the book's name)
            l.backward()
            trainer.step()
            with torch.no_grad():
                total += l * X.shape[0]
                count += X.shape[0]
        net.eval()
        correct = sum(accuracy(net(X), y) for X, y in test_iter)
        history["losses"].append(float(total / count))
        history["test_acc"].append(correct)
        if scheduler:
            if scheduler.__module__ == lr_scheduler.__name__:
                # Using PyTorch In-Built scheduler
                scheduler.step()
            else:
                # Using custom defined scheduler
                for param_group in trainer.param_groups:
                    param_group["lr"] = scheduler(epoch)
        history["lrs"].append(trainer.param_groups[0]["lr"])
    return history


def build():
    torch.manual_seed(0)
    return net_fn()


def train(net, steps=3):
    torch.manual_seed(1)
    record = {}
    gd_and_newton(record)
    sgd_toy(record)
    data_iter, feature_dim = get_data_ch11(10)
    trainer_fn, init_states, hyperparams, concise_fn, concise_hyperparams = ALGORITHMS[ALGORITHM]
    states = init_states(feature_dim) if init_states else None
    record["scratch"] = train_ch11(trainer_fn, states, dict(hyperparams), data_iter, feature_dim)
    record["concise"] = train_concise_ch11(concise_fn, concise_hyperparams, data_iter)
    lr = 0.3
    loss = nn.CrossEntropyLoss()
    trainer = torch.optim.SGD(net.parameters(), lr=lr)
    schedulers = {
        "multistep": lambda: lr_scheduler.MultiStepLR(trainer, milestones=[1, 2], gamma=0.5),
        "square_root": lambda: SquareRootScheduler(lr=lr),
        "factor": lambda: FactorScheduler(factor=0.9, stop_factor_lr=1e-2, base_lr=lr),
        "cosine_warmup": lambda: CosineScheduler(steps + 2, warmup_steps=1, base_lr=lr, final_lr=0.01),
    }
    scheduler = schedulers[SCHEDULER]()
    train_iter, test_iter = load_data_fashion_mnist(batch_size=8)
    history = train_lenet(net, train_iter, test_iter, steps, loss, trainer, torch.device("cpu"), scheduler)
    record.update(history)
    return record


if __name__ == "__main__":
    print(train(build()))
