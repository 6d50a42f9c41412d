"""A tiny Transformer language model: nn.TransformerEncoder with a causal mask, sinusoidal positions,
weight tying, AdamW, a cosine schedule and gradient clipping."""

from __future__ import annotations

import math

from shim import lr_scheduler, nn, optim, torch

DROPOUT = 0.1
VOCAB, D_MODEL, SEQ_LEN, BATCH = 11, 16, 8, 4


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class TransformerLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = PositionalEncoding(D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, nhead=2, dim_feedforward=32, dropout=DROPOUT, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # weight tying

    def forward(self, idx):
        t = idx.size(1)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        x = self.pos(self.embed(idx) * math.sqrt(D_MODEL))
        return self.head(self.encoder(x, mask=mask))


def build():
    torch.manual_seed(0)
    return TransformerLM()


def batches(step):
    """Counting sequences modulo VOCAB, each starting elsewhere: the next token is predictable."""
    starts = torch.tensor([(step * 3 + b * 5) % VOCAB for b in range(BATCH)])
    seq = (starts.unsqueeze(1) + torch.arange(SEQ_LEN + 1)) % VOCAB
    return seq[:, :-1], seq[:, 1:]


def train(model, steps=5):
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    criterion = nn.CrossEntropyLoss()
    losses = []
    model.train()
    for step in range(steps):
        x, y = batches(step)
        logits = model(x)
        loss = criterion(logits.view(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        x, y = batches(steps)
        accuracy = (model(x).argmax(-1) == y).float().mean().item()
    return {"losses": losses, "accuracy": accuracy, "tied": model.head.weight is model.embed.weight}


if __name__ == "__main__":
    print(train(build(), steps=40))
