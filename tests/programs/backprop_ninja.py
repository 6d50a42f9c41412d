"""karpathy's "Neural Networks: Zero to Hero" lecture 5 (makemore part 4: becoming a backprop ninja) at tiny
sizes on a handful of made-up names: the two-layer MLP with batch norm, its forward pass cut into
atoms, every atom's gradient written by hand and compared with autograd's, then trained on the hand-written
backward pass alone.

Its idioms: ``cmp(s, dt, t)`` by ``torch.all(dt == t.grad).item()``, ``torch.allclose(dt, t.grad)`` and
``(dt - t.grad).abs().max().item()`` printed as ``f'{s:15s} | exact: {str(ex):5s} | approximate:
{str(app):5s} | maxdiff: {maxdiff}'``; the forward pass "chunkated into smaller steps" (``bnmeani =
1/n*hprebn.sum(0, keepdim=True)``, the Bessel-corrected ``bnvar = 1/(n-1)*(bndiff2).sum(0, keepdim=True)``,
``bnvar_inv = (bnvar + 1e-5)**-0.5``, ``logit_maxes = logits.max(1, keepdim=True).values``,
``counts_sum_inv = counts_sum**-1``, ``loss = -logprobs[range(n), Yb].mean()``) with ``t.retain_grad()`` on
each atom; ``dlogprobs = torch.zeros_like(logprobs)`` with ``dlogprobs[range(n), Yb] = -1.0/n``,
``dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)``, ``dcounts += torch.ones_like(counts) *
dcounts_sum``, ``dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes``,
``dhpreact = (1.0 - h**2) * dh``, ``dbndiff2 = (1.0/(n-1))*torch.ones_like(bndiff2) * dbnvar``,
``demb = dembcat.view(emb.shape)`` and ``dC[ix] += demb[k,j]`` in a double loop over ``Xb``; exercise 2's
``dlogits = F.softmax(logits, 1)``, ``dlogits[range(n), Yb] -= 1``, ``dlogits /= n``; exercise 3's
``hprebn.var(0, keepdim=True, unbiased=True)`` and ``dhprebn = bngain*bnvar_inv/n * (n*dhpreact -
dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))``; exercise 4's training under
``torch.no_grad()`` by ``for p, grad in zip(parameters, grads): p.data += -lr * grad``.

``EXACT``: the comparison keeps ``cmp``'s exact flags only where PyTorch's autograd gives the hand-written
gradient bit for bit (every atom above the tanh); the flags below are rounding-dependent in either
library, and their ``approximate`` flags and ``maxdiff`` are compared instead."""

from __future__ import annotations

import random

from shim import F, torch

WORDS = [
    "emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "ella", "lily", "anna", "liam", "noah",
    "quincy", "zoe", "jax", "kevin", "wyatt", "brody", "felix", "grace", "hugo", "piper", "dylan", "tess",
]  # fmt: skip

n_embd = 5  # the dimensionality of the character embedding vectors
n_hidden = 16  # the number of neurons in the hidden layer of the MLP
block_size = 3
vocab_size = 27
batch_size = 8
# the atoms whose hand-written gradient PyTorch's autograd gives bit for bit (the tanh's and those below it
# differ by an ulp there: its tanh backward rounds 1 - h*h otherwise; vkml's give every atom to hpreact exactly)
EXACT = ("logprobs", "probs", "counts_sum_inv", "counts_sum", "counts", "norm_logits", "logit_maxes", "logits", "h")
EXACT += ("W2", "b2")


class Parameters:
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
    g = torch.Generator().manual_seed(2147483647)  # for reproducibility
    C = torch.randn((vocab_size, n_embd), generator=g)
    # Layer 1
    W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5 / 3) / ((n_embd * block_size) ** 0.5)
    b1 = torch.randn(n_hidden, generator=g) * 0.1  # using b1 just for fun, it's useless because of BN
    # Layer 2
    W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.1
    b2 = torch.randn(vocab_size, generator=g) * 0.1
    # BatchNorm parameters
    bngain = torch.randn((1, n_hidden)) * 0.1 + 1.0
    bnbias = torch.randn((1, n_hidden)) * 0.1
    # Note: I am initializating many of these parameters in non-standard ways
    # because sometimes initializating with e.g. all zeros could mask an incorrect
    # implementation of the backward pass.
    return Parameters(C=C, W1=W1, b1=b1, W2=W2, b2=b2, bngain=bngain, bnbias=bnbias)


def datasets():
    words = list(WORDS)
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + ".":
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]  # crop and append
        return torch.tensor(X), torch.tensor(Y)

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    return build_dataset(words[:n1]), build_dataset(words[n1:])


def train(model, steps=3):
    record = {"losses": [], "lines": [], "exact": [], "approximate": [], "maxdiff": []}
    (Xtr, Ytr), (Xdev, Ydev) = datasets()
    C, W1, b1, W2, b2, bngain, bnbias = (model.tensors[k] for k in ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias"))
    parameters = [C, W1, b1, W2, b2, bngain, bnbias]
    record["nelement"] = sum(p.nelement() for p in parameters)  # number of parameters in total
    for p in parameters:
        p.requires_grad = True
    n = batch_size  # a shorter variable also, for convenience
    # construct a minibatch
    torch.manual_seed(1)
    ix = torch.randint(0, Xtr.shape[0], (batch_size,))
    Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y

    # utility function we will use later when comparing manual gradients to PyTorch gradients
    def cmp(s, dt, t):
        ex = torch.all(dt == t.grad).item()
        app = torch.allclose(dt, t.grad)
        maxdiff = (dt - t.grad).abs().max().item()
        line = f"{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}"
        record["lines"].append(line.split("|")[0])
        if s in EXACT:
            record["exact"].append(ex)
        record["approximate"].append(app)
        record["maxdiff"].append(maxdiff)

    # forward pass, "chunkated" into smaller steps that are possible to backward one at a time
    emb = C[Xb]  # embed the characters into vectors
    embcat = emb.view(emb.shape[0], -1)  # concatenate the vectors
    # Linear layer 1
    hprebn = embcat @ W1 + b1  # hidden layer pre-activation
    # BatchNorm layer
    bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff**2
    bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)  # note: Bessel's correction (dividing by n-1, not n)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = bndiff * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    # Non-linearity
    h = torch.tanh(hpreact)  # hidden layer
    # Linear layer 2
    logits = h @ W2 + b2  # output layer
    # cross entropy loss (same as F.cross_entropy(logits, Yb))
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes  # subtract max for numerical stability
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum**-1  # if I use (1.0 / counts_sum) instead then I can't get backprop to be bit exact...
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()
    # PyTorch backward pass
    for p in parameters:
        p.grad = None
    for t in [logprobs, probs, counts, counts_sum, counts_sum_inv,  # afaik there is no cleaner way
              norm_logits, logit_maxes, logits, h, hpreact, bnraw,
              bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani,
              embcat, emb]:  # fmt: skip
        t.retain_grad()
    loss.backward()
    record["loss"] = loss.item()

    # Exercise 1: backprop through the whole thing manually, backpropagating through exactly all of the
    # variables as they are defined in the forward pass above, one by one
    dlogprobs = torch.zeros_like(logprobs)
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = (1.0 / probs) * dlogprobs
    dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
    dcounts = counts_sum_inv * dprobs
    dcounts_sum = (-(counts_sum**-2)) * dcounts_sum_inv
    dcounts += torch.ones_like(counts) * dcounts_sum
    dnorm_logits = counts * dcounts
    dlogits = dnorm_logits.clone()
    dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
    dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h**2) * dh
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnraw = bngain * dhpreact
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbndiff = bnvar_inv * dbnraw
    dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
    dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
    dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
    dbndiff += (2 * bndiff) * dbndiff2
    dhprebn = dbndiff.clone()
    dbnmeani = (-dbndiff).sum(0)
    dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            ix = Xb[k, j]
            dC[ix] += demb[k, j]

    cmp("logprobs", dlogprobs, logprobs)
    cmp("probs", dprobs, probs)
    cmp("counts_sum_inv", dcounts_sum_inv, counts_sum_inv)
    cmp("counts_sum", dcounts_sum, counts_sum)
    cmp("counts", dcounts, counts)
    cmp("norm_logits", dnorm_logits, norm_logits)
    cmp("logit_maxes", dlogit_maxes, logit_maxes)
    cmp("logits", dlogits, logits)
    cmp("h", dh, h)
    cmp("W2", dW2, W2)
    cmp("b2", db2, b2)
    cmp("hpreact", dhpreact, hpreact)
    cmp("bngain", dbngain, bngain)
    cmp("bnbias", dbnbias, bnbias)
    cmp("bnraw", dbnraw, bnraw)
    cmp("bnvar_inv", dbnvar_inv, bnvar_inv)
    cmp("bnvar", dbnvar, bnvar)
    cmp("bndiff2", dbndiff2, bndiff2)
    cmp("bndiff", dbndiff, bndiff)
    cmp("bnmeani", dbnmeani, bnmeani)
    cmp("hprebn", dhprebn, hprebn)
    cmp("embcat", dembcat, embcat)
    cmp("W1", dW1, W1)
    cmp("b1", db1, b1)
    cmp("emb", demb, emb)
    cmp("C", dC, C)

    # Exercise 2: backprop through cross_entropy but all in one go
    loss_fast = F.cross_entropy(logits, Yb)
    record["loss_fast"] = [loss_fast.item(), abs((loss_fast - loss).item()) < 1e-6]
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    cmp("logits_fast", dlogits, logits)  # I can only get approximate to be true, my maxdiff is 6e-9

    # Exercise 3: backprop through batchnorm but all in one go
    hpreact_fast = (
        bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5)
        + bnbias
    )
    record["max_diff"] = (hpreact_fast - hpreact).abs().max().item()
    dhprebn = (
        bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
    )
    cmp("hprebn_fast", dhprebn, hprebn)  # I can only get approximate to be true, my maxdiff is 9e-10

    # Exercise 4: putting it all together! Train the MLP neural net with your own backward pass
    torch.manual_seed(2)
    with torch.no_grad():
        for i in range(steps):
            # minibatch construct
            ix = torch.randint(0, Xtr.shape[0], (batch_size,))
            Xb, Yb = Xtr[ix], Ytr[ix]  # batch X,Y
            # forward pass
            emb = C[Xb]  # embed the characters into vectors
            embcat = emb.view(emb.shape[0], -1)  # concatenate the vectors
            # Linear layer
            hprebn = embcat @ W1 + b1  # hidden layer pre-activation
            # BatchNorm layer
            bnmean = hprebn.mean(0, keepdim=True)
            bnvar = hprebn.var(0, keepdim=True, unbiased=True)
            bnvar_inv = (bnvar + 1e-5) ** -0.5
            bnraw = (hprebn - bnmean) * bnvar_inv
            hpreact = bngain * bnraw + bnbias
            # Non-linearity
            h = torch.tanh(hpreact)  # hidden layer
            logits = h @ W2 + b2  # output layer
            loss = F.cross_entropy(logits, Yb)  # loss function
            # manual backprop! #swole_doge_meme
            # -----------------
            dlogits = F.softmax(logits, 1)
            dlogits[range(n), Yb] -= 1
            dlogits /= n
            # 2nd layer backprop
            dh = dlogits @ W2.T
            dW2 = h.T @ dlogits
            db2 = dlogits.sum(0)
            # tanh
            dhpreact = (1.0 - h**2) * dh
            # batchnorm backprop
            dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
            dbnbias = dhpreact.sum(0, keepdim=True)
            dhprebn = (
                bngain
                * bnvar_inv
                / n
                * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
            )
            # 1st layer
            dembcat = dhprebn @ W1.T
            dW1 = embcat.T @ dhprebn
            db1 = dhprebn.sum(0)
            # embedding
            demb = dembcat.view(emb.shape)
            dC = torch.zeros_like(C)
            for k in range(Xb.shape[0]):
                for j in range(Xb.shape[1]):
                    ix = Xb[k, j]
                    dC[ix] += demb[k, j]
            grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
            # -----------------
            # update
            lr = 0.1 if i < 100000 else 0.01  # step learning rate decay
            for p, grad in zip(parameters, grads):
                p.data += -lr * grad  # new way of swole doge TODO: enable
            record["losses"].append(loss.item())
    record["is_grad_enabled"] = torch.is_grad_enabled()
    with torch.no_grad():
        emb = C[Xdev]
        hpreact = emb.view(emb.shape[0], -1) @ W1 + b1
        hpreact = bngain * (hpreact - hpreact.mean(0, keepdim=True)) * (hpreact.var(0, keepdim=True) + 1e-5) ** -0.5
        record["dev_loss"] = F.cross_entropy(torch.tanh(hpreact + bnbias) @ W2 + b2, Ydev).item()
    return record


if __name__ == "__main__":
    print(train(build()))
