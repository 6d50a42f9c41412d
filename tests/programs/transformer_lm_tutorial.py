"""The official tutorial "Language Modeling with nn.Transformer and torchtext"
(beginner_source/transformer_tutorial.py), at a tiny size on a made-up corpus in place of WikiText-2.
``BEST`` picks how the best model is kept: ``copy.deepcopy(model)`` (the tutorial's first version) or its
state_dict saved to a file and loaded back (the later one).

Its idioms: ``TransformerModel`` with ``self.model_type = 'Transformer'``, ``TransformerEncoderLayer(d_model,
nhead, d_hid, dropout)`` (sequence first) in a ``TransformerEncoder``, ``init_weights`` by
``self.embedding.weight.data.uniform_(-initrange, initrange)`` and ``self.linear.bias.data.zero_()``,
``self.embedding(src) * math.sqrt(self.d_model)``, a mask from
``nn.Transformer.generate_square_subsequent_mask(len(src)).to(device)`` when none is given;
``PositionalEncoding`` with ``torch.arange(max_len).unsqueeze(1)``, ``div_term = torch.exp(torch.arange(0,
d_model, 2) * (-math.log(10000.0) / d_model))``, ``pe = torch.zeros(max_len, 1, d_model)``, ``pe[:, 0, 0::2] =
torch.sin(position * div_term)`` and ``register_buffer('pe', pe)``, ``x + self.pe[:x.size(0)]``; ``data_process``
by ``torch.cat(tuple(filter(lambda t: t.numel() > 0, data)))``; ``batchify`` by ``data[:seq_len * bsz]`` and
``data.view(bsz, seq_len).t().contiguous()``; ``get_batch`` by ``min(bptt, len(source) - 1 - i)`` and
``source[i+1:i+1+seq_len].reshape(-1)``; SGD at lr 5.0 with ``StepLR(optimizer, 1.0, gamma=0.95)`` and
``scheduler.get_last_lr()[0]``; ``torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)``; ``math.exp`` of the
loss; ``evaluate``'s ``total_loss += seq_len * criterion(output_flat, targets).item()`` over ``len(eval_data) -
1``; and ``best_val_loss = float('inf')``.
"""

from __future__ import annotations

import copy
import math
import os
import tempfile

from shim import nn, torch

DROPOUT = 0.2
BEST = "deepcopy"
device = "cpu"
bptt = 6
emsize = 16  # embedding dimension
d_hid = 32  # dimension of the feedforward network model in ``nn.TransformerEncoder``
nlayers = 2  # number of ``nn.TransformerEncoderLayer`` in ``nn.TransformerEncoder``
nhead = 2  # number of heads in ``nn.MultiheadAttention``

corpus = [
    "the cat sat on the mat",
    "",
    "the dog sat on the log",
    "a cat saw a dog on the mat",
    "the dog saw the cat",
    "",
    "a bird sat on a log and the cat saw the bird",
]
valid_corpus = ["the cat saw a bird on the log", "a dog sat on the mat"]


class Vocab:
    """torchtext's ``build_vocab_from_iterator(..., specials=['<unk>'])`` with ``set_default_index``, by hand."""

    def __init__(self, lines):
        self.itos = ["<unk>"] + sorted({word for line in lines for word in line.split()})
        self.stoi = {word: i for i, word in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self.stoi.get(token, 0) for token in tokens]


vocab = Vocab(corpus)
tokenizer = str.split
ntokens = len(vocab)  # size of vocabulary


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.5):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(device)
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        """Arguments: x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``"""
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


def build():
    torch.manual_seed(0)
    return TransformerModel(ntokens, emsize, nhead, d_hid, nlayers, DROPOUT).to(device)


def data_process(raw_text_iter):
    """Converts raw text into a flat Tensor."""
    data = [torch.tensor(vocab(tokenizer(item)), dtype=torch.long) for item in raw_text_iter]
    return torch.cat(tuple(filter(lambda t: t.numel() > 0, data)))


def batchify(data, bsz):
    """Divides the data into ``bsz`` separate sequences, removing extra elements that wouldn't cleanly fit."""
    seq_len = data.size(0) // bsz
    data = data[: seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


def train(model, steps=3):
    train_data = batchify(data_process(corpus), 2)
    val_data = batchify(data_process(valid_corpus), 2)
    criterion = nn.CrossEntropyLoss()
    lr = 5.0  # learning rate
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
    losses, logged = [], []

    def train_epoch(model):
        model.train()  # turn on train mode
        total_loss = 0.0
        log_interval = 2
        num_batches = len(train_data) // bptt
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            if len(losses) == steps:
                break
            data, targets = get_batch(train_data, i)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            loss = criterion(output_flat, targets)

            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()

            total_loss += loss.item()
            losses.append(loss.item())
            if batch % log_interval == 0 and batch > 0:
                lr = scheduler.get_last_lr()[0]
                cur_loss = total_loss / log_interval
                ppl = math.exp(cur_loss)
                logged.append(
                    f"| {batch:5d}/{num_batches:5d} batches | lr {lr:02.2f} | loss {cur_loss:5.2f} | ppl {ppl:8.2f}"
                )
                total_loss = 0

    def evaluate(model, eval_data):
        model.eval()  # turn on evaluation mode
        total_loss = 0.0
        with torch.no_grad():
            for i in range(0, eval_data.size(0) - 1, bptt):
                data, targets = get_batch(eval_data, i)
                seq_len = data.size(0)
                output = model(data)
                output_flat = output.view(-1, ntokens)
                total_loss += seq_len * criterion(output_flat, targets).item()
        return total_loss / (len(eval_data) - 1)

    best_val_loss = float("inf")
    best_model = None
    best_model_params_path = os.path.join(tempfile.mkdtemp(), "best_model_params.pt")
    val_losses = []
    while len(losses) < steps:
        train_epoch(model)
        val_loss = evaluate(model, val_data)
        val_ppl = math.exp(val_loss)
        val_losses.append([val_loss, val_ppl, scheduler.get_last_lr()[0]])
        if val_loss < best_val_loss:
            best_val_loss = val_loss
            if BEST == "deepcopy":
                best_model = copy.deepcopy(model)
            else:
                torch.save(model.state_dict(), best_model_params_path)
        scheduler.step()
    if BEST == "deepcopy":
        model = best_model
    else:
        model.load_state_dict(torch.load(best_model_params_path))  # load best model states
    test_loss = evaluate(model, val_data)
    return {
        "losses": losses,
        "logged": logged,
        "val": val_losses,
        "test": [test_loss, math.exp(test_loss)],
        "batches": [list(train_data.shape), train_data[:, 1].tolist()],
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
