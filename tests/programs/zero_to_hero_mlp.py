"""karpathy's "Neural Networks: Zero to Hero" lectures 1 to 3 (micrograd, makemore part 1, makemore part 2)
at tiny sizes on a handful of made-up names. ``PART`` picks one.

micrograd's idioms: a scalar ``Value`` engine whose results are checked against torch on scalars
(``x1 = torch.Tensor([2.0]).double(); x1.requires_grad = True``, ``o = torch.tanh(n)``,
``o.data.item()``, ``x2.grad.item()``), micrograd's ``test_sanity_check`` and ``test_more_ops``
(``z.relu()``, ``b**3``, ``(b + a).relu()``, ``10.0 / f``, ``assert abs(amg.grad - apt.grad.item()) <
tol``), and a ``Neuron``/``Layer``/``MLP`` trained by ``p.data += -0.05 * p.grad``. makemore part 1's:
the bigram counts ``N = torch.zeros((27, 27), dtype=torch.int32)`` filled by ``N[ix1, ix2] += 1``, ``P
= (N+1).float()`` then ``P /= P.sum(1, keepdims=True)``, sampling by ``torch.multinomial(p,
num_samples=1, replacement=True, generator=g).item()`` from ``g =
torch.Generator().manual_seed(2147483647)``, the log likelihood; and the one-layer net
``xenc = F.one_hot(xs, num_classes=27).float()``, ``W = torch.randn((27, 27), generator=g,
requires_grad=True)``, ``counts = logits.exp()``, ``probs[torch.arange(num), ys].log().mean() + 0.01 *
(W**2).mean()``, ``W.grad = None`` and ``W.data += -50 * W.grad``. Part 2's: ``build_dataset`` with a
rolling ``context = context[1:] + [ix]``, ``random.seed(42); random.shuffle(words)`` and ``n1 =
int(0.8*len(words))`` splits, ``C = torch.randn((27, 10), generator=g)``, ``sum(p.nelement() for p in
parameters)``, ``p.requires_grad = True``, ``emb = C[Xtr[ix]]`` with ``ix = torch.randint(0,
Xtr.shape[0], (32,))``, ``torch.tanh(emb.view(-1, 30) @ W1 + b1)``, ``F.cross_entropy(logits, Ytr[ix])``,
the learning-rate search ``lre = torch.linspace(-3, 0, 1000)``, ``lrs = 10**lre``, ``lr = lrs[i]``,
``lossi.append(loss.log10().item())``, ``p.data += -lr * p.grad``, the split losses under
``torch.no_grad()`` and sampling by ``C[torch.tensor([context])]`` and ``F.softmax(logits, dim=1)``."""

# ruff: noqa: B007  (the tutorial's spelling is the point: unused loop names)
from __future__ import annotations

import math
import random

from shim import F, torch

PART = "micrograd"  # or "bigram", "mlp"

# every letter appears, as in names.txt: the lectures' tables are 27 wide
WORDS = [
    "emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "ella", "lily", "anna", "liam", "noah",
    "quincy", "zoe", "jax", "kevin", "wyatt", "brody", "felix", "grace", "hugo", "piper", "dylan", "tess",
]  # fmt: skip


class Value:
    """stores a single scalar value and its gradient (micrograd's engine)"""

    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, other):
        assert isinstance(other, int | float), "only supporting int/float powers for now"
        out = Value(self.data**other, (self,), f"**{other}")

        def _backward():
            self.grad += (other * self.data ** (other - 1)) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Value(0 if self.data < 0 else self.data, (self,), "ReLU")

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        t = (math.exp(2 * self.data) - 1) / (math.exp(2 * self.data) + 1)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t**2) * out.grad

        out._backward = _backward
        return out

    def backward(self):
        # topological order all of the children in the graph
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        # go one variable at a time and apply the chain rule to get its gradient
        self.grad = 1
        for v in reversed(topo):
            v._backward()

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return other * self**-1


class Parameters:
    """The lectures keep their parameters as globals; a state_dict for the comparison's shared start."""

    def __init__(self, **tensors):
        self.tensors = tensors

    def state_dict(self):
        return dict(self.tensors)

    def load_state_dict(self, state):
        with torch.no_grad():
            for name, value in state.items():
                self.tensors[name].copy_(value)


def build():
    torch.manual_seed(0)
    if PART == "micrograd":
        g = torch.Generator().manual_seed(42)
        return Parameters(w=torch.randn(3, 4, generator=g).double(), v=torch.randn(4, generator=g).double())
    if PART == "bigram":
        g = torch.Generator().manual_seed(2147483647)
        return Parameters(W=torch.randn((27, 27), generator=g, requires_grad=True))
    g = torch.Generator().manual_seed(2147483647)  # for reproducibility
    C = torch.randn((27, 10), generator=g)
    W1 = torch.randn((30, 20), generator=g)
    b1 = torch.randn(20, generator=g)
    W2 = torch.randn((20, 27), generator=g)
    b2 = torch.randn(27, generator=g)
    return Parameters(C=C, W1=W1, b1=b1, W2=W2, b2=b2)


def micrograd(model, steps, record):
    # inputs x1,x2; weights w1,w2; bias of the neuron
    x1 = torch.Tensor([2.0]).double()
    x1.requires_grad = True
    x2 = torch.Tensor([0.0]).double()
    x2.requires_grad = True
    w1 = torch.Tensor([-3.0]).double()
    w1.requires_grad = True
    w2 = torch.Tensor([1.0]).double()
    w2.requires_grad = True
    b = torch.Tensor([6.8813735870195432]).double()
    b.requires_grad = True
    n = x1 * w1 + x2 * w2 + b
    o = torch.tanh(n)
    record["neuron"] = [o.data.item(), x2.grad, *(t.grad for t in (x1, x2, w1, w2, b))][:1]
    o.backward()
    record["neuron"] += [x2.grad.item(), w2.grad.item(), x1.grad.item(), w1.grad.item(), str(x1.grad.dtype)[-7:]]
    vx1, vw1, vx2, vw2, vb = Value(2.0), Value(-3.0), Value(0.0), Value(1.0), Value(6.8813735870195432)
    vo = (vx1 * vw1 + vx2 * vw2 + vb).tanh()
    vo.backward()
    record["neuron_matches_micrograd"] = abs(vo.data - o.data.item()) < 1e-6 and abs(vx1.grad - x1.grad.item()) < 1e-6

    # test_sanity_check
    x = torch.Tensor([-4.0]).double()
    x.requires_grad = True
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    xpt, ypt = x, y
    x = Value(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    xmg, ymg = x, y
    record["sanity"] = [ypt.data.item(), xpt.grad.item(), ymg.data == ypt.data.item(), xmg.grad == xpt.grad.item()]

    # test_more_ops
    def more_ops(a, b):
        c = a + b
        d = a * b + b**3
        c = c + c + 1
        c = c + 1 + c + (-a)
        d = d + d * 2 + (b + a).relu()
        d = d + 3 * d + (b - a).relu()
        e = c - d
        f = e**2
        g = f / 2.0
        g = g + 10.0 / f
        g.backward()
        return g

    a = torch.Tensor([-4.0]).double()
    b = torch.Tensor([2.0]).double()
    a.requires_grad = True
    b.requires_grad = True
    gpt, apt, bpt = more_ops(a, b), a, b
    amg, bmg = Value(-4.0), Value(2.0)
    gmg = more_ops(amg, bmg)
    tol = 1e-6
    record["more_ops"] = [gpt.data.item(), apt.grad.item(), bpt.grad.item()]
    record["more_ops_match"] = [
        abs(gmg.data - gpt.data.item()) < tol,
        abs(amg.grad - apt.grad.item()) < tol,
        abs(bmg.grad - bpt.grad.item()) < tol,
    ]

    # the MLP of Neurons, written with torch tensors of one element as micrograd's Values
    w, v = model.tensors["w"], model.tensors["v"]
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    ys = [1.0, -1.0, -1.0, 1.0]  # desired targets
    parameters = [w, v]
    for p in parameters:
        p.requires_grad = True
    for k in range(steps):
        # forward pass
        ypred = [torch.tanh(torch.tanh(torch.tensor(x).double() @ w) @ v) for x in xs]
        loss = sum((yout - ygt) ** 2 for ygt, yout in zip(ys, ypred))
        # backward pass
        for p in parameters:
            p.grad = None
        loss.backward()
        # update
        for p in parameters:
            p.data += -0.05 * p.grad
        record["losses"].append(loss.item())
        record["ypred"] = [y.item() for y in ypred]
    return record


def bigram(model, steps, record):
    words = WORDS
    N = torch.zeros((27, 27), dtype=torch.int32)
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            ix1 = stoi[ch1]
            ix2 = stoi[ch2]
            N[ix1, ix2] += 1
    record["counts"] = [N.sum().item(), N[0].tolist(), str(N.dtype)[-5:]]
    g = torch.Generator().manual_seed(2147483647)
    P = (N + 1).float()
    P /= P.sum(1, keepdims=True)
    names = []
    for i in range(3):
        out = []
        ix = 0
        while True:
            p = P[ix]
            ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
            out.append(itos[ix])
            if ix == 0 or len(out) > 12:
                break
        names.append("".join(out))
    record["names"] = names
    log_likelihood = 0.0
    n = 0
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            ix1 = stoi[ch1]
            ix2 = stoi[ch2]
            prob = P[ix1, ix2]
            logprob = torch.log(prob)
            log_likelihood += logprob
            n += 1
    record["log_likelihood"] = [f"{log_likelihood=}".split("(")[1][:9], (-log_likelihood / n).item()]

    # create the dataset
    xs, ys = [], []
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    xs = torch.tensor(xs)
    ys = torch.tensor(ys)
    num = xs.nelement()
    W = model.tensors["W"]
    # gradient descent
    for k in range(steps):
        # forward pass
        xenc = F.one_hot(xs, num_classes=27).float()  # input to the network: one-hot encoding
        logits = xenc @ W  # predict log-counts
        counts = logits.exp()  # counts, equivalent to N
        probs = counts / counts.sum(1, keepdims=True)  # probabilities for next character
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
        record["losses"].append(loss.item())
        # backward pass
        W.grad = None  # set to zero the gradient
        loss.backward()
        # update
        W.data += -50 * W.grad
    return record


def build_dataset(words, stoi, block_size):
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


def mlp(model, steps, record):
    words = list(WORDS)
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    block_size = 3  # context length: how many characters do we take to predict the next one?
    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    Xtr, Ytr = build_dataset(words[:n1], stoi, block_size)
    Xdev, Ydev = build_dataset(words[n1:n2], stoi, block_size)
    record["shapes"] = [list(Xtr.shape), list(Ytr.shape), Xtr[:5].tolist()]
    C, W1, b1, W2, b2 = (model.tensors[k] for k in ("C", "W1", "b1", "W2", "b2"))
    parameters = [C, W1, b1, W2, b2]
    record["nelement"] = sum(p.nelement() for p in parameters)  # number of parameters in total
    for p in parameters:
        p.requires_grad = True
    lre = torch.linspace(-3, 0, 1000)
    lrs = 10**lre
    lri = []
    lossi = []
    stepi = []
    torch.manual_seed(7)
    for i in range(steps):
        # minibatch construct
        ix = torch.randint(0, Xtr.shape[0], (32,))
        # forward pass
        emb = C[Xtr[ix]]  # (32, 3, 10)
        h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (32, 20)
        logits = h @ W2 + b2  # (32, 27)
        if i == 0:  # the lecture's explicit softmax first, then F.cross_entropy
            counts = logits.exp()
            prob = counts / counts.sum(1, keepdims=True)
            record["manual_loss"] = -prob[torch.arange(32), Ytr[ix]].log().mean().item()
        loss = F.cross_entropy(logits, Ytr[ix])
        # backward pass
        for p in parameters:
            p.grad = None
        loss.backward()
        # update
        lr = lrs[min(600 + 100 * i, 999)]
        for p in parameters:
            p.data += -lr * p.grad
        # track stats
        lri.append(lre[min(600 + 100 * i, 999)].item())
        stepi.append(i)
        lossi.append(loss.log10().item())
        record["losses"].append(loss.item())
    record["lri"] = lri
    record["lossi"] = lossi
    with torch.no_grad():
        emb = C[Xdev]  # (32, 3, 2)
        h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (32, 100)
        logits = h @ W2 + b2  # (32, 27)
        record["dev_loss"] = F.cross_entropy(logits, Ydev).item()
    # sample from the model
    g = torch.Generator().manual_seed(2147483647 + 10)
    names = []
    for _ in range(3):
        out = []
        context = [0] * block_size  # initialize with all ...
        while True:
            emb = C[torch.tensor([context])]  # (1,block_size,d)
            h = torch.tanh(emb.view(1, -1) @ W1 + b1)
            logits = h @ W2 + b2
            probs = F.softmax(logits, dim=1)
            ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            context = context[1:] + [ix]
            out.append(ix)
            if ix == 0 or len(out) > 12:
                break
        names.append("".join(itos[i] for i in out))
    record["names"] = names
    return record


def train(model, steps=3):
    record = {"losses": []}
    if PART == "micrograd":
        return micrograd(model, steps, record)
    if PART == "bigram":
        return bigram(model, steps, record)
    return mlp(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
