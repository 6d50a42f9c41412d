"""The shape of pytorch/examples' word language model: RNNModel (Embedding, a GRU with dropout
between layers, a decoder Linear whose weight is tied to the embedding's), batchify with
narrow/view/t/contiguous, init_hidden with new_zeros, repackage_hidden, clip_grad_norm_, the
hand-written update ``p.data.add_(p.grad, alpha=-lr)``, a state_dict round trip, and
flatten_parameters before the evaluation under no_grad."""

from __future__ import annotations

import io
import math

import numpy as np
from shim import F, nn, torch

DROPOUT = 0.2
BPTT = 5


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def corpus(seed=0):
    """data.Corpus's tokenize: a word -> index dictionary, each line's ids with <eos>, torch.cat of the lines."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in rng.integers(0, 10, size=80)]
    word2idx = {}
    idss = []
    for line in (words[i : i + 8] for i in range(0, len(words), 8)):
        ids = []
        for word in [*line, "<eos>"]:
            word2idx.setdefault(word, len(word2idx))
            ids.append(word2idx[word])
        idss.append(torch.tensor(ids).type(torch.int64))
    return torch.cat(idss), len(word2idx)


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def build():
    torch.manual_seed(1111)
    _, ntokens = corpus()
    return RNNModel("GRU", ntokens, 8, 8, 2, DROPOUT, tie_weights=True)


def train(model, steps=3):
    device = torch.device("cpu")
    model = model.to(device)
    ids, ntokens = corpus()
    train_data = batchify(ids, 4, device)
    val_data = batchify(ids[:40], 2, device)
    criterion = nn.NLLLoss()
    lr, clip = 20.0, 0.25
    losses, norms = [], []
    model.train()
    hidden = model.init_hidden(4)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, BPTT)):
        if batch == steps:
            break
        data, targets = get_batch(train_data, i)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    model.load_state_dict(torch.load(buffer))
    model.rnn.flatten_parameters()
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(2)
    with torch.no_grad():
        for i in range(0, val_data.size(0) - 1, BPTT):
            data, targets = get_batch(val_data, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    val_loss = total_loss / (len(val_data) - 1)
    tied = model.decoder.weight is model.encoder.weight
    return {"losses": losses, "norms": norms, "val_loss": val_loss, "val_ppl": math.exp(val_loss), "tied": tied}


if __name__ == "__main__":
    print(train(build(), steps=4))
