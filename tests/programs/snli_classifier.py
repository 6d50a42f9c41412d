"""pytorch/examples' snli (model.py, train.py) at a tiny size on synthetic sentence pairs.

Its idioms: ``Bottle``, a mixin whose ``forward`` folds the first two dims and calls
``super(Bottle, self).forward(input.view(size[0] * size[1], -1))``, and ``class Linear(Bottle, nn.Linear)``;
an LSTM ``Encoder`` over time-major embeddings with ``h0 = c0 = inputs.new_zeros(state_shape)`` from a
tuple and ``ht[-1]`` or ``ht[-2:].transpose(0, 1).contiguous().view(batch_size, -1)`` for a bidirectional
one; ``self.relu`` and ``self.dropout`` modules reused three times in one ``nn.Sequential``; fixed
embeddings by ``.detach()`` or word vectors copied by ``model.embed.weight.data.copy_(vectors)``; the
training loop's ``(torch.max(answer, 1)[1].view(batch.label.size()) == batch.label).sum().item()``; the
log line by a template of ``{:>6.0f}``... fields; snapshots of the whole model by ``torch.save(model,
snapshot_path)`` with the accuracy and loss in the file name, old ones removed by ``glob``, and the best
one loaded back by ``torch.load(path, weights_only=False)`` to the same dev accuracy.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from types import SimpleNamespace

import numpy as np
from shim import nn, optim, torch

DROPOUT = 0.2
BIRNN = True
FIX_EMB = True
PROJECTION = True
WORD_VECTORS = True
N_LAYERS = 1
VOCAB, D_EMBED, D_PROJ, D_HIDDEN, D_OUT = 20, 8, 8, 8, 3


class Bottle(nn.Module):
    def forward(self, input):
        if len(input.size()) <= 2:
            return super(Bottle, self).forward(input)  # noqa: UP008 (as the example writes it)
        size = input.size()[:2]
        out = super(Bottle, self).forward(input.view(size[0] * size[1], -1))  # noqa: UP008
        return out.view(size[0], size[1], -1)


class Linear(Bottle, nn.Linear):
    pass


class Encoder(nn.Module):
    def __init__(self, config):
        super(Encoder, self).__init__()  # noqa: UP008
        self.config = config
        input_size = config.d_proj if config.projection else config.d_embed
        dropout = 0 if config.n_layers == 1 else config.dp_ratio
        self.rnn = nn.LSTM(
            input_size=input_size,
            hidden_size=config.d_hidden,
            num_layers=config.n_layers,
            dropout=dropout,
            bidirectional=config.birnn,
        )

    def forward(self, inputs):
        batch_size = inputs.size()[1]
        state_shape = self.config.n_cells, batch_size, self.config.d_hidden
        h0 = c0 = inputs.new_zeros(state_shape)
        outputs, (ht, ct) = self.rnn(inputs, (h0, c0))
        return ht[-1] if not self.config.birnn else ht[-2:].transpose(0, 1).contiguous().view(batch_size, -1)


class SNLIClassifier(nn.Module):
    def __init__(self, config):
        super(SNLIClassifier, self).__init__()  # noqa: UP008
        self.config = config
        self.embed = nn.Embedding(config.n_embed, config.d_embed)
        self.projection = Linear(config.d_embed, config.d_proj)
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(p=config.dp_ratio)
        self.relu = nn.ReLU()
        seq_in_size = 2 * config.d_hidden
        if self.config.birnn:
            seq_in_size *= 2
        lin_config = [seq_in_size] * 2
        self.out = nn.Sequential(
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(seq_in_size, config.d_out),
        )

    def forward(self, batch):
        prem_embed = self.embed(batch.premise)
        hypo_embed = self.embed(batch.hypothesis)
        if self.config.fix_emb:
            prem_embed = prem_embed.detach()
            hypo_embed = hypo_embed.detach()
        if self.config.projection:
            prem_embed = self.relu(self.projection(prem_embed))
            hypo_embed = self.relu(self.projection(hypo_embed))
        premise = self.encoder(prem_embed)
        hypothesis = self.encoder(hypo_embed)
        scores = self.out(torch.cat([premise, hypothesis], 1))
        return scores


def make_config():
    config = SimpleNamespace(
        n_embed=VOCAB,
        d_embed=D_EMBED,
        d_proj=D_PROJ,
        d_hidden=D_HIDDEN,
        d_out=D_OUT,
        n_layers=N_LAYERS,
        dp_ratio=DROPOUT,
        birnn=BIRNN,
        fix_emb=FIX_EMB,
        projection=PROJECTION,
    )
    config.n_cells = config.n_layers
    # double the number of cells for bidirectional networks
    if config.birnn:
        config.n_cells *= 2
    return config


def make_batches(seed, n_batches, batch_size=4, length=5):
    """Pairs whose label says whether the hypothesis repeats, reverses or replaces the premise."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_batches):
        premise = rng.integers(1, VOCAB, size=(length, batch_size))
        label = rng.integers(0, D_OUT, size=batch_size)
        hypothesis = premise.copy()
        hypothesis[:, label == 1] = premise[::-1, label == 1]
        hypothesis[:, label == 2] = rng.integers(1, VOCAB, size=(length, int((label == 2).sum())))
        batches.append(
            SimpleNamespace(
                premise=torch.tensor(premise),
                hypothesis=torch.tensor(hypothesis),
                label=torch.tensor(label),
                batch_size=batch_size,
            )
        )
    return batches


def build():
    torch.manual_seed(0)
    config = make_config()
    model = SNLIClassifier(config)
    if WORD_VECTORS:
        vectors = torch.tensor(np.cos(np.arange(VOCAB * D_EMBED, dtype=np.float32).reshape(VOCAB, D_EMBED)))
        model.embed.weight.data.copy_(vectors)
    return model


def train(model, steps=4):
    device = torch.device("cpu")
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    opt = optim.Adam(model.parameters(), lr=0.01)
    train_iter, dev_iter = make_batches(1, steps), make_batches(2, 2)
    iterations, best_dev_acc, save_every, dev_every = 0, -1, 2, 2
    dev_log_template = " ".join(
        "{:>6.0f},{:>5.0f},{:>9.0f},{:>5.0f}/{:<5.0f} {:>7.0f}%,{:>8.6f},{:8.6f},{:12.4f},{:12.4f}".split(",")
    )
    save_path = tempfile.mkdtemp()
    record = {"losses": [], "train_acc": [], "dev_acc": [], "log": [], "snapshots": []}
    try:
        n_correct, n_total = 0, 0
        for batch_idx, batch in enumerate(train_iter):
            # switch model to training mode, clear gradient accumulators
            model.train()
            opt.zero_grad()
            iterations += 1
            # forward pass
            answer = model(batch)
            # calculate accuracy of predictions in the current batch
            n_correct += (torch.max(answer, 1)[1].view(batch.label.size()) == batch.label).sum().item()
            n_total += batch.batch_size
            train_acc = 100.0 * n_correct / n_total
            # calculate loss of the network output with respect to training labels
            loss = criterion(answer, batch.label)
            # backpropagate and update optimizer learning rate
            loss.backward()
            opt.step()
            record["losses"].append(loss.item())
            record["train_acc"].append(train_acc)

            # checkpoint model periodically
            if iterations % save_every == 0:
                snapshot_prefix = os.path.join(save_path, "snapshot")
                snapshot_path = snapshot_prefix + "_acc_{:.4f}_loss_{:.6f}_iter_{}_model.pt".format(  # noqa: UP032
                    train_acc, loss.item(), iterations
                )
                torch.save(model, snapshot_path)
                for f in glob.glob(snapshot_prefix + "*"):
                    if f != snapshot_path:
                        os.remove(f)

            # evaluate performance on validation set periodically
            if iterations % dev_every == 0:
                # switch model to evaluation mode
                model.eval()
                # calculate accuracy on validation set
                n_dev_correct, dev_loss = 0, 0
                with torch.no_grad():
                    for dev_batch_idx, dev_batch in enumerate(dev_iter):  # noqa: B007 (as the example)
                        answer = model(dev_batch)
                        n_dev_correct += (
                            (torch.max(answer, 1)[1].view(dev_batch.label.size()) == dev_batch.label).sum().item()
                        )
                        dev_loss = criterion(answer, dev_batch.label)
                dev_acc = 100.0 * n_dev_correct / sum(b.batch_size for b in dev_iter)
                line = dev_log_template.format(
                    0.0,
                    0,
                    iterations,
                    1 + batch_idx,
                    len(train_iter),
                    100.0 * (1 + batch_idx) / len(train_iter),
                    round(loss.item(), 3),
                    round(dev_loss.item(), 3),
                    train_acc,
                    dev_acc,
                )
                record["log"].append(line)
                record["dev_acc"].append(dev_acc)
                # update best validation set accuracy
                if dev_acc > best_dev_acc:
                    # found a model with better validation set accuracy
                    best_dev_acc = dev_acc
                    snapshot_prefix = os.path.join(save_path, "best_snapshot")
                    snapshot_path = snapshot_prefix + "_devacc_{}__iter_{}_model.pt".format(dev_acc, iterations)  # noqa: UP032
                    # save model, delete previous 'best_snapshot' files
                    torch.save(model, snapshot_path)
                    for f in glob.glob(snapshot_prefix + "*"):
                        if f != snapshot_path:
                            os.remove(f)
        record["snapshots"] = len(glob.glob(os.path.join(save_path, "*.pt")))
        # the best snapshot, loaded back as the whole model: its dev accuracy again
        (best_path,) = glob.glob(os.path.join(save_path, "best_snapshot*"))
        best = torch.load(best_path, weights_only=False)
        best.eval()
        with torch.no_grad():
            correct = sum((best(b).argmax(1) == b.label).sum().item() for b in dev_iter)
        record["reloaded_dev_acc"] = 100.0 * correct / sum(b.batch_size for b in dev_iter)
        record["reloaded_is_snli"] = type(best).__name__ == "SNLIClassifier" and isinstance(best.projection, Bottle)
    finally:
        shutil.rmtree(save_path)
    return record


if __name__ == "__main__":
    print(train(build()))
