"""pytorch/examples' word_language_model as of PyTorch 0.3, on a synthetic corpus, an LSTM or GRU of 2 layers.

Its idioms: ``batchify`` by ``data.narrow(0, 0, nbatch * bsz)`` and ``data.view(bsz, -1).t().contiguous()``;
``get_batch(source, i, evaluation=False)`` returning ``Variable(source[i:i+seq_len], volatile=evaluation)``
and ``Variable(source[i+1:i+1+seq_len].view(-1))``; ``init_hidden`` from ``weight = next(self.parameters()).data``
and ``Variable(weight.new(nlayers, bsz, nhid).zero_())``; ``repackage_hidden`` by ``Variable(h.data)``
under ``isinstance(h, Variable)`` (true of every tensor); the init ``self.encoder.weight.data.uniform_(-initrange,
initrange)`` and ``self.decoder.bias.data.fill_(0)``; ``torch.nn.utils.clip_grad_norm(model.parameters(),
clip)``; SGD by hand with the deprecated overload ``p.data.add_(-lr, p.grad.data)``; ``total_loss +=
loss.data`` (a 0-d tensor) then ``cur_loss = total_loss.item() / log_interval``; evaluation's ``total_loss
+= len(data) * criterion(output_flat, targets).data``; ``math.exp(cur_loss)`` for perplexity; and the log
line ``'| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | loss {:5.2f} | ppl {:8.2f}'``."""

# ruff: noqa: UP008, UP032  (the old repositories' spelling is the point: super(RNNModel, self) and .format)

from __future__ import annotations

import math
import warnings

import numpy as np
from shim import nn, torch

Variable = torch.autograd.Variable  # from torch.autograd import Variable

RNN_TYPE = "LSTM"  # or "GRU"
ntokens, ninp, nhid, nlayers = 10, 6, 8, 2
bptt, batch_size, eval_batch_size, clip, LR = 4, 3, 2, 0.25, 2.0
DROPOUT = 0.2


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super(RNNModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        self.encoder.weight.data.uniform_(-initrange, initrange)
        self.decoder.bias.data.fill_(0)
        self.decoder.weight.data.uniform_(-initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output.view(output.size(0) * output.size(1), output.size(2)))
        return decoded.view(output.size(0), output.size(1), decoded.size(1)), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        if self.rnn_type == "LSTM":
            return (
                Variable(weight.new(self.nlayers, bsz, self.nhid).zero_()),
                Variable(weight.new(self.nlayers, bsz, self.nhid).zero_()),
            )
        else:
            return Variable(weight.new(self.nlayers, bsz, self.nhid).zero_())


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    """Wraps hidden states in new Variables, to detach them from their history."""
    if isinstance(h, Variable):  # 0.3's `type(h) == Variable` is False for every tensor now
        return Variable(h.data)
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, evaluation=False):
    seq_len = min(bptt, len(source) - 1 - i)
    data = Variable(source[i : i + seq_len], volatile=evaluation)
    target = Variable(source[i + 1 : i + 1 + seq_len].view(-1))
    return data, target


def build():
    torch.manual_seed(1111)
    return RNNModel(RNN_TYPE, ntokens, ninp, nhid, nlayers, DROPOUT)


def corpus(n, seed):
    rng = np.random.RandomState(seed)
    return torch.LongTensor(rng.randint(0, ntokens, size=n).tolist())


def evaluate(model, criterion, data_source):
    model.eval()
    total_loss = 0
    hidden = model.init_hidden(eval_batch_size)
    for i in range(0, data_source.size(0) - 1, bptt):
        data, targets = get_batch(data_source, i, evaluation=True)
        output, hidden = model(data, hidden)
        output_flat = output.view(-1, ntokens)
        total_loss += len(data) * criterion(output_flat, targets).data
        hidden = repackage_hidden(hidden)
    return total_loss.item() / len(data_source)


def train(model, steps=3):
    train_data = batchify(corpus(batch_size * (bptt * steps + 1), 0), batch_size)
    val_data = batchify(corpus(eval_batch_size * 9, 1), eval_batch_size)
    criterion = nn.CrossEntropyLoss()
    record = {"losses": [], "lines": []}
    lr = LR
    log_interval = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # volatile, clip_grad_norm and add_(-lr, grad): deprecated, checked elsewhere
        model.train()
        total_loss = 0
        hidden = model.init_hidden(batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            # Starting each batch, we detach the hidden state from how it was previously produced.
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output.view(-1, ntokens), targets)
            loss.backward()
            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            torch.nn.utils.clip_grad_norm(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(-lr, p.grad.data)
            total_loss += loss.data
            record["losses"].append(loss.item())
            if batch % log_interval == 0 and batch > 0:
                cur_loss = total_loss.item() / log_interval
                record["lines"].append(
                    "| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | loss {:5.2f} | ppl {:8.2f}".format(
                        1, batch, len(train_data) // bptt, lr, cur_loss, math.exp(cur_loss)
                    )
                )
                total_loss = 0
        val_loss = evaluate(model, criterion, val_data)
    record["val_loss"] = val_loss
    record["lines"].append(
        "| end of epoch {:3d} | valid loss {:5.2f} | valid ppl {:8.2f}".format(1, val_loss, math.exp(val_loss))
    )
    return record


if __name__ == "__main__":
    print(train(build()))
