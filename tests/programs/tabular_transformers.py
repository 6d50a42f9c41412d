"""Tabular classification with an FT-Transformer, a TabTransformer or a one-hot MLP, as rtdl (Yandex's
"Revisiting Deep Learning Models for Tabular Data") and lucidrains/tab-transformer-pytorch write them.

FT-Transformer's idioms (``MODEL = "ft"``): a numerical tokenizer ``self.weight[None] * x[..., None] +
self.bias[None]`` with ``nn.init.uniform_(w, -d ** -0.5, d ** -0.5)``; a categorical tokenizer, one
``nn.Embedding`` over all columns shifted by ``torch.tensor([0] + cardinalities[:-1]).cumsum(0)`` kept in
a non-persistent buffer; a CLS token appended by ``weight.view(*new_dims, -1).expand(*leading, -1)`` and
``torch.cat``; pre-norm blocks of ``nn.MultiheadAttention(batch_first=True)`` and a ReGLU feed-forward
(``a, b = x.chunk(2, dim=-1); a * F.relu(b)``), the first block without its attention norm, the head on
``x[:, -1]``; AdamW with no weight decay for the tokenizers, norms and biases (parameter groups by name).
TabTransformer's (``"tab"``): ``nn.ModuleList`` of one ``nn.Embedding`` per categorical column,
``torch.stack([emb(x_categ[:, i]) for i, emb in enumerate(self.embeds)], dim=1)`` through an
``nn.TransformerEncoder``, ``flatten(1)``, the continuous features through ``nn.LayerNorm``, both
``torch.cat``-ed into an MLP. The baseline (``"onehot"``): ``F.one_hot(x_cat[:, i],
num_classes=c).float()`` per column with the standardised numbers (``(x - mean) / std``) into an MLP with
``nn.BatchNorm1d``. Data: an imbalanced binary target; a ``WeightedRandomSampler`` over
``torch.DoubleTensor`` weights ``1.0 / class_sample_count`` (``BALANCE``) in a ``DataLoader`` of a
``TensorDataset``; the loss ``nn.BCEWithLogitsLoss(pos_weight=torch.tensor([neg / pos]))`` or
torchvision's ``sigmoid_focal_loss`` (``LOSS = "focal"``); AUC-free metrics by ``torch.sigmoid(...) > 0.5``:
accuracy, precision and recall."""

from __future__ import annotations

import math

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

MODEL = "ft"  # or "tab", "onehot"
LOSS = "bce"  # or "focal"
BALANCE = True  # a WeightedRandomSampler by inverse class frequency (its draws are PyTorch's)
DROPOUT = 0.1
DEVICE = "cpu"
CARDINALITIES = [3, 5, 4]
N_NUM = 4
D_TOKEN = 8
BATCH = 16


def make_data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x_num = rng.standard_normal((n, N_NUM)).astype(np.float32) * [1.0, 3.0, 0.5, 2.0] + [0.0, 5.0, -1.0, 0.0]
    x_cat = np.stack([rng.integers(0, c, n) for c in CARDINALITIES], axis=1)
    score = x_num[:, 0] + 0.3 * x_num[:, 1] - 1.5 + (x_cat[:, 0] == 2)
    y = (score > 0.8).astype(np.float32)
    return torch.tensor(x_num, dtype=torch.float32), torch.tensor(x_cat), torch.tensor(y)


# --- FT-Transformer -------------------------------------------------------------------------------


def _init_rsqrt_uniform_(x, d):
    d_sqrt_inv = 1 / math.sqrt(d)
    nn.init.uniform_(x, a=-d_sqrt_inv, b=d_sqrt_inv)
    return x


class NumericalFeatureTokenizer(nn.Module):
    def __init__(self, n_features, d_token, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(n_features, d_token))
        self.bias = nn.Parameter(torch.Tensor(n_features, d_token)) if bias else None
        for parameter in [self.weight, self.bias]:
            if parameter is not None:
                _init_rsqrt_uniform_(parameter, d_token)

    def forward(self, x):
        x = self.weight[None] * x[..., None]
        if self.bias is not None:
            x = x + self.bias[None]
        return x


class CategoricalFeatureTokenizer(nn.Module):
    def __init__(self, cardinalities, d_token, bias=True):
        super().__init__()
        category_offsets = torch.tensor([0] + cardinalities[:-1]).cumsum(0)
        self.register_buffer("category_offsets", category_offsets, persistent=False)
        self.embeddings = nn.Embedding(sum(cardinalities), d_token)
        self.bias = nn.Parameter(torch.Tensor(len(cardinalities), d_token)) if bias else None
        for parameter in [self.embeddings.weight, self.bias]:
            if parameter is not None:
                _init_rsqrt_uniform_(parameter, d_token)

    def forward(self, x):
        x = self.embeddings(x + self.category_offsets[None])
        if self.bias is not None:
            x = x + self.bias[None]
        return x


class CLSToken(nn.Module):
    def __init__(self, d_token):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(d_token))
        _init_rsqrt_uniform_(self.weight, d_token)

    def expand(self, *leading_dimensions):
        if not leading_dimensions:
            return self.weight
        new_dims = (1,) * (len(leading_dimensions) - 1)
        return self.weight.view(*new_dims, -1).expand(*leading_dimensions, -1)

    def forward(self, x):
        return torch.cat([x, self.expand(len(x), 1)], dim=1)


class ReGLU(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a * F.relu(b)


class Block(nn.Module):
    def __init__(self, d_token, n_heads, d_hidden, first):
        super().__init__()
        self.attention_normalization = None if first else nn.LayerNorm(d_token)
        self.attention = nn.MultiheadAttention(d_token, n_heads, dropout=DROPOUT, batch_first=True)
        self.attention_residual_dropout = nn.Dropout(DROPOUT)
        self.ffn_normalization = nn.LayerNorm(d_token)
        self.ffn = nn.Sequential(
            nn.Linear(d_token, d_hidden * 2), ReGLU(), nn.Dropout(DROPOUT), nn.Linear(d_hidden, d_token)
        )
        self.ffn_residual_dropout = nn.Dropout(DROPOUT)

    def forward(self, x):
        x_residual = x if self.attention_normalization is None else self.attention_normalization(x)
        x_residual, _ = self.attention(x_residual, x_residual, x_residual, need_weights=False)
        x = x + self.attention_residual_dropout(x_residual)
        x_residual = self.ffn(self.ffn_normalization(x))
        return x + self.ffn_residual_dropout(x_residual)


class FTTransformer(nn.Module):
    def __init__(self, n_num, cardinalities, d_token=D_TOKEN, n_blocks=2, n_heads=2):
        super().__init__()
        self.num_tokenizer = NumericalFeatureTokenizer(n_num, d_token)
        self.cat_tokenizer = CategoricalFeatureTokenizer(cardinalities, d_token)
        self.cls_token = CLSToken(d_token)
        self.blocks = nn.ModuleList([Block(d_token, n_heads, d_token, first=i == 0) for i in range(n_blocks)])
        self.head = nn.Sequential(nn.LayerNorm(d_token), nn.ReLU(), nn.Linear(d_token, 1))

    def forward(self, x_num, x_cat):
        x = torch.cat([self.num_tokenizer(x_num), self.cat_tokenizer(x_cat)], dim=1)
        x = self.cls_token(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x[:, -1]).squeeze(-1)

    def optimization_param_groups(self):
        no_wd_names = ["num_tokenizer", "cat_tokenizer", "cls_token", ".bias", "normalization", "head.0"]
        no_wd, wd = [], []
        for name, p in self.named_parameters():
            (no_wd if any(key in name for key in no_wd_names) else wd).append(p)
        return [{"params": wd}, {"params": no_wd, "weight_decay": 0.0}]


# --- TabTransformer and the one-hot baseline ------------------------------------------------------


class TabTransformer(nn.Module):
    def __init__(self, categories, num_continuous, dim=D_TOKEN, depth=1, heads=2, mlp_hidden_mults=(4, 2)):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(c, dim) for c in categories])
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=DROPOUT, batch_first=True)
        self.transformer = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(num_continuous)
        input_size = dim * len(categories) + num_continuous
        hidden = [input_size // 8 * m for m in mlp_hidden_mults]
        dims = [input_size, *hidden, 1]
        layers = []
        for i, (dim_in, dim_out) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
            layers.append(nn.Linear(dim_in, dim_out))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        self.mlp = nn.Sequential(*layers)

    def forward(self, x_cont, x_categ):
        x = torch.stack([emb(x_categ[:, i]) for i, emb in enumerate(self.embeds)], dim=1)
        flat_categ = self.transformer(x).flatten(1)
        normed_cont = self.norm(x_cont)
        return self.mlp(torch.cat((flat_categ, normed_cont), dim=-1)).squeeze(-1)


class OneHotMLP(nn.Module):
    def __init__(self, n_num, cardinalities, hidden=16):
        super().__init__()
        self.cardinalities = cardinalities
        self.register_buffer("mean", torch.zeros(n_num))
        self.register_buffer("std", torch.ones(n_num))
        self.net = nn.Sequential(
            nn.Linear(n_num + sum(cardinalities), hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(DROPOUT),
            nn.Linear(hidden, 1),
        )

    def forward(self, x_num, x_cat):
        one_hots = [F.one_hot(x_cat[:, i], num_classes=c).float() for i, c in enumerate(self.cardinalities)]
        x = torch.cat([(x_num - self.mean) / self.std, *one_hots], dim=1)
        return self.net(x).squeeze(-1)


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"):
    """torchvision.ops.sigmoid_focal_loss."""
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


def build():
    torch.manual_seed(0)
    if MODEL == "ft":
        return FTTransformer(N_NUM, CARDINALITIES)
    if MODEL == "tab":
        return TabTransformer(CARDINALITIES, N_NUM)
    return OneHotMLP(N_NUM, CARDINALITIES)


def train(model, steps=3):
    device = torch.device(DEVICE)
    x_num, x_cat, y = make_data()
    if MODEL == "onehot":
        model.mean.copy_(x_num.mean(0))
        model.std.copy_(x_num.std(0))
    dataset = TensorDataset(x_num, x_cat, y)
    if BALANCE:
        target = y.long().numpy()
        class_sample_count = np.array([len(np.where(target == t)[0]) for t in np.unique(target)])
        weight = 1.0 / class_sample_count
        samples_weight = torch.from_numpy(np.array([weight[t] for t in target]))
        sampler = torch.utils.data.WeightedRandomSampler(samples_weight.type("torch.DoubleTensor"), len(samples_weight))
        loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
    else:
        loader = DataLoader(dataset, batch_size=BATCH, shuffle=False)
    pos = y.sum()
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([(len(y) - pos) / pos], device=device))
    model = model.to(device)
    if MODEL == "ft":
        optimizer = optim.AdamW(model.optimization_param_groups(), lr=1e-3, weight_decay=1e-5)
    else:
        optimizer = optim.Adam(model.parameters(), lr=1e-3)
    torch.manual_seed(2)  # the sampler's draws
    record = {"losses": [], "metrics": [], "positives_drawn": []}
    batches = iter(())
    for _ in range(steps):
        try:
            xb_num, xb_cat, yb = next(batches)
        except StopIteration:
            batches = iter(loader)
            xb_num, xb_cat, yb = next(batches)
        xb_num, xb_cat, yb = xb_num.to(device), xb_cat.to(device), yb.to(device)
        model.train()
        optimizer.zero_grad()
        logits = model(xb_num, xb_cat)
        loss = criterion(logits, yb) if LOSS == "bce" else sigmoid_focal_loss(logits, yb, reduction="mean")
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["positives_drawn"].append(int(yb.sum()))
        model.eval()
        with torch.no_grad():
            pred = (torch.sigmoid(model(x_num.to(device), x_cat.to(device))) > 0.5).float()
            y_dev = y.to(device)
            tp = (pred * y_dev).sum().item()
            precision = tp / max(pred.sum().item(), 1.0)
            recall = tp / y_dev.sum().item()
            record["metrics"].append([(pred == y_dev).float().mean().item(), precision, recall])
    return record


if __name__ == "__main__":
    print(train(build()))
