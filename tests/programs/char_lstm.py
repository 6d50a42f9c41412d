"""A character-level LSTM language model: Embedding, LSTM, Linear; carried hidden state; greedy sampling."""

from __future__ import annotations

from shim import F, nn, optim, torch

TEXT = "the quick brown fox jumps over the lazy dog. " * 4
SEQ_LEN = 8
BATCH = 4


class CharLSTM(nn.Module):
    def __init__(self, vocab, embed=8, hidden=16, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)
        self.hidden, self.layers = hidden, layers

    def init_hidden(self, batch):
        weight = next(self.parameters())
        return (weight.new_zeros(self.layers, batch, self.hidden), weight.new_zeros(self.layers, batch, self.hidden))

    def forward(self, idx, state):
        out, state = self.lstm(self.embed(idx), state)
        return self.head(out), state


def vocabulary():
    chars = sorted(set(TEXT))
    return chars, {c: i for i, c in enumerate(chars)}


def build():
    torch.manual_seed(0)
    return CharLSTM(len(vocabulary()[0]))


def train(model, steps=5):
    chars, stoi = vocabulary()
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    state = model.init_hidden(BATCH)
    losses = []
    model.train()
    for step in range(steps):
        starts = [(step * SEQ_LEN + b * 37) % (len(data) - SEQ_LEN - 1) for b in range(BATCH)]
        x = torch.stack([data[s : s + SEQ_LEN] for s in starts])
        y = torch.stack([data[s + 1 : s + 1 + SEQ_LEN] for s in starts])
        state = tuple(h.detach() for h in state)  # truncated backpropagation through time
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        idx = torch.tensor([[stoi["t"]]])
        state, text = model.init_hidden(1), "t"
        for _ in range(10):
            logits, state = model(idx, state)
            idx = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            text += chars[idx.item()]
    return {"losses": losses, "sample": text}


if __name__ == "__main__":
    print(train(build(), steps=30))
