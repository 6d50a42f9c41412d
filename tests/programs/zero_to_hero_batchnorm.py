"""karpathy's "Neural Networks: Zero to Hero" lecture 4 (makemore part 3: activations, gradients,
BatchNorm) at tiny sizes on a handful of made-up names. ``STYLE`` picks the lecture's first half (the
MLP with a hand-written batch norm over global tensors) or its second ("PyTorch-ified" ``Linear``,
``BatchNorm1d`` and ``Tanh`` classes with the diagnostics).

Its idioms: kaiming scaling ``torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3) /
((n_embd * block_size)**0.5)``, ``b2 = torch.randn(vocab_size, generator=g) * 0``; ``bngain =
torch.ones((1, n_hidden))``; ``bnmeani = hpreact.mean(0, keepdim=True)``, ``bnstdi = hpreact.std(0,
keepdim=True)``, ``hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias`` and ``bnmean_running = 0.999
* bnmean_running + 0.001 * bnmeani`` under ``torch.no_grad()``; the batch-norm calibration after
training; ``split_loss`` as a ``@torch.no_grad()`` function over a dict of splits; ``lr = 0.1 if i <
100000 else 0.01``. The classes': ``self.weight = torch.randn((fan_in, fan_out), generator=g) /
fan_in**0.5``, ``self.out += self.bias``, ``x.var(0, keepdim=True)``, ``torch.sqrt(xvar + self.eps)``,
buffers updated as ``(1 - self.momentum) * self.running_mean + self.momentum * xmean``; ``layers[-1].gamma
*= 0.1`` and ``layer.weight *= 5/3`` under ``torch.no_grad()``; ``layer.out.retain_grad()``; the forward
statistics ``'layer %d (%10s): mean %+.2f, std %.2f, saturated: %.2f%%' % (i, layer.__class__.__name__,
t.mean(), t.std(), (t.abs() > 0.97).float().mean()*100)`` and ``hy, hx = torch.histogram(t,
density=True)``; the gradient statistics of ``layer.out.grad`` and ``'weight %10s | mean %+f | std %e |
grad:data ratio %e' % (tuple(p.shape), t.mean(), t.std(), t.std() / p.std())``; the update ratios
``ud.append([((lr*p.grad).std() / p.data.std()).log10().item() for p in parameters])``; ``layer.training
= False`` for sampling."""

# ruff: noqa: UP031, B007  (the tutorial's spelling is the point: % and unused loop names)
from __future__ import annotations

import random
import warnings

from shim import F, torch

STYLE = "explicit"  # or "classes"

WORDS = [
    "emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "ella", "lily", "anna", "liam", "noah",
    "quincy", "zoe", "jax", "kevin", "wyatt", "brody", "felix", "grace", "hugo", "piper", "dylan", "tess",
]  # fmt: skip

n_embd = 4  # the dimensionality of the character embedding vectors
n_hidden = 16  # the number of neurons in the hidden layer of the MLP
block_size = 3
vocab_size = 27
batch_size = 8


class Linear:
    def __init__(self, fan_in, fan_out, g, bias=True):
        self.weight = torch.randn((fan_in, fan_out), generator=g) / fan_in**0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps = eps
        self.momentum = momentum
        self.training = True
        # parameters (trained with backprop)
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)
        # buffers (trained with a running 'momentum update')
        self.running_mean = torch.zeros(dim)
        self.running_var = torch.ones(dim)

    def __call__(self, x):
        # calculate the forward pass
        if self.training:
            xmean = x.mean(0, keepdim=True)  # batch mean
            xvar = x.var(0, keepdim=True)  # batch variance
        else:
            xmean = self.running_mean
            xvar = self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)  # normalize to unit variance
        self.out = self.gamma * xhat + self.beta
        # update the buffers
        if self.training:
            with torch.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


class Parameters:
    """The lecture's globals (or layers) with a state_dict for the comparison's shared start."""

    def __init__(self, tensors, layers=None):
        self.tensors = tensors
        self.layers = layers

    def state_dict(self):
        return dict(self.tensors)

    def load_state_dict(self, state):
        with torch.no_grad():
            for name, value in state.items():
                self.tensors[name].copy_(value)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(2147483647)  # for reproducibility
    if STYLE == "explicit":
        C = torch.randn((vocab_size, n_embd), generator=g)
        W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5 / 3) / ((n_embd * block_size) ** 0.5)
        # b1 = torch.randn(n_hidden, generator=g) * 0.01
        W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.01
        b2 = torch.randn(vocab_size, generator=g) * 0
        # BatchNorm parameters
        bngain = torch.ones((1, n_hidden))
        bnbias = torch.zeros((1, n_hidden))
        return Parameters({"C": C, "W1": W1, "W2": W2, "b2": b2, "bngain": bngain, "bnbias": bnbias})
    C = torch.randn((vocab_size, n_embd), generator=g)
    layers = [
        Linear(n_embd * block_size, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, vocab_size, g, bias=False), BatchNorm1d(vocab_size),
    ]  # fmt: skip
    with torch.no_grad():
        # last layer: make less confident
        layers[-1].gamma *= 0.1
        # all other layers: apply gain
        for layer in layers[:-1]:
            if isinstance(layer, Linear):
                layer.weight *= 5 / 3
    parameters = [C] + [p for layer in layers for p in layer.parameters()]
    return Parameters({str(i): p for i, p in enumerate(parameters)}, layers)


def datasets():
    words = list(WORDS)
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + ".":
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]  # crop and append
        X = torch.tensor(X)
        Y = torch.tensor(Y)
        return X, Y

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    return build_dataset(words[:n1]), build_dataset(words[n1:n2]), build_dataset(words[n2:]), itos


def explicit(model, steps, record):
    (Xtr, Ytr), (Xdev, Ydev), (Xte, Yte), itos = datasets()
    C, W1, W2, b2, bngain, bnbias = (model.tensors[k] for k in ("C", "W1", "W2", "b2", "bngain", "bnbias"))
    bnmean_running = torch.zeros((1, n_hidden))
    bnstd_running = torch.ones((1, n_hidden))
    parameters = [C, W1, W2, b2, bngain, bnbias]
    record["nelement"] = sum(p.nelement() for p in parameters)  # number of parameters in total
    for p in parameters:
        p.requires_grad = True
    lossi = []
    torch.manual_seed(3)
    for i in range(steps):
        # minibatch construct
        ix = torch.randint(0, Xtr.shape[0], (batch_size,))
        Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y
        # forward pass
        emb = C[Xb]  # embed the characters into vectors
        embcat = emb.view(emb.shape[0], -1)  # concatenate the vectors
        # Linear layer
        hpreact = embcat @ W1  # + b1 # hidden layer pre-activation
        # BatchNorm layer
        # -------------------------------------------------------------
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
        with torch.no_grad():
            bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani
            bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
        # -------------------------------------------------------------
        # Non-linearity
        h = torch.tanh(hpreact)  # hidden layer
        logits = h @ W2 + b2  # output layer
        loss = F.cross_entropy(logits, Yb)  # loss function
        # backward pass
        for p in parameters:
            p.grad = None
        loss.backward()
        # update
        lr = 0.1 if i < 100000 else 0.01  # step learning rate decay
        for p in parameters:
            p.data += -lr * p.grad
        # track stats
        if i % 10000 == 0:  # print every once in a while
            record["lines"].append(f"{i:7d}/{200000:7d}: {loss.item():.4f}")
        lossi.append(loss.log10().item())
        record["losses"].append(loss.item())
    record["running"] = [bnmean_running.tolist(), bnstd_running.tolist()]

    # calibrate the batch norm at the end of training
    with torch.no_grad():
        # pass the training set through
        emb = C[Xtr]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1  # + b1
        # measure the mean/std over the entire training set
        bnmean = hpreact.mean(0, keepdim=True)
        bnstd = hpreact.std(0, keepdim=True)
    record["calibrated"] = [bnmean.tolist(), bnstd.tolist()]

    @torch.no_grad()  # this decorator disables gradient tracking
    def split_loss(split):
        x, y = {
            "train": (Xtr, Ytr),
            "val": (Xdev, Ydev),
            "test": (Xte, Yte),
        }[split]
        emb = C[x]  # (N, block_size, n_embd)
        embcat = emb.view(emb.shape[0], -1)  # concat into (N, block_size * n_embd)
        hpreact = embcat @ W1  # + b1
        # hpreact = bngain * (hpreact - hpreact.mean(0, keepdim=True)) / hpreact.std(0, keepdim=True) + bnbias
        hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias
        h = torch.tanh(hpreact)  # (N, n_hidden)
        logits = h @ W2 + b2  # (N, vocab_size)
        loss = F.cross_entropy(logits, y)
        return split, loss.item(), torch.is_grad_enabled()

    record["splits"] = [split_loss("train"), split_loss("val")]
    return record


def classes(model, steps, record):
    (Xtr, Ytr), (Xdev, Ydev), _, itos = datasets()
    layers = model.layers
    parameters = list(model.tensors.values())
    C = parameters[0]
    record["nelement"] = sum(p.nelement() for p in parameters)  # number of parameters in total
    for p in parameters:
        p.requires_grad = True
    lossi = []
    ud = []
    torch.manual_seed(3)
    for i in range(steps):
        # minibatch construct
        ix = torch.randint(0, Xtr.shape[0], (batch_size,))
        Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y
        # forward pass
        emb = C[Xb]  # embed the characters into vectors
        x = emb.view(emb.shape[0], -1)  # concatenate the vectors
        for layer in layers:
            x = layer(x)
        loss = F.cross_entropy(x, Yb)  # loss function
        # backward pass
        for layer in layers:
            layer.out.retain_grad()  # AFTER_DEBUG: would take out retain_graph
        for p in parameters:
            p.grad = None
        loss.backward()
        # update
        lr = 1.0 if i < 150000 else 0.01  # step learning rate decay
        for p in parameters:
            p.data += -lr * p.grad
        # track stats
        lossi.append(loss.log10().item())
        record["losses"].append(loss.item())
        with torch.no_grad():
            ud.append([((lr * p.grad).std() / p.data.std()).log10().item() for p in parameters])
    record["ud"] = ud

    # visualize histograms: the forward pass activations
    for i, layer in enumerate(layers[:-1]):  # note: exclude the output layer
        if isinstance(layer, Tanh):
            t = layer.out
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # float() of t.mean(), which requires grad: both libraries warn
                record["lines"].append(
                    "layer %d (%10s): mean %+.2f, std %.2f, saturated: %.2f%%"
                    % (i, layer.__class__.__name__, t.mean(), t.std(), (t.abs() > 0.97).float().mean() * 100)
                )
            hy, hx = torch.histogram(t, density=True)
            record.setdefault("histograms", []).append([hx[:-1].detach().tolist(), hy.detach().tolist()])
    # visualize histograms: the backward pass gradients
    for i, layer in enumerate(layers[:-1]):  # note: exclude the output layer
        if isinstance(layer, Tanh):
            t = layer.out.grad
            line = "layer %d (%10s): mean %+f, std %e" % (i, layer.__class__.__name__, t.mean(), t.std())
            # a mean of ~1e-10 prints its sign, rounding noise: the numbers are compared, not the text
            record["grad_stats"].append([line.split(":")[0], t.mean().item(), t.std().item()])
            hy, hx = torch.histogram(t, density=True)
            record.setdefault("grad_histograms", []).append([hx[:-1].detach().tolist(), hy.detach().tolist()])
    # the weight gradients
    for i, p in enumerate(parameters):
        t = p.grad
        if p.ndim == 2:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # float() of p.std(), which requires grad: both libraries warn
                line = "weight %10s | mean %+f | std %e | grad:data ratio %e" % (
                    tuple(p.shape),
                    t.mean(),
                    t.std(),
                    t.std() / p.std(),
                )
            record["grad_stats"].append([line.split("|")[0], t.mean().item(), (t.std() / p.std()).item()])
    # the update ratios of the 2-D parameters, the lecture's plot lines
    record["ud_2d"] = [[ud[j][i] for j in range(len(ud))] for i, p in enumerate(parameters) if p.ndim == 2]

    # put layers into eval mode
    for layer in layers:
        layer.training = False

    @torch.no_grad()  # this decorator disables gradient tracking
    def split_loss(split):
        x, y = {"train": (Xtr, Ytr), "val": (Xdev, Ydev)}[split]
        emb = C[x]  # (N, block_size, n_embd)
        x = emb.view(emb.shape[0], -1)  # concat into (N, block_size * n_embd)
        for layer in layers:
            x = layer(x)
        loss = F.cross_entropy(x, y)
        return split, loss.item()

    record["splits"] = [split_loss("train"), split_loss("val")]
    # sample from the model
    g = torch.Generator().manual_seed(2147483647 + 10)
    names = []
    for _ in range(2):
        out = []
        context = [0] * block_size  # initialize with all ...
        while True:
            # forward pass the neural net
            emb = C[torch.tensor([context])]  # (1,block_size,n_embd)
            x = emb.view(emb.shape[0], -1)  # concatenate the vectors
            for layer in layers:
                x = layer(x)
            logits = x
            probs = F.softmax(logits, dim=1)
            # sample from the distribution
            ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            # shift the context window and track the samples
            context = context[1:] + [ix]
            out.append(ix)
            # if we sample the special '.' token, break
            if ix == 0 or len(out) > 12:
                break
        names.append("".join(itos[i] for i in out))  # decode and print the generated word
    record["names"] = names
    return record


def train(model, steps=3):
    record = {"losses": [], "lines": []}
    if STYLE == "explicit":
        return explicit(model, steps, record)
    record["grad_stats"] = []
    return classes(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
