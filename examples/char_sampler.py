"""A character-level name model as the makemore tutorials build one: a bigram count table and a
small MLP over the three previous characters, trained with SGD, then sampled with
``torch.multinomial``.

It leans on indexing: counts gathered with ``index_put_(..., accumulate=True)`` (``N[a, b] += 1``
would drop repeated pairs, in PyTorch and here), ``P[xs, ys]`` to read the probabilities of the
observed pairs, ``C[X]`` for the embedding (its gradient adds repeated rows in index order), and
``masked_select``/``argwhere`` for statistics. Apart from the import line, this is PyTorch code;
``--torch`` runs it on PyTorch instead (the samples then differ: another generator).

    python examples/char_sampler.py --steps 200 --device vulkan:0
"""

from __future__ import annotations

import argparse

import numpy as np

WORDS = (
    "emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily elizabeth mila ella "
    "avery sofia camila aria scarlett victoria madison luna grace chloe penelope layla riley zoey nora lily "
    "eleanor hannah lillian addison aubrey ellie stella natalie zoe leah hazel violet aurora savannah audrey "
    "brooklyn bella claire skylar lucy paisley everly anna caroline nova genesis emilia kennedy samantha maya"
).split()
BLOCK = 3  # characters of context for the MLP


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch", action="store_true", help="run on PyTorch instead of vkml")
    args = parser.parse_args(argv)
    if args.torch:
        import torch
        import torch.nn.functional as F
    else:
        import vkml as torch  # the one line that differs from the PyTorch program
        import vkml.nn.functional as F

    device = torch.device(args.device)
    chars = sorted(set("".join(WORDS)))
    stoi = {c: i + 1 for i, c in enumerate(chars)}
    stoi["."] = 0
    itos = {i: c for c, i in stoi.items()}
    vocab = len(stoi)

    # ---- bigram counts
    pairs = [(stoi[a], stoi[b]) for w in WORDS for a, b in zip("." + w, w + ".")]
    xs = torch.tensor([a for a, _ in pairs], device=device)
    ys = torch.tensor([b for _, b in pairs], device=device)
    N = torch.zeros((vocab, vocab), dtype=torch.int64, device=device)
    N.index_put_((xs, ys), torch.ones_like(xs), accumulate=True)
    P = (N + 1).float()
    P /= P.sum(1, keepdim=True)
    nll = -P[xs, ys].log().mean()
    print(f"bigram pairs {len(pairs)}, distinct {torch.argwhere(N).shape[0]}, nll {nll.item():.6f}")
    print(f"most frequent count {N.max().item()}, counts above 5: {N.masked_select(N > 5).sum().item()}")

    # ---- MLP on three characters of context
    X, Y = [], []
    for w in WORDS:
        context = [0] * BLOCK
        for ch in w + ".":
            X.append(context)
            Y.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    X = torch.tensor(X, device=device)
    Y = torch.tensor(Y, device=device)
    rng = np.random.default_rng(2147483647)
    emb, hidden = 6, 48

    def param(*shape, scale=1.0):
        values = (rng.standard_normal(shape) * scale).astype(np.float32)
        return torch.tensor(values, device=device).requires_grad_()

    C = param(vocab, emb)
    W1 = param(BLOCK * emb, hidden, scale=(BLOCK * emb) ** -0.5)
    b1 = param(hidden, scale=0.01)
    W2 = param(hidden, vocab, scale=0.1)
    b2 = param(vocab, scale=0.0)
    params = [C, W1, b1, W2, b2]

    def logits_of(context):
        h = torch.tanh(C[context].view(-1, BLOCK * emb) @ W1 + b1)
        return h @ W2 + b2

    first = None
    for step in range(args.steps):
        loss = F.cross_entropy(logits_of(X), Y)
        for p in params:
            p.grad = None
        loss.backward()
        lr = 0.5 if step < args.steps * 3 // 4 else 0.05
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad
        value = loss.item()
        first = value if first is None else first
    print(f"loss: {first:.6f} -> {value:.6f}")

    # ---- sampling
    g = torch.Generator().manual_seed(2147483647)
    names = []
    for _ in range(args.samples):
        out, context = [], [0] * BLOCK
        while len(out) < 12:
            probs = F.softmax(logits_of(torch.tensor([context], device=device)), dim=1)
            ix = torch.multinomial(probs, num_samples=1, replacement=True, generator=g).item()
            context = context[1:] + [ix]
            if ix == 0:
                break
            out.append(itos[ix])
        names.append("".join(out))
    print("samples:", " ".join(names))


if __name__ == "__main__":
    main()
