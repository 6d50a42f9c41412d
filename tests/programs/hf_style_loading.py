"""Fine-tuning from a "pretrained" checkpoint the way Hugging Face ``from_pretrained`` loads one.

Idioms checked: a checkpoint whose keys use another naming (``bert.encoder.layer.0...``) renamed by
regular expressions, GPT-2 ``Conv1D`` weights transposed on the way, the task head missing and the
pretraining heads unexpected, loaded with ``load_state_dict(sd, strict=False)`` and its
``_IncompatibleKeys`` report (keys and printed form); the "low_cpu_mem_usage" path, which builds the
model on the meta device and loads with ``assign=True``; frozen embeddings (``requires_grad_(False)``);
AdamW groups split by parameter name (``no_decay = ["bias", "LayerNorm.weight"]``); a linear warmup
``LambdaLR``, its ``get_last_lr()`` and ``state_dict()``; and the optimizer's ``state_dict()`` group keys.
"""

from __future__ import annotations

import re

import numpy as np
from shim import F, lr_scheduler, nn, optim, torch

HIDDEN, VOCAB, CLASSES = 16, 24, 3


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.Linear(HIDDEN, HIDDEN)
        self.c_fc = nn.Linear(HIDDEN, 2 * HIDDEN)  # stored transposed (Conv1D) in the checkpoint
        self.output = nn.Linear(2 * HIDDEN, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN)

    def forward(self, x):
        x = x + torch.tanh(self.attention(x))
        return self.LayerNorm(x + self.output(F.gelu(self.c_fc(x))))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(Layer() for _ in range(2))
        self.classifier = nn.Linear(HIDDEN, CLASSES)

    def forward(self, ids):
        x = self.embeddings(ids)
        for layer in self.layers:
            x = layer(x)
        return self.classifier(x.mean(1))


def build():
    torch.manual_seed(0)
    return Classifier()


def pretrained_checkpoint():
    """A checkpoint in the other naming, with numpy values (the same under either library)."""
    rng = np.random.default_rng(7)
    shapes = {"bert.embeddings.word_embeddings.weight": (VOCAB, HIDDEN)}
    for i in range(2):
        prefix = f"bert.encoder.layer.{i}."
        shapes.update(
            {
                prefix + "attention.self.weight": (HIDDEN, HIDDEN),
                prefix + "attention.self.bias": (HIDDEN,),
                prefix + "mlp.c_fc.weight": (HIDDEN, 2 * HIDDEN),  # Conv1D: (in, out)
                prefix + "mlp.c_fc.bias": (2 * HIDDEN,),
                prefix + "output.dense.weight": (HIDDEN, 2 * HIDDEN),
                prefix + "output.dense.bias": (HIDDEN,),
                prefix + "output.LayerNorm.gamma": (HIDDEN,),
                prefix + "output.LayerNorm.beta": (HIDDEN,),
            }
        )
    shapes["bert.pooler.dense.weight"] = (HIDDEN, HIDDEN)
    shapes["cls.predictions.bias"] = (VOCAB,)
    return {k: torch.tensor(rng.normal(0, 0.1, size=s).astype(np.float32)) for k, s in shapes.items()}


RENAMES = [
    (r"^bert\.embeddings\.word_embeddings\.", "embeddings."),
    (r"^bert\.encoder\.layer\.(\d+)\.attention\.self\.", r"layers.\1.attention."),
    (r"^bert\.encoder\.layer\.(\d+)\.mlp\.c_fc\.", r"layers.\1.c_fc."),
    (r"^bert\.encoder\.layer\.(\d+)\.output\.dense\.", r"layers.\1.output."),
    (r"^bert\.encoder\.layer\.(\d+)\.output\.LayerNorm\.", r"layers.\1.LayerNorm."),
    (r"\.gamma$", ".weight"),
    (r"\.beta$", ".bias"),
]


def renamed(checkpoint):
    out = {}
    for key, value in checkpoint.items():
        for pattern, replacement in RENAMES:
            key = re.sub(pattern, replacement, key)
        if key.endswith("c_fc.weight"):
            value = value.t().contiguous()
        out[key] = value
    return out


def train(model, steps=3):
    state = renamed(pretrained_checkpoint())
    result = model.load_state_dict(state, strict=False)
    with torch.device("meta"):
        lean = Classifier()
    lean_result = lean.load_state_dict(model.state_dict(), assign=True)
    rng = np.random.default_rng(1)
    ids = torch.tensor(rng.integers(0, VOCAB, size=(8, 5)))
    labels = torch.tensor(rng.integers(0, CLASSES, size=8))
    with torch.no_grad():
        lean_out = lean(ids)

    model.embeddings.requires_grad_(False)
    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {
            "params": [
                p for n, p in model.named_parameters() if p.requires_grad and not any(nd in n for nd in no_decay)
            ],
            "weight_decay": 0.01,
        },
        {
            "params": [p for n, p in model.named_parameters() if p.requires_grad and any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = optim.AdamW(groups, lr=1e-2)
    warmup = 2
    scheduler = lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, 1 - step / 10))

    losses, lrs = [], []
    for _ in range(steps):
        loss = F.cross_entropy(model(ids), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
    return {
        "losses": losses,
        "lrs": lrs,
        "missing": ",".join(result.missing_keys),
        "unexpected": ",".join(result.unexpected_keys),
        "report": str(result),
        "lean_report": repr(lean_result),
        "lean_logits": lean_out.flatten().tolist(),
        "frozen": model.embeddings.weight.grad is None,
        "group_keys": ",".join(sorted(optimizer.state_dict()["param_groups"][0])),
        "scheduler": scheduler.state_dict()["_last_lr"] + [scheduler.state_dict()["last_epoch"]],
    }


if __name__ == "__main__":
    print(train(build(), steps=4))
