"""Dive into Deep Learning's concise recurrent networks (PyTorch edition): ``nn.RNN``, ``nn.GRU`` and
``nn.LSTM`` wrapped by the book's ``RNNModel``, deep (``num_layers=2``) and bidirectional, trained by
``train_ch8`` with ``torch.optim.SGD`` and hand-written gradient clipping on a synthetic text.

Its idioms: ``RNNModel(nn.Module)`` with ``self.num_directions = 2 if self.rnn.bidirectional else 1``,
``self.linear = nn.Linear(self.num_hiddens * self.num_directions, self.vocab_size)``, ``F.one_hot(inputs.T.long(),
self.vocab_size)`` and ``X.to(torch.float32)``, ``self.linear(Y.reshape((-1, Y.shape[-1])))``; ``begin_state``
returning ``torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens),
device=device)`` or, under ``not isinstance(self.rnn, nn.LSTM)``'s else, a tuple of two; the shape check
``state.shape`` of an ``nn.RNN(len(vocab), num_hiddens)`` layer's output; ``net = net.to(device)`` and
``predict_ch8``'s ``int(y.argmax(dim=1).reshape(1))``; ``grad_clipping``'s ``[p for p in net.parameters() if
p.requires_grad]`` and ``param.grad[:] *= theta / norm``; ``train_epoch_ch8``'s ``state.detach_()`` for a GRU's
tensor state and ``for s in state: s.detach_()`` for the LSTM's tuple; the perplexity ``math.exp``."""

from __future__ import annotations

import collections
import math
import random
import re

from shim import F, nn, torch

CELL = "GRU"  # or "RNN", "LSTM"
NUM_LAYERS = 1  # 2: the deep RNN section
BIDIRECTIONAL = False  # the bidirectional section
batch_size, num_steps, num_hiddens, lr = 4, 6, 16, 1.0


def read_time_machine():
    """A synthetic text in place of The Time Machine: lines of a small grammar."""
    rng = random.Random(0)
    subjects = ["the time traveller", "filby", "the psychologist", "the medical man", "weena"]
    verbs = ["said", "looked at", "thought of", "went to", "laughed at"]
    objects = ["the machine", "the fire", "the future", "the lamp", "the morlocks"]
    lines = [f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}." for _ in range(40)]
    return [re.sub("[^A-Za-z]+", " ", line).strip().lower() for line in lines]


class Vocab:
    """Vocabulary for text (characters here), most frequent first."""

    def __init__(self, tokens):
        counter = collections.Counter(token for line in tokens for token in line)
        self._token_freqs = sorted(counter.items(), key=lambda x: x[1], reverse=True)
        self.idx_to_token = ["<unk>"]
        self.token_to_idx = {"<unk>": 0}
        for token, _ in self._token_freqs:
            self.idx_to_token.append(token)
            self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, 0)
        return [self.__getitem__(token) for token in tokens]


def load_data_time_machine(batch_size, num_steps, max_tokens=500):
    tokens = [list(line) for line in read_time_machine()]
    vocab = Vocab(tokens)
    corpus = [vocab[token] for line in tokens for token in line][:max_tokens]

    def train_iter():
        # Sequential partitioning from a random offset, as seq_data_iter_sequential
        offset = random.randint(0, num_steps)
        num_tokens = ((len(corpus) - offset - 1) // batch_size) * batch_size
        Xs = torch.tensor(corpus[offset : offset + num_tokens]).reshape(batch_size, -1)
        Ys = torch.tensor(corpus[offset + 1 : offset + 1 + num_tokens]).reshape(batch_size, -1)
        for i in range(0, num_steps * (Xs.shape[1] // num_steps), num_steps):
            yield Xs[:, i : i + num_steps], Ys[:, i : i + num_steps]

    return train_iter, vocab


class RNNModel(nn.Module):
    """The RNN model."""

    def __init__(self, rnn_layer, vocab_size, **kwargs):
        super().__init__(**kwargs)
        self.rnn = rnn_layer
        self.vocab_size = vocab_size
        self.num_hiddens = self.rnn.hidden_size
        # If the RNN is bidirectional (to be introduced later), `num_directions` should be 2, else it should be 1
        if not self.rnn.bidirectional:
            self.num_directions = 1
            self.linear = nn.Linear(self.num_hiddens, self.vocab_size)
        else:
            self.num_directions = 2
            self.linear = nn.Linear(self.num_hiddens * 2, self.vocab_size)

    def forward(self, inputs, state):
        X = F.one_hot(inputs.T.long(), self.vocab_size)
        X = X.to(torch.float32)
        Y, state = self.rnn(X, state)
        # The fully connected layer will first change the shape of `Y` to (`num_steps` * `batch_size`,
        # `num_hiddens`). Its output shape is (`num_steps` * `batch_size`, `vocab_size`).
        output = self.linear(Y.reshape((-1, Y.shape[-1])))
        return output, state

    def begin_state(self, device, batch_size=1):
        if not isinstance(self.rnn, nn.LSTM):
            # `nn.GRU` takes a tensor as hidden state
            return torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens), device=device)
        else:
            # `nn.LSTM` takes a tuple of hidden states
            return (
                torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens), device=device),
                torch.zeros((self.num_directions * self.rnn.num_layers, batch_size, self.num_hiddens), device=device),
            )


def predict_ch8(prefix, num_preds, net, vocab, device):
    """Generate new characters following the `prefix`."""
    state = net.begin_state(batch_size=1, device=device)
    outputs = [vocab[prefix[0]]]

    def get_input():
        return torch.tensor([outputs[-1]], device=device).reshape((1, 1))

    for y in prefix[1:]:  # Warm-up period
        _, state = net(get_input(), state)
        outputs.append(vocab[y])
    for _ in range(num_preds):  # Predict `num_preds` steps
        y, state = net(get_input(), state)
        outputs.append(int(y.argmax(dim=1).reshape(1)))
    return "".join([vocab.idx_to_token[i] for i in outputs])


def grad_clipping(net, theta):
    """Clip the gradient."""
    if isinstance(net, nn.Module):
        params = [p for p in net.parameters() if p.requires_grad]
    else:
        params = net.params
    norm = torch.sqrt(sum(torch.sum(p.grad**2) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm


def train_epoch_ch8(net, train_iter, loss, updater, device, use_random_iter):
    """Train a net within one epoch (defined in Chapter 8)."""
    state = None
    total, count = 0.0, 0
    for X, Y in train_iter:
        if state is None or use_random_iter:
            state = net.begin_state(batch_size=X.shape[0], device=device)
        else:
            if isinstance(net, nn.Module) and not isinstance(state, tuple):
                # `state` is a tensor for `nn.GRU`
                state.detach_()
            else:
                # `state` is a tuple of tensors for `nn.LSTM` and for our custom scratch implementation
                for s in state:
                    s.detach_()
        y = Y.T.reshape(-1)
        X, y = X.to(device), y.to(device)
        y_hat, state = net(X, state)
        l = loss(y_hat, y.long()).mean()  # noqa: E741  (the book's name)
        updater.zero_grad()
        l.backward()
        grad_clipping(net, 1)
        updater.step()
        total += l * y.numel()
        count += y.numel()
    return math.exp(total / count)


def build():
    torch.manual_seed(0)
    _, vocab = load_data_time_machine(batch_size, num_steps)
    num_inputs = len(vocab)
    rnn_layer = getattr(nn, CELL)(num_inputs, num_hiddens, NUM_LAYERS, bidirectional=BIDIRECTIONAL)
    return RNNModel(rnn_layer, vocab_size=len(vocab))


def train(net, steps=3):
    random.seed(0)
    torch.manual_seed(1)
    device = torch.device("cpu")
    train_iter, vocab = load_data_time_machine(batch_size, num_steps)
    record = {"losses": []}
    # The chapter's first look at the layer: its output and new state shapes
    rnn_layer = nn.RNN(len(vocab), num_hiddens)
    state = torch.zeros((1, batch_size, num_hiddens))
    X = torch.rand(size=(num_steps, batch_size, len(vocab)))
    Y, state_new = rnn_layer(X, state)
    record["layer_shapes"] = [list(state.shape), list(Y.shape), list(state_new.shape)]
    net = net.to(device)
    record["untrained"] = predict_ch8("the time traveller", 8, net, vocab, device)
    loss = nn.CrossEntropyLoss()
    updater = torch.optim.SGD(net.parameters(), lr)
    for _ in range(steps):
        record["losses"].append(train_epoch_ch8(net, train_iter(), loss, updater, device, False))
    record["predicted"] = predict_ch8("the time traveller", 8, net, vocab, device)
    return record


if __name__ == "__main__":
    print(train(build()))
