"""A BERT-style encoder fine-tuned for sequence classification, with a masked-token head, as
Hugging Face-style training loops are written.

Idioms: ``nn.Embedding(padding_idx=PAD)`` word, position and token-type embeddings summed and
normalised by a module attribute named ``LayerNorm``; ``nn.TransformerEncoder`` over
``nn.TransformerEncoderLayer(batch_first=True, norm_first=True, activation="gelu")`` with
``enable_nested_tensor=False`` and a boolean ``src_key_padding_mask`` made from ``input_ids ==
PAD``; ``torch.arange(...).unsqueeze(0).expand_as(input_ids)`` positions; CLS pooling through a
``Tanh`` pooler; ``F.cross_entropy`` with ``label_smoothing`` for the class and with
``ignore_index=-100`` over the masked tokens; AdamW parameter groups split by name (no decay on
``bias`` and ``LayerNorm.weight``); a ``get_linear_schedule_with_warmup``-style ``LambdaLR``;
``clip_grad_norm_``; ``model.eval()`` and ``torch.no_grad()`` for the metrics.
"""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

DROPOUT = 0.1
DEVICE = "cpu"
PAD, CLS, MASK = 0, 1, 2
VOCAB, HIDDEN, HEADS, LAYERS, MAX_LEN, CLASSES, BATCH = 24, 16, 2, 2, 12, 3, 4


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN, padding_idx=PAD)
        self.position_embeddings = nn.Embedding(MAX_LEN, HIDDEN)
        self.token_type_embeddings = nn.Embedding(2, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        embeddings = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(position_ids)
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.LayerNorm(embeddings))


class BertForSequenceClassification(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        layer = nn.TransformerEncoderLayer(
            d_model=HIDDEN,
            nhead=HEADS,
            dim_feedforward=4 * HIDDEN,
            dropout=DROPOUT,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=LAYERS, enable_nested_tensor=False)
        self.final_norm = nn.LayerNorm(HIDDEN)
        self.pooler = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.Tanh())
        self.dropout = nn.Dropout(DROPOUT)
        self.classifier = nn.Linear(HIDDEN, CLASSES)
        self.mlm_head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, input_ids, attention_mask):
        hidden = self.embeddings(input_ids)
        hidden = self.encoder(hidden, src_key_padding_mask=~attention_mask.bool())
        hidden = self.final_norm(hidden)
        pooled = self.pooler(hidden[:, 0])
        return self.classifier(self.dropout(pooled)), self.mlm_head(hidden)


def build():
    torch.manual_seed(0)
    return BertForSequenceClassification()


def make_batch(step):
    """Sequences of random length; the class is the most frequent of the tokens 3, 4 and 5 (ties
    to the smallest); every fourth real token is masked for the masked-token loss."""
    rng = np.random.default_rng(100 + step)
    ids = np.full((BATCH, MAX_LEN), PAD, dtype=np.int64)
    mlm_labels = np.full((BATCH, MAX_LEN), -100, dtype=np.int64)
    labels = np.zeros(BATCH, dtype=np.int64)
    for b in range(BATCH):
        length = int(rng.integers(4, MAX_LEN + 1))
        tokens = rng.integers(3, VOCAB, size=length - 1)
        labels[b] = int(np.argmax([np.sum(tokens == k) for k in (3, 4, 5)]))
        ids[b, 0] = CLS
        ids[b, 1:length] = tokens
        for position in range(1, length, 4):
            mlm_labels[b, position] = ids[b, position]
            ids[b, position] = MASK
    attention_mask = (ids != PAD).astype(np.int64)
    return torch.tensor(ids), torch.tensor(attention_mask), torch.tensor(labels), torch.tensor(mlm_labels)


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    def lr_lambda(current_step: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


def train(model, steps=5):
    device = torch.device(DEVICE)
    model.to(device)
    no_decay = ["bias", "LayerNorm.weight"]
    grouped = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": 0.01,
        },
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = optim.AdamW(grouped, lr=5e-3, eps=1e-8)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=steps + 1)
    losses, lrs = [], []
    model.train()
    for step in range(steps):
        input_ids, attention_mask, labels, mlm_labels = (t.to(device) for t in make_batch(step))
        logits, mlm_logits = model(input_ids, attention_mask)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        loss = loss + F.cross_entropy(mlm_logits.view(-1, VOCAB), mlm_labels.view(-1), ignore_index=-100)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    correct = total = 0
    with torch.no_grad():
        input_ids, attention_mask, labels, _ = (t.to(device) for t in make_batch(1000))
        logits, _ = model(input_ids, attention_mask)
        predictions = torch.argmax(logits, dim=-1)
        correct += (predictions == labels).sum().item()
        total += labels.size(0)
        probabilities = F.softmax(logits, dim=-1)
    return {
        "losses": losses,
        "lrs": lrs,
        "accuracy": correct / total,
        "probabilities": probabilities.cpu().numpy().ravel().tolist(),
        "decay_groups": [len(g["params"]) for g in optimizer.param_groups],
    }


if __name__ == "__main__":
    print(train(build(), steps=40))
