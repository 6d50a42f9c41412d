"""karpathy's "Neural Networks: Zero to Hero" lecture 6 (makemore part 5: building a WaveNet) at tiny
sizes on a handful of made-up names: the lecture's own ``Linear``, ``BatchNorm1d``, ``Tanh``,
``Embedding``, ``FlattenConsecutive`` and ``Sequential`` classes written after ``torch.nn``'s API.

Its idioms: ``torch.manual_seed(42)`` then layers drawing from the global generator
(``torch.randn((fan_in, fan_out)) / fan_in**0.5``); ``BatchNorm1d`` reducing over ``dim = (0, 1)`` when
``x.ndim == 3`` by ``x.mean(dim, keepdim=True)`` and ``x.var(dim, keepdim=True)``;
``FlattenConsecutive`` by ``B, T, C = x.shape``, ``x = x.view(B, T//self.n, C*self.n)`` and ``if x.shape[1]
== 1: x = x.squeeze(1)``; ``Sequential.parameters`` as ``[p for layer in self.layers for p in
layer.parameters()]``; ``model.layers[-1].weight *= 0.1`` under ``torch.no_grad()``; ``ix =
torch.randint(0, Xtr.shape[0], (batch_size,))``; ``lossi.append(loss.log10().item())`` averaged by
``torch.tensor(lossi).view(-1, k).mean(1)``; the shapes printed layer by layer by ``print(layer.__class__.__name__,
':', tuple(layer.out.shape))``; ``layer.training = False`` for ``split_loss`` and sampling by
``model(torch.tensor([context]))``, ``F.softmax(logits, dim=1)`` and ``torch.multinomial(probs,
num_samples=1).item()``. ``HIERARCHICAL`` = False gives the lecture's starting point (one flatten of the
whole context)."""

from __future__ import annotations

import random

from shim import F, torch

HIERARCHICAL = True

WORDS = [
    "emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "ella", "lily", "anna", "liam", "noah",
    "quincy", "zoe", "jax", "kevin", "wyatt", "brody", "felix", "grace", "hugo", "piper", "dylan", "tess",
]  # fmt: skip

block_size = 8  # context length: how many characters do we take to predict the next one?
n_embd = 4  # the dimensionality of the character embedding vectors
n_hidden = 12  # the number of neurons in the hidden layer of the MLP
vocab_size = 27
batch_size = 8


class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out)) / fan_in**0.5  # note: kaiming init
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
            if x.ndim == 2:
                dim = 0
            elif x.ndim == 3:
                dim = (0, 1)
            xmean = x.mean(dim, keepdim=True)  # batch mean
            xvar = x.var(dim, keepdim=True)  # batch variance
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


class Embedding:
    def __init__(self, num_embeddings, embedding_dim):
        self.weight = torch.randn((num_embeddings, embedding_dim))

    def __call__(self, IX):
        self.out = self.weight[IX]
        return self.out

    def parameters(self):
        return [self.weight]


class FlattenConsecutive:
    def __init__(self, n):
        self.n = n

    def __call__(self, x):
        B, T, C = x.shape
        x = x.view(B, T // self.n, C * self.n)
        if x.shape[1] == 1:
            x = x.squeeze(1)
        self.out = x
        return self.out

    def parameters(self):
        return []


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        self.out = x
        return self.out

    def parameters(self):
        # get parameters of all layers and stretch them out into one list
        return [p for layer in self.layers for p in layer.parameters()]

    # the comparison's shared start: a state_dict of the parameters and the batch norm buffers
    def state_dict(self):
        state = {str(i): p for i, p in enumerate(self.parameters())}
        for i, layer in enumerate(self.layers):
            if isinstance(layer, BatchNorm1d):
                state[f"{i}.running_mean"], state[f"{i}.running_var"] = layer.running_mean, layer.running_var
        return state

    def load_state_dict(self, state):
        with torch.no_grad():
            for p, (_, value) in zip(
                self.parameters(), sorted(((int(k), v) for k, v in state.items() if "." not in k))
            ):
                p.copy_(value)


def build():
    torch.manual_seed(42)  # seed rng for reproducibility
    if HIERARCHICAL:
        # hierarchical network
        model = Sequential([
            Embedding(vocab_size, n_embd),
            FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
            FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
            FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
            Linear(n_hidden, vocab_size),
        ])  # fmt: skip
    else:
        model = Sequential([
            Embedding(vocab_size, n_embd),
            FlattenConsecutive(block_size), Linear(n_embd * block_size, n_hidden, bias=False),
            BatchNorm1d(n_hidden), Tanh(),
            Linear(n_hidden, vocab_size),
        ])  # fmt: skip
    # parameter init
    with torch.no_grad():
        model.layers[-1].weight *= 0.1  # last layer make less confident
    return model


def datasets():
    words = list(WORDS)
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}

    # build the dataset
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
    return build_dataset(words[:n1]), build_dataset(words[n1:n2]), itos


def train(model, steps=3):
    record = {"losses": []}
    (Xtr, Ytr), (Xdev, Ydev), itos = datasets()
    record["example"] = [[x.tolist(), y.item()] for x, y in zip(Xtr[:3], Ytr[:3])]
    parameters = model.parameters()
    record["nelement"] = sum(p.nelement() for p in parameters)  # number of parameters in total
    for p in parameters:
        p.requires_grad = True
    # same optimization as last time
    lossi = []
    torch.manual_seed(1)
    for i in range(steps):
        # minibatch construct
        ix = torch.randint(0, Xtr.shape[0], (batch_size,))
        Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y
        # forward pass
        logits = model(Xb)
        loss = F.cross_entropy(logits, Yb)  # loss function
        # backward pass
        for p in parameters:
            p.grad = None
        loss.backward()
        # update: simple SGD
        lr = 0.1 if i < 150000 else 0.01  # step learning rate decay
        for p in parameters:
            p.data += -lr * p.grad
        # track stats
        if i % 10000 == 0:  # print every once in a while
            record["line"] = f"{i:7d}/{200000:7d}: {loss.item():.4f}"
        lossi.append(loss.log10().item())
        record["losses"].append(loss.item())
    record["lossi_mean"] = torch.tensor(lossi).view(-1, 1).mean(1).tolist()
    record["shapes"] = [f"{layer.__class__.__name__} : {tuple(layer.out.shape)}" for layer in model.layers]
    record["running_var"] = [
        layer.running_var.flatten().tolist() for layer in model.layers if isinstance(layer, BatchNorm1d)
    ]

    # put layers into eval mode (needed for batchnorm especially)
    for layer in model.layers:
        layer.training = False

    # evaluate the loss
    @torch.no_grad()  # this decorator disables gradient tracking inside pytorch
    def split_loss(split):
        x, y = {"train": (Xtr, Ytr), "val": (Xdev, Ydev)}[split]
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        return split, loss.item()

    record["splits"] = [split_loss("train"), split_loss("val")]
    # sample from the model
    torch.manual_seed(3)
    names = []
    for _ in range(2):
        out = []
        context = [0] * block_size  # initialize with all ...
        while True:
            # forward pass the neural net
            logits = model(torch.tensor([context]))
            probs = F.softmax(logits, dim=1)
            # sample from the distribution
            ix = torch.multinomial(probs, num_samples=1).item()
            # shift the context window and track the samples
            context = context[1:] + [ix]
            out.append(ix)
            # if we sample the special '.' token, break
            if ix == 0 or len(out) > 12:
                break
        names.append("".join(itos[i] for i in out))  # decode and print the generated word
    record["names"] = names
    return record


if __name__ == "__main__":
    print(train(build()))
