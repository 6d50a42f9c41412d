"""The Transformer from scratch of Aladdin Persson's Machine-Learning-Collection
(ML/Pytorch/more_advanced/transformer_from_scratch), trained as a tiny copy-and-shift translator on synthetic
token sequences.

Idioms: ``SelfAttention`` with ``assert (self.head_dim * heads == embed_size), "..."``, ``values.reshape(N,
value_len, self.heads, self.head_dim)``, ``torch.einsum("nqhd,nkhd->nhqk", [queries, keys])`` (operands as a
list), ``energy.masked_fill(mask == 0, float("-1e20"))``, ``torch.softmax(energy / (self.embed_size ** (1 /
2)), dim=3)``, ``torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(N, query_len, self.heads *
self.head_dim)``; ``TransformerBlock``/``DecoderBlock`` with post-norm residuals ``self.dropout(self.norm1(
attention + query))``; positions by ``torch.arange(0, seq_length).expand(N, seq_length).to(self.device)``;
``make_src_mask`` by ``(src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)`` and ``make_trg_mask`` by
``torch.tril(torch.ones((trg_len, trg_len))).expand(N, 1, trg_len, trg_len)`` (a float mask compared with
``== 0``); the script's ``__main__`` check (``model(x, trg[:, :-1])`` and ``out.shape``); training with
``CrossEntropyLoss(ignore_index=pad)`` over ``output.reshape(-1, output.shape[2])`` and
``torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)``; greedy decoding under ``torch.no_grad()``
with ``output.argmax(2)[:, -1].item()``.
"""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

DROPOUT = 0.1
SEQ = 7
BATCH = 4
VOCAB = 11
PAD = 0
SOS = 1
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SelfAttention(nn.Module):
    def __init__(self, embed_size, heads):
        super(SelfAttention, self).__init__()  # noqa: UP008
        self.embed_size = embed_size
        self.heads = heads
        self.head_dim = embed_size // heads

        assert self.head_dim * heads == embed_size, "Embedding size needs to be divisible by heads"

        self.values = nn.Linear(embed_size, embed_size)
        self.keys = nn.Linear(embed_size, embed_size)
        self.queries = nn.Linear(embed_size, embed_size)
        self.fc_out = nn.Linear(embed_size, embed_size)

    def forward(self, values, keys, query, mask):
        # Get number of training examples
        N = query.shape[0]

        value_len, key_len, query_len = values.shape[1], keys.shape[1], query.shape[1]

        values = self.values(values)  # (N, value_len, embed_size)
        keys = self.keys(keys)  # (N, key_len, embed_size)
        queries = self.queries(query)  # (N, query_len, embed_size)

        # Split the embedding into self.heads different pieces
        values = values.reshape(N, value_len, self.heads, self.head_dim)
        keys = keys.reshape(N, key_len, self.heads, self.head_dim)
        queries = queries.reshape(N, query_len, self.heads, self.head_dim)

        # Einsum does matrix mult. for query*keys for each training example
        # with every other training example, don't be confused by einsum
        # it's just how I like doing matrix multiplication & bmm
        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        # queries shape: (N, query_len, heads, heads_dim),
        # keys shape: (N, key_len, heads, heads_dim)
        # energy: (N, heads, query_len, key_len)

        # Mask padded indices so their weights become 0
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))

        # Normalize energy values similarly to seq2seq + attention
        # so that they sum to 1. Also divide by scaling factor for
        # better stability
        attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)
        # attention shape: (N, heads, query_len, key_len)

        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(N, query_len, self.heads * self.head_dim)
        # attention shape: (N, heads, query_len, key_len)
        # values shape: (N, value_len, heads, heads_dim)
        # out after matrix multiply: (N, query_len, heads, head_dim), then
        # we reshape and flatten the last two dimensions.

        out = self.fc_out(out)
        # Linear layer doesn't modify the shape, final shape will be
        # (N, query_len, embed_size)

        return out


class TransformerBlock(nn.Module):
    def __init__(self, embed_size, heads, dropout, forward_expansion):
        super(TransformerBlock, self).__init__()  # noqa: UP008
        self.attention = SelfAttention(embed_size, heads)
        self.norm1 = nn.LayerNorm(embed_size)
        self.norm2 = nn.LayerNorm(embed_size)

        self.feed_forward = nn.Sequential(
            nn.Linear(embed_size, forward_expansion * embed_size),
            nn.ReLU(),
            nn.Linear(forward_expansion * embed_size, embed_size),
        )

        self.dropout = nn.Dropout(dropout)

    def forward(self, value, key, query, mask):
        attention = self.attention(value, key, query, mask)

        # Add skip connection, run through normalization and finally dropout
        x = self.dropout(self.norm1(attention + query))
        forward = self.feed_forward(x)
        out = self.dropout(self.norm2(forward + x))
        return out


class Encoder(nn.Module):
    def __init__(self, src_vocab_size, embed_size, num_layers, heads, device, forward_expansion, dropout, max_length):
        super(Encoder, self).__init__()  # noqa: UP008
        self.embed_size = embed_size
        self.device = device
        self.word_embedding = nn.Embedding(src_vocab_size, embed_size)
        self.position_embedding = nn.Embedding(max_length, embed_size)

        self.layers = nn.ModuleList(
            [
                TransformerBlock(embed_size, heads, dropout=dropout, forward_expansion=forward_expansion)
                for _ in range(num_layers)
            ]
        )

        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask):
        N, seq_length = x.shape
        positions = torch.arange(0, seq_length).expand(N, seq_length).to(self.device)
        out = self.dropout((self.word_embedding(x) + self.position_embedding(positions)))  # noqa: UP034

        # In the Encoder the query, key, value are all the same, it's in the
        # decoder this will change. This might look a bit odd in this case.
        for layer in self.layers:
            out = layer(out, out, out, mask)

        return out


class DecoderBlock(nn.Module):
    def __init__(self, embed_size, heads, forward_expansion, dropout, device):
        super(DecoderBlock, self).__init__()  # noqa: UP008
        self.norm = nn.LayerNorm(embed_size)
        self.attention = SelfAttention(embed_size, heads=heads)
        self.transformer_block = TransformerBlock(embed_size, heads, dropout, forward_expansion)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, value, key, src_mask, trg_mask):
        attention = self.attention(x, x, x, trg_mask)
        query = self.dropout(self.norm(attention + x))
        out = self.transformer_block(value, key, query, src_mask)
        return out


class Decoder(nn.Module):
    def __init__(self, trg_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, device, max_length):
        super(Decoder, self).__init__()  # noqa: UP008
        self.device = device
        self.word_embedding = nn.Embedding(trg_vocab_size, embed_size)
        self.position_embedding = nn.Embedding(max_length, embed_size)

        self.layers = nn.ModuleList(
            [DecoderBlock(embed_size, heads, forward_expansion, dropout, device) for _ in range(num_layers)]
        )
        self.fc_out = nn.Linear(embed_size, trg_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, enc_out, src_mask, trg_mask):
        N, seq_length = x.shape
        positions = torch.arange(0, seq_length).expand(N, seq_length).to(self.device)
        x = self.dropout((self.word_embedding(x) + self.position_embedding(positions)))  # noqa: UP034

        for layer in self.layers:
            x = layer(x, enc_out, enc_out, src_mask, trg_mask)

        out = self.fc_out(x)

        return out


class Transformer(nn.Module):
    def __init__(
        self,
        src_vocab_size,
        trg_vocab_size,
        src_pad_idx,
        trg_pad_idx,
        embed_size=512,
        num_layers=6,
        forward_expansion=4,
        heads=8,
        dropout=0,
        device="cpu",
        max_length=100,
    ):
        super(Transformer, self).__init__()  # noqa: UP008

        self.encoder = Encoder(
            src_vocab_size, embed_size, num_layers, heads, device, forward_expansion, dropout, max_length
        )

        self.decoder = Decoder(
            trg_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, device, max_length
        )

        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.device = device

    def make_src_mask(self, src):
        src_mask = (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)
        # (N, 1, 1, src_len)
        return src_mask.to(self.device)

    def make_trg_mask(self, trg):
        N, trg_len = trg.shape
        trg_mask = torch.tril(torch.ones((trg_len, trg_len))).expand(N, 1, trg_len, trg_len)

        return trg_mask.to(self.device)

    def forward(self, src, trg):
        src_mask = self.make_src_mask(src)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        out = self.decoder(trg, enc_src, src_mask, trg_mask)
        return out


def build():
    torch.manual_seed(0)
    return Transformer(
        VOCAB,
        VOCAB,
        PAD,
        PAD,
        embed_size=8,
        num_layers=2,
        forward_expansion=2,
        heads=2,
        dropout=DROPOUT,
        device=device,
        max_length=16,
    ).to(device)


def batches():
    """Sources of random tokens padded at the end; targets the source shifted by one, after <sos>."""
    rng = np.random.RandomState(0)
    for _ in range(8):
        src = rng.randint(2, VOCAB, (BATCH, SEQ))
        for row, length in enumerate(rng.randint(3, SEQ + 1, BATCH)):
            src[row, length:] = PAD
        trg = np.concatenate([np.full((BATCH, 1), SOS), np.where(src == PAD, PAD, (src - 1) % (VOCAB - 2) + 2)], 1)
        yield torch.tensor(src).to(device), torch.tensor(trg).to(device)


def train(model, steps=3):
    record = {"losses": []}
    # the script's own check
    x = torch.tensor([[1, 5, 6, 4, 3, 9, 5, 2, 0], [1, 8, 7, 3, 4, 5, 6, 7, 2]]).to(device)
    trg = torch.tensor([[1, 7, 4, 3, 5, 9, 2, 0], [1, 5, 6, 2, 4, 7, 6, 2]]).to(device)
    out = model(x, trg[:, :-1])
    record["main"] = [list(out.shape), out[0, 0].tolist()]

    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    for step, (src, target) in enumerate(batches()):
        if step == steps:
            break
        model.train()
        output = model(src, target[:, :-1])
        output = output.reshape(-1, output.shape[2])
        target = target[:, 1:].reshape(-1)
        optimizer.zero_grad()
        loss = criterion(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)
        optimizer.step()
        record["losses"].append(loss.item())

    model.eval()
    sentence = src[:1]
    outputs = [SOS]
    for _ in range(SEQ):
        trg_tensor = torch.LongTensor(outputs).unsqueeze(0).to(device)
        with torch.no_grad():
            output = model(sentence, trg_tensor)
        best_guess = output.argmax(2)[:, -1].item()
        outputs.append(best_guess)
    record["translation"] = outputs
    return record


if __name__ == "__main__":
    print(train(build()))
