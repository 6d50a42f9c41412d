"""Dive into Deep Learning's attention mechanisms (PyTorch edition): Nadaraya-Watson attention pooling with a
learned kernel width, the masked softmax, additive and scaled dot-product attention, and the Bahdanau
attention decoder trained as a sequence-to-sequence model on a synthetic parallel corpus (no download).

Its idioms: ``x_test.repeat_interleave(n_train).reshape((-1, n_train))`` and ``nn.functional.softmax(-((X_repeat
- x_train)**2) / 2, dim=1)``; ``NWKernelRegression``'s ``nn.Parameter(torch.rand((1,), requires_grad=True))`` and
``torch.bmm(self.attention_weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)``; the leave-one-out keys
``X_tile[(1 - torch.eye(n_train)).type(torch.bool)].reshape((n_train, -1))``; ``masked_softmax``'s
``torch.repeat_interleave(valid_lens, shape[1])`` or ``valid_lens.reshape(-1)`` and ``sequence_mask`` of
``X.reshape(-1, shape[-1])`` writing ``X[~mask] = value`` (-1e6) through the view; ``AdditiveAttention``'s
``queries.unsqueeze(2) + keys.unsqueeze(1)``, ``torch.tanh`` and ``self.w_v(features).squeeze(-1)``;
``DotProductAttention``'s ``torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)``; the Bahdanau decoder's
``init_state`` returning ``(outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)``, ``torch.unsqueeze(
hidden_state[-1], dim=1)`` as the query, ``torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)``, the
``self._attention_weights.append(...)`` list, and ``torch.cat(outputs, dim=0)`` back to batch-first."""

from __future__ import annotations

import collections
import math
import random

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

ATTENTION = "additive"  # the Bahdanau decoder's scoring: "additive" or "dot"
SHUFFLE = True
DROPOUT = 0.1
embed_size, num_hiddens, num_layers, batch_size, num_steps, lr = 8, 16, 2, 8, 6, 0.005


# ---- attention pooling: Nadaraya-Watson kernel regression ----


def f(x):
    return 2 * torch.sin(x) + x**0.8


class NWKernelRegression(nn.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = nn.Parameter(torch.rand((1,), requires_grad=True))

    def forward(self, queries, keys, values):
        # Shape of the output `queries` and `attention_weights`: (no. of queries, no. of key-value pairs)
        queries = queries.repeat_interleave(keys.shape[1]).reshape((-1, keys.shape[1]))
        self.attention_weights = nn.functional.softmax(-(((queries - keys) * self.w) ** 2) / 2, dim=1)
        # Shape of `values`: (no. of queries, no. of key-value pairs)
        return torch.bmm(self.attention_weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)


def nadaraya_watson(record, steps):
    n_train = 20
    x_train, _ = torch.sort(torch.rand(n_train) * 5)  # Training inputs
    y_train = f(x_train) + torch.normal(0.0, 0.5, (n_train,))  # Training outputs
    x_test = torch.arange(0, 5, 0.25)  # Testing examples
    y_truth = f(x_test)  # Ground-truth outputs for the testing examples
    n_test = len(x_test)
    # Average pooling, then nonparametric attention pooling
    y_hat = torch.repeat_interleave(y_train.mean(), n_test)
    X_repeat = x_test.repeat_interleave(n_train).reshape((-1, n_train))
    attention_weights = nn.functional.softmax(-((X_repeat - x_train) ** 2) / 2, dim=1)
    y_hat_np = torch.matmul(attention_weights, y_train)
    record["pooling"] = [float(((y_hat - y_truth) ** 2).mean()), y_hat_np[::4].tolist()]
    # Parametric: leave-one-out keys and values
    X_tile = x_train.repeat((n_train, 1))
    Y_tile = y_train.repeat((n_train, 1))
    keys = X_tile[(1 - torch.eye(n_train)).type(torch.bool)].reshape((n_train, -1))
    values = Y_tile[(1 - torch.eye(n_train)).type(torch.bool)].reshape((n_train, -1))
    net = NWKernelRegression()
    loss = nn.MSELoss(reduction="none")
    trainer = torch.optim.SGD(net.parameters(), lr=0.5)
    losses = []
    for _ in range(steps):
        trainer.zero_grad()
        l = loss(net(x_train, keys, values), y_train)  # noqa: E741  (the book's name)
        l.sum().backward()
        trainer.step()
        losses.append(float(l.sum()))
    keys = x_train.repeat((n_test, 1))
    values = y_train.repeat((n_test, 1))
    y_hat = net(x_test, keys, values).unsqueeze(1).detach()
    record["nw"] = [losses, net.w.item(), y_hat[::5, 0].tolist(), net.attention_weights.sum(1)[:3].tolist()]


# ---- attention scoring functions ----


def sequence_mask(X, valid_len, value=0):
    """Mask irrelevant entries in sequences."""
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""
    # `X`: 3D tensor, `valid_lens`: 1D or 2D tensor
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        # On the last axis, replace masked elements with a very large negative value, whose exponentiation
        # outputs 0
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


class AdditiveAttention(nn.Module):
    """Additive attention."""

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        # After dimension expansion, shape of `queries`: (`batch_size`, no. of queries, 1, `num_hiddens`) and
        # shape of `keys`: (`batch_size`, 1, no. of key-value pairs, `num_hiddens`). Sum them up with
        # broadcasting
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        # There is only one output of `self.w_v`, so we remove the last one-dimensional entry from the shape.
        # Shape of `scores`: (`batch_size`, no. of queries, no. of key-value pairs)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        # Shape of `values`: (`batch_size`, no. of key-value pairs, value dimension)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""

    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    # Shape of `queries`: (`batch_size`, no. of queries, `d`)
    # Shape of `keys`: (`batch_size`, no. of key-value pairs, `d`)
    # Shape of `values`: (`batch_size`, no. of key-value pairs, value dimension)
    # Shape of `valid_lens`: (`batch_size`,) or (`batch_size`, no. of queries)
    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        # Set `transpose_b=True` to swap the last two dimensions of `keys`
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def scoring(record):
    record["masked"] = [
        masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])).tolist(),
        masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])).tolist(),
    ]
    queries, keys = torch.normal(0, 1, (2, 1, 20)), torch.ones((2, 10, 2))
    # The two value matrices in the `values` minibatch are identical
    values = torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6])
    attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1)
    attention.eval()
    additive = attention(queries, keys, values, valid_lens)
    queries = torch.normal(0, 1, (2, 1, 2))
    attention = DotProductAttention(dropout=0.5)
    attention.eval()
    dot = attention(queries, keys, values, valid_lens)
    record["scoring"] = [additive.tolist(), dot.tolist(), attention.attention_weights.reshape((1, 1, 2, 10)).tolist()]


# ---- the Bahdanau attention decoder on a synthetic corpus ----


def read_data_nmt():
    """A synthetic English-French corpus: numbers and colours (``'go .\\tva !'``-like lines)."""
    rng = random.Random(0)
    en = ["one", "two", "three", "red", "blue", "green", "big", "small"]
    fr = ["un", "deux", "trois", "rouge", "bleu", "vert", "grand", "petit"]
    lines = []
    for _ in range(32):
        picks = [rng.randrange(len(en)) for _ in range(rng.randint(1, 3))]
        end = rng.choice(["!", ".", "?"])
        source = " ".join(en[i] for i in picks) + " " + end
        target = " ".join(fr[i] for i in reversed(picks)) + " " + end
        lines.append(f"{source}\t{target}")
    return "\n".join(lines)


class Vocab:
    """Vocabulary for text."""

    def __init__(self, tokens, min_freq=0, reserved_tokens=None):
        counter = collections.Counter(token for line in tokens for token in line)
        self._token_freqs = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
        self.idx_to_token = ["<unk>"] + (reserved_tokens or [])
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}
        for token, freq in self._token_freqs:
            if freq >= min_freq and token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, 0)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        return [self.idx_to_token[index] for index in indices]


def truncate_pad(line, num_steps, padding_token):
    """Truncate or pad sequences."""
    if len(line) > num_steps:
        return line[:num_steps]  # Truncate
    return line + [padding_token] * (num_steps - len(line))  # Pad


def build_array_nmt(lines, vocab, num_steps):
    """Transform text sequences of machine translation into minibatches."""
    lines = [vocab[l] + [vocab["<eos>"]] for l in lines]  # noqa: E741  (the book's name)
    array = torch.tensor([truncate_pad(l, num_steps, vocab["<pad>"]) for l in lines])  # noqa: E741
    valid_len = (array != vocab["<pad>"]).type(torch.int32).sum(1)
    return array, valid_len


def load_data_nmt(batch_size, num_steps):
    """Return the iterator and the vocabularies of the translation dataset."""
    source, target = [], []
    for line in read_data_nmt().split("\n"):
        parts = line.split("\t")
        source.append(parts[0].split(" "))
        target.append(parts[1].split(" "))
    src_vocab = Vocab(source, min_freq=0, reserved_tokens=["<pad>", "<bos>", "<eos>"])
    tgt_vocab = Vocab(target, min_freq=0, reserved_tokens=["<pad>", "<bos>", "<eos>"])
    src_array, src_valid_len = build_array_nmt(source, src_vocab, num_steps)
    tgt_array, tgt_valid_len = build_array_nmt(target, tgt_vocab, num_steps)
    data_arrays = (src_array, src_valid_len, tgt_array, tgt_valid_len)
    data_iter = data.DataLoader(data.TensorDataset(*data_arrays), batch_size, shuffle=SHUFFLE)
    return data_iter, src_vocab, tgt_vocab


class Seq2SeqEncoder(nn.Module):
    """The RNN encoder for sequence to sequence learning."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X, *args):
        X = self.embedding(X)
        X = X.permute(1, 0, 2)
        output, state = self.rnn(X)
        return output, state


class AttentionDecoder(nn.Module):
    """The base attention-based decoder interface."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    @property
    def attention_weights(self):
        raise NotImplementedError


class Seq2SeqAttentionDecoder(AttentionDecoder):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(**kwargs)
        if ATTENTION == "additive":
            self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)
        else:
            self.attention = DotProductAttention(dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens, *args):
        # Shape of `outputs`: (`num_steps`, `batch_size`, `num_hiddens`).
        # Shape of `hidden_state[0]`: (`num_layers`, `batch_size`, `num_hiddens`)
        outputs, hidden_state = enc_outputs
        return (outputs.permute(1, 0, 2), hidden_state, enc_valid_lens)

    def forward(self, X, state):
        # Shape of `enc_outputs`: (`batch_size`, `num_steps`, `num_hiddens`).
        # Shape of `hidden_state[0]`: (`num_layers`, `batch_size`, `num_hiddens`)
        enc_outputs, hidden_state, enc_valid_lens = state
        # Shape of the output `X`: (`num_steps`, `batch_size`, `embed_size`)
        X = self.embedding(X).permute(1, 0, 2)
        outputs, self._attention_weights = [], []
        for x in X:
            # Shape of `query`: (`batch_size`, 1, `num_hiddens`)
            query = torch.unsqueeze(hidden_state[-1], dim=1)
            # Shape of `context`: (`batch_size`, 1, `num_hiddens`)
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)
            # Concatenate on the feature dimension
            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)
            # Reshape `x` as (1, `batch_size`, `embed_size` + `num_hiddens`)
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)
            outputs.append(out)
            self._attention_weights.append(self.attention.attention_weights)
        # After fully connected layer transformation, shape of `outputs`: (`num_steps`, `batch_size`,
        # `vocab_size`)
        outputs = self.dense(torch.cat(outputs, dim=0))
        return outputs.permute(1, 0, 2), [enc_outputs, hidden_state, enc_valid_lens]

    @property
    def attention_weights(self):
        return self._attention_weights


class EncoderDecoder(nn.Module):
    """The base class for the encoder-decoder architecture."""

    def __init__(self, encoder, decoder, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, enc_X, dec_X, *args):
        enc_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_outputs, *args)
        return self.decoder(dec_X, dec_state)


class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    """The softmax cross-entropy loss with masks."""

    def forward(self, pred, label, valid_len):
        weights = torch.ones_like(label)
        weights = sequence_mask(weights, valid_len)
        self.reduction = "none"
        unweighted_loss = super(MaskedSoftmaxCELoss, self).forward(pred.permute(0, 2, 1), label)  # noqa: UP008
        weighted_loss = (unweighted_loss * weights).mean(dim=1)
        return weighted_loss


def grad_clipping(net, theta):
    """Clip the gradient."""
    params = [p for p in net.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum(p.grad**2) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm


def xavier_init_weights(m):
    if type(m) == nn.Linear:  # noqa: E721  (the book's test)
        nn.init.xavier_uniform_(m.weight)
    if type(m) == nn.GRU:  # noqa: E721
        for param in m._flat_weights_names:
            if "weight" in param:
                nn.init.xavier_uniform_(m._parameters[param])


def predict_seq2seq(net, src_sentence, src_vocab, tgt_vocab, num_steps, device, save_attention_weights=False):
    """Predict for sequence to sequence."""
    net.eval()
    src_tokens = src_vocab[src_sentence.lower().split(" ")] + [src_vocab["<eos>"]]
    enc_valid_len = torch.tensor([len(src_tokens)], device=device)
    src_tokens = truncate_pad(src_tokens, num_steps, src_vocab["<pad>"])
    enc_X = torch.unsqueeze(torch.tensor(src_tokens, dtype=torch.long, device=device), dim=0)
    enc_outputs = net.encoder(enc_X, enc_valid_len)
    dec_state = net.decoder.init_state(enc_outputs, enc_valid_len)
    dec_X = torch.unsqueeze(torch.tensor([tgt_vocab["<bos>"]], dtype=torch.long, device=device), dim=0)
    output_seq, attention_weight_seq = [], []
    for _ in range(num_steps):
        Y, dec_state = net.decoder(dec_X, dec_state)
        dec_X = Y.argmax(dim=2)
        pred = dec_X.squeeze(dim=0).type(torch.int32).item()
        if save_attention_weights:
            attention_weight_seq.append(net.decoder.attention_weights)
        if pred == tgt_vocab["<eos>"]:
            break
        output_seq.append(pred)
    return " ".join(tgt_vocab.to_tokens(output_seq)), attention_weight_seq


def build():
    torch.manual_seed(0)
    _, src_vocab, tgt_vocab = load_data_nmt(batch_size, num_steps)
    encoder = Seq2SeqEncoder(len(src_vocab), embed_size, num_hiddens, num_layers, DROPOUT)
    decoder = Seq2SeqAttentionDecoder(len(tgt_vocab), embed_size, num_hiddens, num_layers, DROPOUT)
    net = EncoderDecoder(encoder, decoder)
    net.apply(xavier_init_weights)
    return net


def train(net, steps=3):
    torch.manual_seed(1)
    record = {}
    nadaraya_watson(record, steps)
    scoring(record)
    device = torch.device("cpu")
    train_iter, src_vocab, tgt_vocab = load_data_nmt(batch_size, num_steps)
    net.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    loss = MaskedSoftmaxCELoss()
    net.train()
    record["losses"] = []
    for _ in range(steps):
        total, tokens = 0.0, 0.0
        for batch in train_iter:
            optimizer.zero_grad()
            X, X_valid_len, Y, Y_valid_len = [x.to(device) for x in batch]
            bos = torch.tensor([tgt_vocab["<bos>"]] * Y.shape[0], device=device).reshape(-1, 1)
            dec_input = torch.cat([bos, Y[:, :-1]], 1)  # Teacher forcing
            Y_hat, _ = net(X, dec_input, X_valid_len)
            l = loss(Y_hat, Y, Y_valid_len)  # noqa: E741  (the book's name)
            l.sum().backward()
            grad_clipping(net, 1)
            num_tokens = Y_valid_len.sum()
            optimizer.step()
            with torch.no_grad():
                total += float(l.sum())
                tokens += float(num_tokens)
        record["losses"].append(total / tokens)
    record["translations"] = []
    for eng in ["one two !", "red big .", "green ?"]:
        translation, dec_attention_weight_seq = predict_seq2seq(net, eng, src_vocab, tgt_vocab, num_steps, device, True)
        attention_weights = torch.cat([step[0][0][0] for step in dec_attention_weight_seq], 0).reshape(
            (1, 1, -1, num_steps)
        )
        record["translations"].append([translation, attention_weights[0, 0, :, : len(eng.split()) + 1].tolist()])
    return record


if __name__ == "__main__":
    print(train(build()))
