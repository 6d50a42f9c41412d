"""The official tutorial "Language Translation with nn.Transformer", at a tiny size on a made-up
parallel corpus of token ids (the tutorial's torchtext vocabularies and spaCy tokenizers are left
out): `Seq2SeqTransformer` over `nn.Transformer(batch_first=False)`, `PositionalEncoding` with its
table registered as a buffer and dropout, `TokenEmbedding` scaled by `math.sqrt(emb_size)`,
`generate_square_subsequent_mask` by `(torch.triu(torch.ones((sz, sz))) == 1).transpose(0, 1)` then
`float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))`, `create_mask` with
boolean `src_padding_mask = (src == PAD_IDX).transpose(0, 1)`, `nn.init.xavier_uniform_` over every
`p.dim() > 1`, `CrossEntropyLoss(ignore_index=PAD_IDX)` on `tgt_out.reshape(-1)`, Adam with
`betas=(0.9, 0.98), eps=1e-9`, `pad_sequence` in the collate function, and `greedy_decode`, which grows
`ys` by `torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)` until EOS."""

from __future__ import annotations

import math

from shim import nn, torch

pad_sequence = nn.utils.rnn.pad_sequence

DROPOUT = 0.1
UNK_IDX, PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2, 3
SRC_VOCAB_SIZE = 12
TGT_VOCAB_SIZE = 12
EMB_SIZE = 16
NHEAD = 2
FFN_HID_DIM = 32
NUM_ENCODER_LAYERS = 1
NUM_DECODER_LAYERS = 1

# a made-up corpus: the "translation" of a sentence of ids is each id shifted by one, reversed
SOURCES = [[4, 5, 6], [7, 8], [5, 9, 10, 4], [6, 6, 7], [8, 4], [10, 9, 5]]


def _translate_ids(ids):
    return [(i - 4 + 1) % 8 + 4 for i in reversed(ids)]


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 50):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)

        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(
        self,
        num_encoder_layers,
        num_decoder_layers,
        emb_size,
        nhead,
        src_vocab_size,
        tgt_vocab_size,
        dim_feedforward=512,
        dropout=0.1,
    ):
        super().__init__()
        self.transformer = nn.Transformer(
            d_model=emb_size,
            nhead=nhead,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
        )
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(
            src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask, memory_key_padding_mask
        )
        return self.generator(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def generate_square_subsequent_mask(sz):
    mask = (torch.triu(torch.ones((sz, sz))) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
    return mask


def create_mask(src, tgt):
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]

    tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
    src_mask = torch.zeros((src_seq_len, src_seq_len)).type(torch.bool)

    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def collate_fn(batch):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(torch.cat((torch.tensor([BOS_IDX]), torch.tensor(src_sample), torch.tensor([EOS_IDX]))))
        tgt_batch.append(torch.cat((torch.tensor([BOS_IDX]), torch.tensor(tgt_sample), torch.tensor([EOS_IDX]))))
    src_batch = pad_sequence(src_batch, padding_value=PAD_IDX)
    tgt_batch = pad_sequence(tgt_batch, padding_value=PAD_IDX)
    return src_batch, tgt_batch


def build():
    torch.manual_seed(0)
    transformer = Seq2SeqTransformer(
        NUM_ENCODER_LAYERS, NUM_DECODER_LAYERS, EMB_SIZE, NHEAD, SRC_VOCAB_SIZE, TGT_VOCAB_SIZE, FFN_HID_DIM, DROPOUT
    )
    for p in transformer.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return transformer


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long)
    for _ in range(max_len - 1):
        tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask)
        out = out.transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()

        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


def train(model, steps=3):
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0001 * 20, betas=(0.9, 0.98), eps=1e-9)
    pairs = [(s, _translate_ids(s)) for s in SOURCES]
    batches = [collate_fn(pairs[i : i + 3]) for i in range(0, len(pairs), 3)]
    losses = []
    for step in range(steps):
        model.train()
        src, tgt = batches[step % len(batches)]
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    src = torch.tensor([BOS_IDX, 4, 5, 6, EOS_IDX]).view(-1, 1)
    num_tokens = src.shape[0]
    src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)
    tgt_tokens = greedy_decode(model, src, src_mask, max_len=num_tokens + 5, start_symbol=BOS_IDX).flatten()
    with torch.no_grad():
        src, tgt = batches[0]
        tgt_input = tgt[:-1, :]
        masks = create_mask(src, tgt_input)
        logits = model(src, tgt_input, *masks, masks[2])
    return {
        "losses": losses,
        "decoded": tgt_tokens.tolist(),
        "eval_logits": logits.sum().item(),
        "mask": generate_square_subsequent_mask(3).flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
