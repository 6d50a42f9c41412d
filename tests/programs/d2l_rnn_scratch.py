"""Dive into Deep Learning's recurrent networks from scratch (PyTorch edition): text preprocessing, the
random and sequential minibatch iterators, and a character-level RNN, GRU or LSTM language model of hand-made
parameters, trained on a synthetic text (sentences of a small grammar; no download).

Its idioms: ``re.sub('[^A-Za-z]+', ' ', line).strip().lower()`` and ``list(line)`` tokenization; ``Vocab``
with ``collections.Counter``, ``sorted(counter.items(), key=lambda x: x[1], reverse=True)``, ``['<unk>'] +
reserved_tokens``, ``token_to_idx`` and a recursive ``__getitem__``; ``seq_data_iter_random``'s
``random.randint(0, num_steps - 1)``, ``random.shuffle(initial_indices)`` and ``torch.tensor(X),
torch.tensor(Y)``; ``seq_data_iter_sequential``'s ``torch.tensor(corpus[offset: offset + num_tokens])`` and
``Xs.reshape(batch_size, -1)``; ``get_params``' ``torch.randn(size=shape, device=device) * 0.01`` and
``param.requires_grad_(True)``; ``init_rnn_state`` returning ``(torch.zeros((batch_size, num_hiddens),
device=device),)``; the step ``torch.tanh(torch.mm(X, W_xh) + torch.mm(H, W_hh) + b_h)``, the GRU's
``Z * H + (1 - Z) * H_tilda`` and the LSTM's gates by ``torch.sigmoid``; ``F.one_hot(X.T, self.vocab_size).type(
torch.float32)``; ``torch.cat(outputs, dim=0)``; ``predict_ch8``'s ``outputs.append(int(y.argmax(dim=1).reshape(1)))``
and ``''.join([vocab.idx_to_token[i] for i in outputs])``; ``grad_clipping`` by ``torch.sqrt(sum(torch.sum((p.grad **
2)) for p in params))`` and ``param.grad[:] *= theta / norm``; ``train_epoch_ch8``'s state kept or begun anew,
``state.detach_()`` or ``for s in state: s.detach_()``, ``y = Y.T.reshape(-1)``, ``l = loss(y_hat, y.long()).mean()``
and the perplexity ``math.exp(metric[0] / metric[1])``."""

from __future__ import annotations

import collections
import math
import random
import re

from shim import F, nn, torch

CELL = "rnn"  # or "gru", "lstm"
USE_RANDOM_ITER = False  # the random-partition iterator (a new state for each minibatch)
batch_size, num_steps, num_hiddens, lr = 4, 6, 32, 1.0


def read_time_machine():
    """A synthetic text in place of The Time Machine: lines of a small grammar, punctuation included."""
    rng = random.Random(0)
    subjects = ["the time traveller", "filby", "the psychologist", "the medical man", "weena"]
    verbs = ["said", "looked at", "thought of", "went to", "laughed at"]
    objects = ["the machine", "the fire", "the future", "the lamp", "the morlocks"]
    lines = []
    for _ in range(40):
        line = f"{rng.choice(subjects).title()} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice('.,;!')}"
        lines.append(line if rng.random() > 0.2 else "")
    return [re.sub("[^A-Za-z]+", " ", line).strip().lower() for line in lines]


def tokenize(lines, token="word"):
    """Split text lines into word or character tokens."""
    if token == "word":
        return [line.split() for line in lines]
    elif token == "char":
        return [list(line) for line in lines]
    else:
        raise ValueError("ERROR: unknown token type: " + token)


def count_corpus(tokens):
    """Count token frequencies."""
    # Here `tokens` is a 1D list or 2D list
    if len(tokens) == 0 or isinstance(tokens[0], list):
        # Flatten a list of token lists into a list of tokens
        tokens = [token for line in tokens for token in line]
    return collections.Counter(tokens)


class Vocab:
    """Vocabulary for text."""

    def __init__(self, tokens=None, min_freq=0, reserved_tokens=None):
        if tokens is None:
            tokens = []
        if reserved_tokens is None:
            reserved_tokens = []
        # Sort according to frequencies
        counter = count_corpus(tokens)
        self._token_freqs = sorted(counter.items(), key=lambda x: x[1], reverse=True)
        # The index for the unknown token is 0
        self.idx_to_token = ["<unk>"] + reserved_tokens
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}
        for token, freq in self._token_freqs:
            if freq < min_freq:
                break
            if token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        if not isinstance(indices, list | tuple):
            return self.idx_to_token[indices]
        return [self.idx_to_token[index] for index in indices]

    @property
    def unk(self):  # Index for the unknown token
        return 0

    @property
    def token_freqs(self):  # Token frequencies
        return self._token_freqs


def load_corpus_time_machine(max_tokens=-1):
    """Return token indices and the vocabulary of the text."""
    lines = read_time_machine()
    tokens = tokenize(lines, "char")
    vocab = Vocab(tokens)
    # Since each text line is not necessarily a sentence or a paragraph, flatten all the text lines into a single list
    corpus = [vocab[token] for line in tokens for token in line]
    if max_tokens > 0:
        corpus = corpus[:max_tokens]
    return corpus, vocab


def seq_data_iter_random(corpus, batch_size, num_steps):
    """Generate a minibatch of subsequences using random sampling."""
    # Start with a random offset (inclusive of `num_steps - 1`) to partition a sequence
    corpus = corpus[random.randint(0, num_steps - 1) :]
    # Subtract 1 since we need to account for labels
    num_subseqs = (len(corpus) - 1) // num_steps
    # The starting indices for subsequences of length `num_steps`
    initial_indices = list(range(0, num_subseqs * num_steps, num_steps))
    # In random sampling, the subsequences from two adjacent random minibatches during iteration are not
    # necessarily adjacent on the original sequence
    random.shuffle(initial_indices)

    def data(pos):
        # Return a sequence of length `num_steps` starting from `pos`
        return corpus[pos : pos + num_steps]

    num_batches = num_subseqs // batch_size
    for i in range(0, batch_size * num_batches, batch_size):
        # Here, `initial_indices` contains randomized starting indices for subsequences
        initial_indices_per_batch = initial_indices[i : i + batch_size]
        X = [data(j) for j in initial_indices_per_batch]
        Y = [data(j + 1) for j in initial_indices_per_batch]
        yield torch.tensor(X), torch.tensor(Y)


def seq_data_iter_sequential(corpus, batch_size, num_steps):
    """Generate a minibatch of subsequences using sequential partitioning."""
    # Start with a random offset to partition a sequence
    offset = random.randint(0, num_steps)
    num_tokens = ((len(corpus) - offset - 1) // batch_size) * batch_size
    Xs = torch.tensor(corpus[offset : offset + num_tokens])
    Ys = torch.tensor(corpus[offset + 1 : offset + 1 + num_tokens])
    Xs, Ys = Xs.reshape(batch_size, -1), Ys.reshape(batch_size, -1)
    num_batches = Xs.shape[1] // num_steps
    for i in range(0, num_steps * num_batches, num_steps):
        X = Xs[:, i : i + num_steps]
        Y = Ys[:, i : i + num_steps]
        yield X, Y


class SeqDataLoader:
    """An iterator to load sequence data."""

    def __init__(self, batch_size, num_steps, use_random_iter, max_tokens):
        if use_random_iter:
            self.data_iter_fn = seq_data_iter_random
        else:
            self.data_iter_fn = seq_data_iter_sequential
        self.corpus, self.vocab = load_corpus_time_machine(max_tokens)
        self.batch_size, self.num_steps = batch_size, num_steps

    def __iter__(self):
        return self.data_iter_fn(self.corpus, self.batch_size, self.num_steps)


def normal(shape, device):
    return torch.randn(size=shape, device=device) * 0.01


def three(num_inputs, num_hiddens, device):
    return (normal((num_inputs, num_hiddens), device), normal((num_hiddens, num_hiddens), device),
            torch.zeros(num_hiddens, device=device))  # fmt: skip


def get_params(vocab_size, num_hiddens, device):
    num_inputs = num_outputs = vocab_size
    if CELL == "rnn":
        # Hidden layer parameters
        W_xh = normal((num_inputs, num_hiddens), device)
        W_hh = normal((num_hiddens, num_hiddens), device)
        b_h = torch.zeros(num_hiddens, device=device)
        gates = [W_xh, W_hh, b_h]
    elif CELL == "gru":
        W_xz, W_hz, b_z = three(num_inputs, num_hiddens, device)  # Update gate parameters
        W_xr, W_hr, b_r = three(num_inputs, num_hiddens, device)  # Reset gate parameters
        W_xh, W_hh, b_h = three(num_inputs, num_hiddens, device)  # Candidate hidden state parameters
        gates = [W_xz, W_hz, b_z, W_xr, W_hr, b_r, W_xh, W_hh, b_h]
    else:
        W_xi, W_hi, b_i = three(num_inputs, num_hiddens, device)  # Input gate parameters
        W_xf, W_hf, b_f = three(num_inputs, num_hiddens, device)  # Forget gate parameters
        W_xo, W_ho, b_o = three(num_inputs, num_hiddens, device)  # Output gate parameters
        W_xc, W_hc, b_c = three(num_inputs, num_hiddens, device)  # Candidate memory cell parameters
        gates = [W_xi, W_hi, b_i, W_xf, W_hf, b_f, W_xo, W_ho, b_o, W_xc, W_hc, b_c]
    # Output layer parameters
    W_hq = normal((num_hiddens, num_outputs), device)
    b_q = torch.zeros(num_outputs, device=device)
    # Attach gradients
    params = gates + [W_hq, b_q]
    for param in params:
        param.requires_grad_(True)
    return params


def init_rnn_state(batch_size, num_hiddens, device):
    return (torch.zeros((batch_size, num_hiddens), device=device),)


def init_lstm_state(batch_size, num_hiddens, device):
    return (
        torch.zeros((batch_size, num_hiddens), device=device),
        torch.zeros((batch_size, num_hiddens), device=device),
    )


def rnn(inputs, state, params):
    # Here `inputs` shape: (`num_steps`, `batch_size`, `vocab_size`)
    W_xh, W_hh, b_h, W_hq, b_q = params
    (H,) = state
    outputs = []
    # Shape of `X`: (`batch_size`, `vocab_size`)
    for X in inputs:
        H = torch.tanh(torch.mm(X, W_xh) + torch.mm(H, W_hh) + b_h)
        Y = torch.mm(H, W_hq) + b_q
        outputs.append(Y)
    return torch.cat(outputs, dim=0), (H,)


def gru(inputs, state, params):
    W_xz, W_hz, b_z, W_xr, W_hr, b_r, W_xh, W_hh, b_h, W_hq, b_q = params
    (H,) = state
    outputs = []
    for X in inputs:
        Z = torch.sigmoid((X @ W_xz) + (H @ W_hz) + b_z)
        R = torch.sigmoid((X @ W_xr) + (H @ W_hr) + b_r)
        H_tilda = torch.tanh((X @ W_xh) + ((R * H) @ W_hh) + b_h)
        H = Z * H + (1 - Z) * H_tilda
        Y = H @ W_hq + b_q
        outputs.append(Y)
    return torch.cat(outputs, dim=0), (H,)


def lstm(inputs, state, params):
    [W_xi, W_hi, b_i, W_xf, W_hf, b_f, W_xo, W_ho, b_o, W_xc, W_hc, b_c, W_hq, b_q] = params
    (H, C) = state
    outputs = []
    for X in inputs:
        I = torch.sigmoid((X @ W_xi) + (H @ W_hi) + b_i)  # noqa: E741  (the book's name)
        F_ = torch.sigmoid((X @ W_xf) + (H @ W_hf) + b_f)
        O = torch.sigmoid((X @ W_xo) + (H @ W_ho) + b_o)  # noqa: E741
        C_tilda = torch.tanh((X @ W_xc) + (H @ W_hc) + b_c)
        C = F_ * C + I * C_tilda
        H = O * torch.tanh(C)
        Y = (H @ W_hq) + b_q
        outputs.append(Y)
    return torch.cat(outputs, dim=0), (H, C)


class RNNModelScratch:
    """A RNN Model implemented from scratch."""

    def __init__(self, vocab_size, num_hiddens, device, get_params, init_state, forward_fn):
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.params = get_params(vocab_size, num_hiddens, device)
        self.init_state, self.forward_fn = init_state, forward_fn

    def __call__(self, X, state):
        X = F.one_hot(X.T, self.vocab_size).type(torch.float32)
        return self.forward_fn(X, state, self.params)

    def begin_state(self, batch_size, device):
        return self.init_state(batch_size, self.num_hiddens, device)

    # The comparison's handle on the parameters: PyTorch's and vkml's model start from the same values
    def state_dict(self):
        return {str(i): p for i, p in enumerate(self.params)}

    def load_state_dict(self, state):
        with torch.no_grad():
            for i, p in enumerate(self.params):
                p.copy_(state[str(i)])


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


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def train_epoch_ch8(net, train_iter, loss, updater, device, use_random_iter):
    """Train a net within one epoch (defined in Chapter 8)."""
    state = None
    total, count = 0.0, 0  # Sum of training loss, no. of tokens
    for X, Y in train_iter:
        if state is None or use_random_iter:
            # Initialize `state` when either it is the first iteration or using random sampling
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
        if isinstance(updater, torch.optim.Optimizer):
            updater.zero_grad()
            l.backward()
            grad_clipping(net, 1)
            updater.step()
        else:
            l.backward()
            grad_clipping(net, 1)
            # batch_size=1 since the `mean` function has been invoked
            updater(batch_size=1)
        total += l * y.numel()
        count += y.numel()
    return math.exp(total / count)


def build():
    torch.manual_seed(0)
    _, vocab = load_corpus_time_machine()
    forward = {"rnn": (init_rnn_state, rnn), "gru": (init_rnn_state, gru), "lstm": (init_lstm_state, lstm)}[CELL]
    return RNNModelScratch(len(vocab), num_hiddens, torch.device("cpu"), get_params, *forward)


def train(net, steps=3):
    random.seed(0)
    torch.manual_seed(1)
    device = torch.device("cpu")
    train_iter = SeqDataLoader(batch_size, num_steps, USE_RANDOM_ITER, max_tokens=600)
    vocab = train_iter.vocab
    tokens = tokenize(read_time_machine())
    record = {
        "losses": [],
        "vocab": list(vocab.token_to_idx.items())[:10],
        "word_freqs": Vocab(tokens).token_freqs[:5],
        "indices": vocab[list("the time")],
    }
    my_seq = list(range(20))
    record["random_batches"] = [[X.tolist(), Y.tolist()] for X, Y in seq_data_iter_random(my_seq, 2, 5)]
    record["sequential_batches"] = [[X.tolist(), Y.tolist()] for X, Y in seq_data_iter_sequential(my_seq, 2, 5)]
    X = torch.arange(10).reshape((2, 5))
    state = net.begin_state(X.shape[0], device)
    Y, new_state = net(X.to(device), state)
    record["shapes"] = [list(Y.shape), len(new_state), list(new_state[0].shape)]
    record["one_hot"] = F.one_hot(torch.tensor([0, 2]), len(vocab)).tolist()[1][:5]
    record["untrained"] = predict_ch8("the time traveller ", 10, net, vocab, device)
    loss = nn.CrossEntropyLoss()

    def updater(batch_size):
        return sgd(net.params, lr, batch_size)

    for _ in range(steps):
        record["losses"].append(train_epoch_ch8(net, train_iter, loss, updater, device, USE_RANDOM_ITER))
    record["predicted"] = predict_ch8("the time traveller ", 10, net, vocab, device)
    return record


if __name__ == "__main__":
    print(train(build()))
