"""A char-level GRU language model trained with truncated backpropagation through time.

Its idioms: a vocabulary from ``sorted(set(text))`` and ``stoi``/``itos`` dicts; the corpus as one
``torch.tensor(..., dtype=torch.long)`` cut into ``batch_size`` streams with ``narrow``, ``view`` and
``t().contiguous()``; ``nn.Embedding`` into a 2-layer ``nn.GRU(batch_first=False, dropout=...)`` and
a Linear decoder; the hidden state carried between chunks and cut from the graph with
``hidden.detach()`` (``repackage_hidden`` over a tuple for the LSTM variant); ``criterion(output.view(-1,
ntokens), targets.reshape(-1))``; ``nn.utils.clip_grad_norm_`` with the norm returned; plain SGD on
``p.data.add_(p.grad, alpha=-lr)`` and an Adam variant; perplexity ``math.exp`` of the mean loss;
and greedy sampling of a few characters with ``torch.multinomial`` of a one-hot-sharp distribution."""

from __future__ import annotations

import math

from shim import F, nn, optim, torch

DROPOUT = 0.2
CELL = "GRU"
TEXT = "the quick brown fox jumps over the lazy dog. " * 3


class CharRNN(nn.Module):
    def __init__(self, ntoken, ninp=8, nhid=12, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, CELL)(ninp, nhid, nlayers, dropout=DROPOUT)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(output), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if CELL == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


chars = sorted(set(TEXT))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for ch, i in stoi.items()}


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def build():
    torch.manual_seed(42)
    return CharRNN(len(chars))


def train(model, steps=3, bptt=5):
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    train_data = batchify(data, 4)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.decoder.parameters(), lr=1e-2)
    ntokens = len(chars)
    lr = 0.5
    model.train()
    hidden = model.init_hidden(4)
    record = {"losses": [], "norms": []}
    for step, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        if step == steps:
            break
        seq_len = min(bptt, len(train_data) - 1 - i)
        inputs, targets = train_data[i : i + seq_len], train_data[i + 1 : i + 1 + seq_len].reshape(-1)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(inputs, hidden)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for name, p in model.named_parameters():
            if not name.startswith("decoder"):
                p.data.add_(p.grad, alpha=-lr)
        optimizer.step()
        record["losses"].append(loss.item())
        record["norms"].append(norm.item())
    record["ppl"] = math.exp(sum(record["losses"]) / len(record["losses"]))
    model.eval()
    with torch.no_grad():
        hidden = model.init_hidden(1)
        idx = torch.tensor([[stoi["t"]]])
        out = []
        for _ in range(4):
            logits, hidden = model(idx, hidden)
            probs = F.softmax(logits[-1, 0] / 1e-3, dim=-1)
            idx = torch.multinomial(probs, num_samples=1).view(1, 1)
            out.append(itos[idx.item()])
    record["sample"] = "".join(out)
    return record


if __name__ == "__main__":
    print(train(build()))
