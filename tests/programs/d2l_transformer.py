"""Dive into Deep Learning's multi-head attention, positional encoding, the Transformer and the Vision
Transformer (PyTorch edition, the book's 1.0 code with lazy layers) at tiny sizes on synthetic data: a
Transformer encoder-decoder trained on a small parallel corpus and decoded greedily, and a ViT trained on
a synthetic Fashion-MNIST.

Its idioms: ``MultiHeadAttention``'s ``nn.LazyLinear(num_hiddens, bias=bias)`` projections, ``transpose_qkv``
(``X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)``, ``X.permute(0, 2, 1, 3)``, ``X.reshape(-1,
X.shape[2], X.shape[3])``) and ``transpose_output``, ``torch.repeat_interleave(valid_lens, repeats=
self.num_heads, dim=0)``; ``PositionalEncoding``'s plain-tensor ``self.P`` filled by ``self.P[:, :, 0::2] =
torch.sin(X)`` from ``torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / torch.pow(10000,
torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)`` and added by ``self.P[:, :X.shape[1],
:].to(X.device)``; ``AddNorm``'s ``self.ln(self.dropout(Y) + X)``; the encoder's ``self.embedding(X) *
math.sqrt(self.num_hiddens)`` and ``blk.attention.attention.attention_weights``; the decoder block's cache
``state[2][self.i]`` grown by ``torch.cat((state[2][self.i], X), dim=1)``, its causal ``dec_valid_lens =
torch.arange(1, num_steps + 1, device=X.device).repeat(batch_size, 1)`` in training only; the layers
materialized by one forward pass before ``net.apply(init_seq2seq)`` (a ``LazyLinear`` becomes a ``Linear``);
the ``Seq2Seq`` loss ``(l * mask).sum() / mask.sum()`` over ``(Y.reshape(-1) != self.tgt_pad)``; the
prediction loop from ``tgt[:, (0)].unsqueeze(1)``; and the ViT's ``nn.LazyConv2d`` patch embedding
``self.conv(X).flatten(2).transpose(1, 2)``, ``torch.cat((self.cls_token.expand(X.shape[0], -1, -1), X), 1)``,
``nn.Parameter(torch.randn(1, num_steps, num_hiddens) * 0.02)``, ``self.attention(*([self.ln1(X)] * 3),
valid_lens)`` and the head on ``X[:, 0]``."""

from __future__ import annotations

import collections
import math
import random

from shim import F, nn, torch

data = torch.utils.data  # from torch.utils import data

MODEL = "transformer"  # or "vit"
SHUFFLE = True
DROPOUT = 0.1
num_hiddens, num_blks, num_heads, ffn_num_hiddens, batch_size, num_steps, lr = 16, 2, 4, 32, 8, 6, 0.005


def masked_softmax(X, valid_lens):
    """Perform softmax operation by masking elements on the last axis."""

    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    else:
        shape = X.shape
        if valid_lens.dim() == 1:
            valid_lens = torch.repeat_interleave(valid_lens, shape[1])
        else:
            valid_lens = valid_lens.reshape(-1)
        X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)


class DotProductAttention(nn.Module):
    """Scaled dot product attention."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    """Multi-head attention."""

    def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_v = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_o = nn.LazyLinear(num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        # Shape of `queries`, `keys`, or `values`: (`batch_size`, no. of queries or key-value pairs,
        # `num_hiddens`). After transposing, shape of output `queries`, `keys`, or `values`: (`batch_size` *
        # `num_heads`, no. of queries or key-value pairs, `num_hiddens` / `num_heads`)
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        if valid_lens is not None:
            # On axis 0, copy the first item (scalar or vector) for `num_heads` times, then copy the next item,
            # and so on
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        # Shape of `output`: (`batch_size` * `num_heads`, no. of queries, `num_hiddens` / `num_heads`)
        output = self.attention(queries, keys, values, valid_lens)
        # Shape of `output_concat`: (`batch_size`, no. of queries, `num_hiddens`)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)

    def transpose_qkv(self, X):
        """Transposition for parallel computation of multiple attention heads."""
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        X = X.permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        """Reverse the operation of transpose_qkv."""
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)


class PositionalEncoding(nn.Module):
    """Positional encoding."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        # Create a long enough `P`
        self.P = torch.zeros((1, max_len, num_hiddens))
        X = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / torch.pow(
            10000, torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens
        )
        self.P[:, :, 0::2] = torch.sin(X)
        self.P[:, :, 1::2] = torch.cos(X)

    def forward(self, X):
        X = X + self.P[:, : X.shape[1], :].to(X.device)
        return self.dropout(X)


class PositionWiseFFN(nn.Module):
    """The positionwise feed-forward network."""

    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.LazyLinear(ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.LazyLinear(ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    """The residual connection followed by layer normalization."""

    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class TransformerEncoderBlock(nn.Module):
    """The Transformer encoder block."""

    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(nn.Module):
    """The Transformer encoder."""

    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                "block" + str(i), TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias)
            )

    def forward(self, X, valid_lens):
        # Since positional encoding values are between -1 and 1, the embedding values are multiplied by the
        # square root of the embedding dimension to rescale before they are summed up
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[i] = blk.attention.attention.attention_weights
        return X


class TransformerDecoderBlock(nn.Module):
    # The i-th block in the Transformer decoder
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i):
        super().__init__()
        self.i = i
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        # During training, all the tokens of any output sequence are processed at the same time, so
        # `state[2][self.i]` is `None` as initialized. When decoding any output sequence token by token during
        # prediction, `state[2][self.i]` contains representations of the decoded output at the i-th block up
        # to the current time step
        if state[2][self.i] is None:
            key_values = X
        else:
            key_values = torch.cat((state[2][self.i], X), dim=1)
        state[2][self.i] = key_values
        if self.training:
            batch_size, num_steps, _ = X.shape
            # Shape of `dec_valid_lens`: (`batch_size`, `num_steps`), where every row is [1, 2, ..., `num_steps`]
            dec_valid_lens = torch.arange(1, num_steps + 1, device=X.device).repeat(batch_size, 1)
        else:
            dec_valid_lens = None
        # Self-attention
        X2 = self.attention1(X, key_values, key_values, dec_valid_lens)
        Y = self.addnorm1(X, X2)
        # Encoder-decoder attention. Shape of `enc_outputs`: (`batch_size`, `num_steps`, `num_hiddens`)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)
        Z = self.addnorm2(Y, Y2)
        return self.addnorm3(Z, self.ffn(Z)), state


class TransformerDecoder(nn.Module):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                "block" + str(i), TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i)
            )
        self.dense = nn.LazyLinear(vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

    def forward(self, X, state):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self._attention_weights = [[None] * len(self.blks) for _ in range(2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state)
            # Decoder self-attention weights
            self._attention_weights[0][i] = blk.attention1.attention.attention_weights
            # Encoder-decoder attention weights
            self._attention_weights[1][i] = blk.attention2.attention.attention_weights
        return self.dense(X), state

    @property
    def attention_weights(self):
        return self._attention_weights


class Seq2Seq(nn.Module):
    """The encoder-decoder architecture for sequence to sequence learning."""

    def __init__(self, encoder, decoder, tgt_pad):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.tgt_pad = tgt_pad

    def forward(self, enc_X, dec_X, *args):
        enc_all_outputs = self.encoder(enc_X, *args)
        dec_state = self.decoder.init_state(enc_all_outputs, *args)
        # Return decoder output only
        return self.decoder(dec_X, dec_state)[0]

    def loss(self, Y_hat, Y):
        Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
        l = F.cross_entropy(Y_hat, Y.reshape((-1,)), reduction="none")  # noqa: E741  (the book's name)
        mask = (Y.reshape(-1) != self.tgt_pad).type(torch.float32)
        return (l * mask).sum() / mask.sum()

    def predict_step(self, batch, device, num_steps, save_attention_weights=False):
        batch = [a.to(device) for a in batch]
        src, tgt, src_valid_len, _ = batch
        enc_all_outputs = self.encoder(src, src_valid_len)
        dec_state = self.decoder.init_state(enc_all_outputs, src_valid_len)
        outputs, attention_weights = [tgt[:, (0)].unsqueeze(1)], []
        for _ in range(num_steps):
            Y, dec_state = self.decoder(outputs[-1], dec_state)
            outputs.append(Y.argmax(2))
            # Save attention weights (to be covered later)
            if save_attention_weights:
                attention_weights.append(self.decoder.attention_weights)
        return torch.cat(outputs[1:], 1), attention_weights


def init_seq2seq(module):
    """Initialize weights for sequence-to-sequence learning."""
    if type(module) == nn.Linear:  # noqa: E721  (the book's test)
        nn.init.xavier_uniform_(module.weight)


class Vocab:
    """Vocabulary for text."""

    def __init__(self, tokens, min_freq=0, reserved_tokens=None):
        counter = collections.Counter(token for line in tokens for token in line)
        self.token_freqs = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
        self.idx_to_token = list(
            sorted(set(["<unk>"] + (reserved_tokens or []) + [t for t, f in self.token_freqs if f >= min_freq]))
        )
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, list | tuple):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        if hasattr(indices, "__len__") and len(indices) > 1:
            return [self.idx_to_token[int(index)] for index in indices]
        return self.idx_to_token[indices]

    @property
    def unk(self):  # Index for the unknown token
        return self.token_to_idx["<unk>"]


class MTFraEng:
    """A synthetic English-French dataset built as the book's ``MTFraEng`` builds its arrays."""

    def __init__(self, batch_size, num_steps=9, num_train=32, num_val=8):
        self.batch_size, self.num_steps = batch_size, num_steps
        self.num_train, self.num_val = num_train, num_val
        self.arrays, self.src_vocab, self.tgt_vocab = self._build_arrays(self._download())

    def _download(self):
        rng = random.Random(0)
        en = ["one", "two", "three", "red", "blue", "green", "big", "small"]
        fr = ["un", "deux", "trois", "rouge", "bleu", "vert", "grand", "petit"]
        lines = []
        for _ in range(self.num_train + self.num_val):
            picks = [rng.randrange(len(en)) for _ in range(rng.randint(1, 3))]
            end = rng.choice(["!", ".", "?"])
            lines.append(
                " ".join(en[i] for i in picks) + f" {end}\t" + " ".join(fr[i] for i in reversed(picks)) + f" {end}"
            )
        return "\n".join(lines)

    def _tokenize(self, text, max_examples=None):
        src, tgt = [], []
        for i, line in enumerate(text.split("\n")):
            if max_examples and i > max_examples:
                break
            parts = line.split("\t")
            if len(parts) == 2:
                # Skip empty tokens
                src.append([t for t in f"{parts[0]} <eos>".split(" ") if t])
                tgt.append([t for t in f"{parts[1]} <eos>".split(" ") if t])
        return src, tgt

    def _build_arrays(self, raw_text, src_vocab=None, tgt_vocab=None):
        def _build_array(sentences, vocab, is_tgt=False):
            def pad_or_trim(seq, t):
                return seq[:t] if len(seq) > t else seq + ["<pad>"] * (t - len(seq))

            sentences = [pad_or_trim(s, self.num_steps) for s in sentences]
            if is_tgt:
                sentences = [["<bos>"] + s for s in sentences]
            if vocab is None:
                vocab = Vocab(sentences, min_freq=0)
            array = torch.tensor([vocab[s] for s in sentences])
            valid_len = (array != vocab["<pad>"]).type(torch.int32).sum(1)
            return array, vocab, valid_len

        src, tgt = self._tokenize(raw_text, self.num_train + self.num_val)
        src_array, src_vocab, src_valid_len = _build_array(src, src_vocab)
        tgt_array, tgt_vocab, _ = _build_array(tgt, tgt_vocab, True)
        return ((src_array, tgt_array[:, :-1], src_valid_len, tgt_array[:, 1:]), src_vocab, tgt_vocab)

    def get_dataloader(self, train):
        idx = slice(0, self.num_train) if train else slice(self.num_train, None)
        tensors = tuple(a[idx] for a in self.arrays)
        return data.DataLoader(data.TensorDataset(*tensors), self.batch_size, shuffle=train and SHUFFLE)

    def build(self, src_sentences, tgt_sentences):
        raw_text = "\n".join([src + "\t" + tgt for src, tgt in zip(src_sentences, tgt_sentences, strict=False)])
        arrays, _, _ = self._build_arrays(raw_text, self.src_vocab, self.tgt_vocab)
        return arrays


def bleu(pred_seq, label_seq, k):
    """Compute the BLEU."""
    pred_tokens, label_tokens = pred_seq.split(" "), label_seq.split(" ")
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, min(k, len_pred) + 1):
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[" ".join(label_tokens[i : i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[" ".join(pred_tokens[i : i + n])] > 0:
                num_matches += 1
                label_subs[" ".join(pred_tokens[i : i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


def clip_gradients(grad_clip_val, model):
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum(p.grad**2) for p in params))
    if norm > grad_clip_val:
        for param in params:
            param.grad[:] *= grad_clip_val / norm


# ---- the Vision Transformer ----


class PatchEmbedding(nn.Module):
    def __init__(self, img_size=96, patch_size=16, num_hiddens=512):
        super().__init__()

        def _make_tuple(x):
            if not isinstance(x, list | tuple):
                return (x, x)
            return x

        img_size, patch_size = _make_tuple(img_size), _make_tuple(patch_size)
        self.num_patches = (img_size[0] // patch_size[0]) * (img_size[1] // patch_size[1])
        self.conv = nn.LazyConv2d(num_hiddens, kernel_size=patch_size, stride=patch_size)

    def forward(self, X):
        # Output shape: (batch size, no. of patches, no. of channels)
        return self.conv(X).flatten(2).transpose(1, 2)


class ViTMLP(nn.Module):
    def __init__(self, mlp_num_hiddens, mlp_num_outputs, dropout=0.5):
        super().__init__()
        self.dense1 = nn.LazyLinear(mlp_num_hiddens)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.LazyLinear(mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout2(self.dense2(self.dropout1(self.gelu(self.dense1(x)))))


class ViTBlock(nn.Module):
    def __init__(self, num_hiddens, norm_shape, mlp_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.ln1 = nn.LayerNorm(norm_shape)
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.ln2 = nn.LayerNorm(norm_shape)
        self.mlp = ViTMLP(mlp_num_hiddens, num_hiddens, dropout)

    def forward(self, X, valid_lens=None):
        X = X + self.attention(*([self.ln1(X)] * 3), valid_lens)
        return X + self.mlp(self.ln2(X))


class ViT(nn.Module):
    """Vision Transformer."""

    def __init__(
        self, img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads, num_blks, emb_dropout, blk_dropout,
        use_bias=False, num_classes=10,
    ):  # fmt: skip
        super().__init__()
        self.patch_embedding = PatchEmbedding(img_size, patch_size, num_hiddens)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))
        num_steps = self.patch_embedding.num_patches + 1  # Add the cls token
        # Positional embeddings are learnable
        self.pos_embedding = nn.Parameter(torch.randn(1, num_steps, num_hiddens) * 0.02)
        self.dropout = nn.Dropout(emb_dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(
                f"{i}", ViTBlock(num_hiddens, num_hiddens, mlp_num_hiddens, num_heads, blk_dropout, use_bias)
            )
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens), nn.Linear(num_hiddens, num_classes))

    def forward(self, X):
        X = self.patch_embedding(X)
        X = torch.cat((self.cls_token.expand(X.shape[0], -1, -1), X), 1)
        X = self.dropout(X + self.pos_embedding)
        for blk in self.blks:
            X = blk(X)
        return self.head(X[:, 0])


def fashion_mnist(n, seed, size):
    g = torch.Generator().manual_seed(seed)
    templates = torch.rand((10, 1, size, size), generator=torch.Generator().manual_seed(7))
    labels = torch.randint(0, 10, (n,), generator=g)
    images = (0.7 * templates[labels] + 0.3 * torch.rand((n, 1, size, size), generator=g)).clamp(0, 1)
    return data.DataLoader(data.TensorDataset(images, labels), 16, shuffle=SHUFFLE and seed == 0)


def init_cnn(module):
    """Initialize weights for CNNs."""
    if type(module) == nn.Linear or type(module) == nn.Conv2d:  # noqa: E721  (the book's test)
        nn.init.xavier_uniform_(module.weight)


def build():
    torch.manual_seed(0)
    if MODEL == "vit":
        model = ViT(16, 4, num_hiddens, ffn_num_hiddens, num_heads, num_blks, DROPOUT, DROPOUT)
        model(next(iter(fashion_mnist(2, 0, 16)))[0])  # materialize the lazy layers
        model.apply(init_cnn)
        return model
    mt = MTFraEng(batch_size, num_steps)
    encoder = TransformerEncoder(len(mt.src_vocab), num_hiddens, ffn_num_hiddens, num_heads, num_blks, DROPOUT)
    decoder = TransformerDecoder(len(mt.tgt_vocab), num_hiddens, ffn_num_hiddens, num_heads, num_blks, DROPOUT)
    model = Seq2Seq(encoder, decoder, tgt_pad=mt.tgt_vocab["<pad>"])
    src, tgt, src_valid_len, _ = next(iter(mt.get_dataloader(True)))
    model(src, tgt, src_valid_len)  # materialize the lazy layers, then initialize them as the book does
    model.apply(init_seq2seq)
    return model


def train_vit(model, steps, record):
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    record["losses"], record["accuracy"] = [], []
    train_iter, val_iter = fashion_mnist(48, 0, 16), fashion_mnist(16, 1, 16)
    for _ in range(steps):
        model.train()
        total = 0.0
        for X, Y in train_iter:
            loss = F.cross_entropy(model(X), Y)
            optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                clip_gradients(1, model)
                optim.step()
            total += loss.item()
        record["losses"].append(total)
        model.eval()
        with torch.no_grad():
            for X, Y in val_iter:
                preds = model(X).argmax(axis=1).type(Y.dtype)
                compare = (preds == Y.reshape(-1)).type(torch.float32)
                record["accuracy"].append(float(compare.mean()))
    return record


def train(model, steps=3):
    torch.manual_seed(1)
    record = {}
    encoding = PositionalEncoding(8, 0)
    encoding.eval()
    X = encoding(torch.zeros((1, 6, 8)))
    record["positional"] = [X[0, :, 2:6].tolist(), encoding.P[0, :3, :].tolist()]
    attention = MultiHeadAttention(num_hiddens, num_heads, 0.5)
    attention(torch.ones((2, 4, num_hiddens)), torch.ones((2, 6, num_hiddens)), torch.ones((2, 6, num_hiddens)), None)
    record["lazy"] = [type(attention.W_q).__name__, tuple(attention.W_q.weight.shape)]
    if MODEL == "vit":
        return train_vit(model, steps, record)
    mt = MTFraEng(batch_size, num_steps)
    optim = torch.optim.Adam(model.parameters(), lr=lr)
    record["losses"], record["val"] = [], []
    for _ in range(steps):
        model.train()
        total = 0.0
        for src, tgt, src_valid_len, label in mt.get_dataloader(True):
            Y_hat = model(src, tgt, src_valid_len)
            loss = model.loss(Y_hat, label)
            optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                clip_gradients(1, model)
                optim.step()
            total += loss.item()
        record["losses"].append(total)
        model.eval()
        with torch.no_grad():
            for src, tgt, src_valid_len, label in mt.get_dataloader(False):
                record["val"].append(model.loss(model(src, tgt, src_valid_len), label).item())
    engs = ["one two !", "red big .", "green ?"]
    fras = ["deux un !", "grand rouge .", "vert ?"]
    model.eval()
    preds, dec_attention_weights = model.predict_step(mt.build(engs, fras), torch.device("cpu"), mt.num_steps, True)
    record["translations"] = []
    for _en, fr, p in zip(engs, fras, preds, strict=False):
        translation = []
        for token in mt.tgt_vocab.to_tokens(p):
            if token == "<eos>":
                break
            translation.append(token)
        record["translations"].append([" ".join(translation), bleu(" ".join(translation), fr, k=2)])
    enc_attention_weights = torch.cat(model.encoder.attention_weights, 0).reshape((num_blks, num_heads, -1, num_steps))
    # the last step's self-attention and encoder-decoder attention of each block, over every head
    dec_last = [[head[0].tolist() for head in blk[:num_heads]] for attn in dec_attention_weights[-1] for blk in attn]
    record["attention"] = [enc_attention_weights[:, :, 0, :].tolist(), dec_last]
    return record


if __name__ == "__main__":
    print(train(build()))
