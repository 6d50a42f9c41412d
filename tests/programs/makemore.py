"""makemore (karpathy/makemore makemore.py) at tiny sizes: its Bigram, MLP, RNN, GRU and BoW
language models on a few words, each trained a few steps with AdamW.

Its idioms: a Parameter table indexed by a batch of tokens (Bigram); torch.roll of the index tensor
then a write into its first column (MLP); a start state expanded over the batch, cells of cat,
sigmoid and tanh, torch.stack of the hidden states (RNN, GRU); a zeros attention masked by a tril
buffer and softmaxed (BoW); a Dataset building x and y with slice writes and -1 targets for
cross_entropy(ignore_index=-1); an InfiniteDataLoader over RandomSampler(replacement=True,
num_samples=int(1e10)) with pin_memory; model.zero_grad(set_to_none=True); evaluation under
@torch.inference_mode() with a shuffled DataLoader; torch.save and torch.load of a state_dict;
generation with topk, `logits[logits < v[:, [-1]]] = -inf` and a greedy topk(probs, k=1)."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass

from shim import DataLoader, F, nn, torch

Dataset = torch.utils.data.Dataset

SHUFFLE = True
TYPES = ("bigram", "mlp", "rnn", "gru", "bow")


@dataclass
class ModelConfig:
    block_size: int = None
    vocab_size: int = None
    n_layer: int = 2
    n_embd: int = 8
    n_embd2: int = 8
    n_head: int = 2


class CausalBoW(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.register_buffer(
            "bias",
            torch.tril(torch.ones(config.block_size, config.block_size)).view(1, config.block_size, config.block_size),
        )

    def forward(self, x):
        B, T, C = x.size()
        att = torch.zeros((B, T, T), device=x.device)
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ x
        return y


class BoWBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.cbow = CausalBoW(config)
        self.mlp = nn.ModuleDict(
            dict(c_fc=nn.Linear(config.n_embd, config.n_embd2), c_proj=nn.Linear(config.n_embd2, config.n_embd))
        )
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x)))

    def forward(self, x):
        x = x + self.cbow(x)
        x = x + self.mlpf(x)
        return x


class BoW(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.context_block = BoWBlock(config)
        self.lm_head = nn.Linear(config.n_embd, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
        tok_emb = self.wte(idx)
        pos_emb = self.wpe(pos)
        x = tok_emb + pos_emb
        x = self.context_block(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class RNNCell(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.xh_to_h = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        ht = F.tanh(self.xh_to_h(xh))
        return ht


class GRUCell(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.xh_to_z = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_r = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_hbar = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        r = F.sigmoid(self.xh_to_r(xh))
        hprev_reset = r * hprev
        xhr = torch.cat([xt, hprev_reset], dim=1)
        hbar = F.tanh(self.xh_to_hbar(xhr))
        z = F.sigmoid(self.xh_to_z(xh))
        ht = (1 - z) * hprev + z * hbar
        return ht


class RNN(nn.Module):
    def __init__(self, config, cell_type):
        super().__init__()
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        self.start = nn.Parameter(torch.zeros(1, config.n_embd2))
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        if cell_type == "rnn":
            self.cell = RNNCell(config)
        elif cell_type == "gru":
            self.cell = GRUCell(config)
        self.lm_head = nn.Linear(config.n_embd2, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        emb = self.wte(idx)
        hprev = self.start.expand((b, -1))
        hiddens = []
        for i in range(t):
            xt = emb[:, i, :]
            ht = self.cell(xt, hprev)
            hprev = ht
            hiddens.append(ht)
        hidden = torch.stack(hiddens, 1)
        logits = self.lm_head(hidden)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        self.wte = nn.Embedding(config.vocab_size + 1, config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(self.block_size * config.n_embd, config.n_embd2),
            nn.Tanh(),
            nn.Linear(config.n_embd2, self.vocab_size),
        )

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        embs = []
        for k in range(self.block_size):  # noqa: B007 (makemore's loop, as written)
            tok_emb = self.wte(idx)
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size
            embs.append(tok_emb)
        x = torch.cat(embs, -1)
        logits = self.mlp(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class Bigram(nn.Module):
    def __init__(self, config):
        super().__init__()
        n = config.vocab_size
        self.logits = nn.Parameter(torch.zeros((n, n)))

    def get_block_size(self):
        return 1

    def forward(self, idx, targets=None):
        logits = self.logits[idx]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
    block_size = model.get_block_size()
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        if do_sample:
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


@torch.inference_mode()
def evaluate(model, dataset, batch_size=50, max_batches=None):
    model.eval()
    loader = DataLoader(dataset, shuffle=SHUFFLE, batch_size=batch_size, num_workers=0)
    losses = []
    for i, batch in enumerate(loader):
        batch = [t.to("cpu") for t in batch]
        X, Y = batch
        logits, loss = model(X, Y)
        losses.append(loss.item())
        if max_batches is not None and i >= max_batches:
            break
    mean_loss = torch.tensor(losses).mean().item()
    model.train()
    return mean_loss


class CharDataset(Dataset):
    def __init__(self, words, chars, max_word_length):
        self.words = words
        self.chars = chars
        self.max_word_length = max_word_length
        self.stoi = {ch: i + 1 for i, ch in enumerate(chars)}
        self.itos = {i: s for s, i in self.stoi.items()}

    def __len__(self):
        return len(self.words)

    def contains(self, word):
        return word in self.words

    def get_vocab_size(self):
        return len(self.chars) + 1

    def get_output_length(self):
        return self.max_word_length + 1

    def encode(self, word):
        ix = torch.tensor([self.stoi[w] for w in word], dtype=torch.long)
        return ix

    def decode(self, ix):
        word = "".join(self.itos[i] for i in ix)
        return word

    def __getitem__(self, idx):
        word = self.words[idx]
        ix = self.encode(word)
        x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        y = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        x[1 : 1 + len(ix)] = ix
        y[: len(ix)] = ix
        y[len(ix) + 1 :] = -1
        return x, y


WORDS = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper", "evelyn", "abigail", "ella", "avery"]


def create_datasets(words):
    chars = sorted(list(set("".join(words))))
    max_word_length = max(len(w) for w in words)
    test_set_size = min(1000, int(len(words) * 0.25))
    rp = torch.randperm(len(words)).tolist() if SHUFFLE else list(range(len(words)))
    train_words = [words[i] for i in rp[:-test_set_size]]
    test_words = [words[i] for i in rp[-test_set_size:]]
    return CharDataset(train_words, chars, max_word_length), CharDataset(test_words, chars, max_word_length)


class InfiniteDataLoader:
    def __init__(self, dataset, **kwargs):
        if SHUFFLE:
            train_sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        else:
            train_sampler = torch.utils.data.SequentialSampler(dataset)
        self.train_loader = DataLoader(dataset, sampler=train_sampler, **kwargs)
        self.data_iter = iter(self.train_loader)

    def next(self):
        try:
            batch = next(self.data_iter)
        except StopIteration:
            self.data_iter = iter(self.train_loader)
            batch = next(self.data_iter)
        return batch


def _config():
    chars = sorted(set("".join(WORDS)))
    return ModelConfig(vocab_size=len(chars) + 1, block_size=max(len(w) for w in WORDS) + 1)


def build():
    torch.manual_seed(3407)
    torch.cuda.manual_seed_all(3407)
    config = _config()
    models = {
        "bigram": Bigram(config),
        "mlp": MLP(config),
        "rnn": RNN(config, cell_type="rnn"),
        "gru": RNN(config, cell_type="gru"),
        "bow": BoW(config),
    }
    return nn.ModuleDict({t: models[t] for t in TYPES})


def train(models, steps=3):
    work_dir = tempfile.mkdtemp()
    train_dataset, test_dataset = create_datasets(WORDS)
    record = {"losses": [], "params": [], "eval": [], "samples": []}
    # "losses": each step's losses of every model, summed (the harness reads one number a step)
    for name, model in models.items():
        model.to("cpu")
        record["params"].append(sum(p.numel() for p in model.parameters()))
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-2, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)
        batch_loader = InfiniteDataLoader(train_dataset, batch_size=4, pin_memory=True, num_workers=0)
        if not record["losses"]:
            record["losses"] = [0.0] * steps
        for step in range(steps):
            batch = batch_loader.next()
            batch = [t.to("cpu") for t in batch]
            X, Y = batch
            logits, loss = model(X, Y)
            model.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            record["losses"][step] += loss.item()
            record[f"losses_{name}"] = record.get(f"losses_{name}", []) + [loss.item()]
        train_loss = evaluate(model, train_dataset, batch_size=5, max_batches=1)
        test_loss = evaluate(model, test_dataset, batch_size=5, max_batches=1)
        record["eval"].append([train_loss, test_loss])
        out_path = os.path.join(work_dir, f"{name}.pt")
        torch.save(model.state_dict(), out_path)
        model.load_state_dict(torch.load(out_path))
        X_init = torch.zeros(2, 1, dtype=torch.long).to("cpu")
        steps_out = 4  # makemore generates get_output_length() - 1 tokens; 4 keep the test short
        # greedy (do_sample=False): the same tokens in either library
        X_samp = generate(model, X_init, steps_out, top_k=3, do_sample=False).to("cpu")
        for i in range(X_samp.size(0)):
            row = X_samp[i, 1:].tolist()
            crop_index = row.index(0) if 0 in row else len(row)
            record["samples"].append(train_dataset.decode(row[:crop_index]))
    assert all(math.isfinite(x) for x in record["losses"])
    shutil.rmtree(work_dir)
    return record


if __name__ == "__main__":
    print(train(build(), steps=10))
