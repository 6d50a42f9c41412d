"""Dive into Deep Learning's sequence-to-sequence learning (PyTorch edition): the machine-translation data
pipeline, a GRU encoder-decoder, the masked softmax cross-entropy, training with teacher forcing and greedy
prediction scored by BLEU, on a synthetic parallel corpus (no download).

Its idioms: ``preprocess_nmt``'s ``text.replace('\\u202f', ' ').lower()`` and spaces before punctuation;
``tokenize_nmt``'s ``line.split('\\t')``; ``truncate_pad``'s ``line + [padding_token] * (num_steps - len(line))``;
``build_array_nmt``'s ``torch.tensor([truncate_pad(l, num_steps, vocab['<pad>']) for l in lines])`` and
``valid_len = (array != vocab['<pad>']).type(torch.int32).sum(1)``; the encoder's ``X.permute(1, 0, 2)``;
the decoder's ``context = state[-1].repeat(X.shape[0], 1, 1)`` and ``torch.cat((X, context), 2)``;
``sequence_mask``'s ``torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]``
and ``X[~mask] = value``; ``MaskedSoftmaxCELoss(nn.CrossEntropyLoss)`` setting ``self.reduction='none'`` in its
``forward`` and calling ``super(MaskedSoftmaxCELoss, self).forward(pred.permute(0, 2, 1), label)``;
``train_seq2seq``'s ``net.apply(xavier_init_weights)`` over ``m._flat_weights_names`` of the GRUs, ``bos =
torch.tensor([tgt_vocab['<bos>']] * Y.shape[0], device=device).reshape(-1, 1)``, ``dec_input = torch.cat([bos,
Y[:, :-1]], 1)``, ``l.sum().backward()`` and ``grad_clipping``; ``predict_seq2seq``'s ``torch.unsqueeze(torch.tensor(
src_tokens, dtype=torch.long, device=device), dim=0)`` and ``dec_X.squeeze(dim=0).type(torch.int32).item()``;
and ``bleu``'s ``collections.defaultdict(int)`` and ``math.pow``."""

from __future__ import annotations

import collections
import math
import random

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

SHUFFLE = True
DROPOUT = 0.1
embed_size, num_hiddens, num_layers, batch_size, num_steps, lr = 8, 16, 2, 8, 6, 0.005


def read_data_nmt():
    """A synthetic English-French corpus: numbers and colours (``'go .\\tva !'``-like lines)."""
    rng = random.Random(0)
    en = ["one", "two", "three", "red", "blue", "green", "big", "small"]
    fr = ["un", "deux", "trois", "rouge", "bleu", "vert", "grand", "petit"]
    lines = []
    for _ in range(48):
        picks = [rng.randrange(len(en)) for _ in range(rng.randint(1, 3))]
        end = rng.choice(["!", ".", "?"])
        source = " ".join(en[i] for i in picks).capitalize() + end
        target = " ".join(fr[i] for i in reversed(picks)).capitalize() + "\u202f" + end
        lines.append(f"{source}\t{target}")
    return "\n".join(lines)


def preprocess_nmt(text):
    """Preprocess the English-French dataset."""

    def no_space(char, prev_char):
        return char in set(",.!?") and prev_char != " "

    # Replace non-breaking space with space, and convert uppercase letters to lowercase ones
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    # Insert space between words and punctuation marks
    out = [" " + char if i > 0 and no_space(char, text[i - 1]) else char for i, char in enumerate(text)]
    return "".join(out)


def tokenize_nmt(text, num_examples=None):
    """Tokenize the English-French dataset."""
    source, target = [], []
    for i, line in enumerate(text.split("\n")):
        if num_examples and i > num_examples:
            break
        parts = line.split("\t")
        if len(parts) == 2:
            source.append(parts[0].split(" "))
            target.append(parts[1].split(" "))
    return source, target


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
    lines = [vocab[l] for l in lines]  # noqa: E741  (the book's name)
    lines = [l + [vocab["<eos>"]] for l in lines]  # noqa: E741
    array = torch.tensor([truncate_pad(l, num_steps, vocab["<pad>"]) for l in lines])  # noqa: E741
    valid_len = (array != vocab["<pad>"]).type(torch.int32).sum(1)
    return array, valid_len


def load_data_nmt(batch_size, num_steps, num_examples=600):
    """Return the iterator and the vocabularies of the translation dataset."""
    text = preprocess_nmt(read_data_nmt())
    source, target = tokenize_nmt(text, num_examples)
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
        # Embedding layer
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X, *args):
        # The output `X` shape: (`batch_size`, `num_steps`, `embed_size`)
        X = self.embedding(X)
        # In RNN models, the first axis corresponds to time steps
        X = X.permute(1, 0, 2)
        # When state is not mentioned, it defaults to zeros
        output, state = self.rnn(X)
        return output, state


class Seq2SeqDecoder(nn.Module):
    """The RNN decoder for sequence to sequence learning."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0, **kwargs):
        super().__init__(**kwargs)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, *args):
        return enc_outputs[1]

    def forward(self, X, state):
        # The output `X` shape: (`num_steps`, `batch_size`, `embed_size`)
        X = self.embedding(X).permute(1, 0, 2)
        # Broadcast `context` so it has the same `num_steps` as `X`
        context = state[-1].repeat(X.shape[0], 1, 1)
        X_and_context = torch.cat((X, context), 2)
        output, state = self.rnn(X_and_context, state)
        output = self.dense(output).permute(1, 0, 2)
        # `output` shape: (`batch_size`, `num_steps`, `vocab_size`)
        return output, state


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


def sequence_mask(X, valid_len, value=0):
    """Mask irrelevant entries in sequences."""
    maxlen = X.size(1)
    mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
    """The softmax cross-entropy loss with masks."""

    # `pred` shape: (`batch_size`, `num_steps`, `vocab_size`)
    # `label` shape: (`batch_size`, `num_steps`)
    # `valid_len` shape: (`batch_size`,)
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


def predict_seq2seq(net, src_sentence, src_vocab, tgt_vocab, num_steps, device):
    """Predict for sequence to sequence."""
    # Set `net` to eval mode for inference
    net.eval()
    src_tokens = src_vocab[src_sentence.lower().split(" ")] + [src_vocab["<eos>"]]
    enc_valid_len = torch.tensor([len(src_tokens)], device=device)
    src_tokens = truncate_pad(src_tokens, num_steps, src_vocab["<pad>"])
    # Add the batch axis
    enc_X = torch.unsqueeze(torch.tensor(src_tokens, dtype=torch.long, device=device), dim=0)
    enc_outputs = net.encoder(enc_X, enc_valid_len)
    dec_state = net.decoder.init_state(enc_outputs, enc_valid_len)
    # Add the batch axis
    dec_X = torch.unsqueeze(torch.tensor([tgt_vocab["<bos>"]], dtype=torch.long, device=device), dim=0)
    output_seq = []
    for _ in range(num_steps):
        Y, dec_state = net.decoder(dec_X, dec_state)
        # We use the token with the highest prediction likelihood as the input of the decoder at the next time step
        dec_X = Y.argmax(dim=2)
        pred = dec_X.squeeze(dim=0).type(torch.int32).item()
        # Once the end-of-sequence token is predicted, the generation of the output sequence is complete
        if pred == tgt_vocab["<eos>"]:
            break
        output_seq.append(pred)
    return " ".join(tgt_vocab.to_tokens(output_seq))


def bleu(pred_seq, label_seq, k):
    """Compute the BLEU."""
    pred_tokens, label_tokens = pred_seq.split(" "), label_seq.split(" ")
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, k + 1):
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[" ".join(label_tokens[i : i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[" ".join(pred_tokens[i : i + n])] > 0:
                num_matches += 1
                label_subs[" ".join(pred_tokens[i : i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


def build():
    torch.manual_seed(0)
    _, src_vocab, tgt_vocab = load_data_nmt(batch_size, num_steps)
    encoder = Seq2SeqEncoder(len(src_vocab), embed_size, num_hiddens, num_layers, DROPOUT)
    decoder = Seq2SeqDecoder(len(tgt_vocab), embed_size, num_hiddens, num_layers, DROPOUT)
    net = EncoderDecoder(encoder, decoder)
    net.apply(xavier_init_weights)
    return net


def train(net, steps=3):
    torch.manual_seed(1)
    device = torch.device("cpu")
    train_iter, src_vocab, tgt_vocab = load_data_nmt(batch_size, num_steps)
    X, X_valid_len, Y, Y_valid_len = next(iter(train_iter))
    record = {
        "losses": [],
        "first_batch": [X[:2].tolist(), X_valid_len[:2].tolist(), Y[:2].tolist(), str(X.type(torch.int32).dtype)[-5:]],
        "pad": truncate_pad(src_vocab["red blue !".split(" ")], 5, src_vocab["<pad>"]),
        "mask": sequence_mask(torch.ones(2, 3, 4), torch.tensor([1, 2]), value=-1).tolist(),
    }
    net.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    loss = MaskedSoftmaxCELoss()
    net.train()
    for _ in range(steps):
        total, tokens = 0.0, 0.0  # Sum of training loss, no. of tokens
        for batch in train_iter:
            optimizer.zero_grad()
            X, X_valid_len, Y, Y_valid_len = [x.to(device) for x in batch]
            bos = torch.tensor([tgt_vocab["<bos>"]] * Y.shape[0], device=device).reshape(-1, 1)
            dec_input = torch.cat([bos, Y[:, :-1]], 1)  # Teacher forcing
            Y_hat, _ = net(X, dec_input, X_valid_len)
            l = loss(Y_hat, Y, Y_valid_len)  # noqa: E741  (the book's name)
            l.sum().backward()  # Make the loss scalar for `backward`
            grad_clipping(net, 1)
            num_tokens = Y_valid_len.sum()
            optimizer.step()
            with torch.no_grad():
                total += float(l.sum())
                tokens += float(num_tokens)
        record["losses"].append(total / tokens)
    engs = ["one two !", "red big .", "green ?"]
    fras = ["deux un !", "grand rouge .", "vert ?"]
    record["translations"] = []
    for eng, fra in zip(engs, fras, strict=False):
        translation = predict_seq2seq(net, eng, src_vocab, tgt_vocab, num_steps, device)
        # (the book's k=2 divides by zero for a one-token translation: k is at most its length here)
        k = min(2, len(translation.split(" "))) if translation else 0
        record["translations"].append([translation, bleu(translation, fra, k=k) if k else 0.0])
    return record


if __name__ == "__main__":
    print(train(build()))
