"""A small Vision Transformer classifying synthetic 16x16 images, written the way timm-style ViT
code is.

Idioms: a patch embedding by ``nn.Conv2d(kernel_size=patch, stride=patch)`` followed by
``.flatten(2).transpose(1, 2)``; a class token ``nn.Parameter(torch.zeros(1, 1, dim))``
``expand``-ed over the batch and joined by ``torch.cat``; a learned position embedding;
attention with a fused ``qkv`` Linear split by ``.chunk(3, dim=-1)`` and
``F.scaled_dot_product_attention`` in one block kind, ``nn.MultiheadAttention`` in the other;
stochastic depth (DropPath) by ``torch.rand`` + ``floor_()`` + ``div``; ``nn.init.trunc_normal_``
and ``constant_`` through ``model.apply``; a no-weight-decay set for ``pos_embed``/``cls_token``;
AdamW with ``CosineAnnealingLR`` after a ``LinearLR`` warmup (``SequentialLR``) and
``label_smoothing``; top-1 and top-2 accuracy via ``topk``.
"""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

DROPOUT = 0.1
DROP_PATH = 0.1
DEVICE = "cpu"
IMAGE, PATCH, DIM, HEADS, DEPTH, CLASSES, BATCH = 16, 4, 16, 2, 2, 4, 4


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()
    return x.div(keep_prob) * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=None):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class PatchEmbed(nn.Module):
    def __init__(self, img_size=IMAGE, patch_size=PATCH, in_chans=3, embed_dim=DIM):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, num_heads, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.attn_drop = attn_drop
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, N, self.num_heads, C // self.num_heads).transpose(1, 2) for t in (q, k, v))
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop if self.training else 0.0)
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class TorchAttention(nn.Module):
    """The same role filled by nn.MultiheadAttention (batch_first), as many ViT ports do."""

    def __init__(self, dim, num_heads, attn_drop=0.0):
        super().__init__()
        self.mha = nn.MultiheadAttention(dim, num_heads, dropout=attn_drop, batch_first=True)

    def forward(self, x):
        out, _ = self.mha(x, x, x, need_weights=False)
        return out


class Mlp(nn.Module):
    def __init__(self, dim, hidden, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, dim, num_heads, drop_path_rate, use_mha=False):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = TorchAttention(dim, num_heads) if use_mha else Attention(dim, num_heads, proj_drop=DROPOUT)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 2 * dim, drop=DROPOUT)

    def forward(self, x):
        x = x + self.drop_path(self.attn(self.norm1(x)))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class VisionTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = PatchEmbed()
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, DIM))
        self.pos_drop = nn.Dropout(p=DROPOUT)
        dpr = [x.item() for x in torch.linspace(0, DROP_PATH, DEPTH)]  # stochastic depth decay rule
        self.blocks = nn.ModuleList([Block(DIM, HEADS, dpr[i], use_mha=i % 2 == 1) for i in range(DEPTH)])
        self.norm = nn.LayerNorm(DIM, eps=1e-6)
        self.head = nn.Linear(DIM, CLASSES)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def no_weight_decay(self):
        return {"pos_embed", "cls_token"}

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0])


def build():
    torch.manual_seed(0)
    return VisionTransformer()


def make_data(n=16, seed=0):
    """Images whose class is the quadrant holding a bright square, with noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 0.3, size=(n, 3, IMAGE, IMAGE)).astype(np.float32)
    y = rng.integers(0, CLASSES, size=n)
    half = IMAGE // 2
    for i, c in enumerate(y):
        r, s = (c // 2) * half, (c % 2) * half
        x[i, :, r + 2 : r + 6, s + 2 : s + 6] += 1.5
    return torch.from_numpy(x), torch.from_numpy(y)


def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size).item() for k in topk]


def train(model, steps=5):
    device = torch.device(DEVICE)
    model = model.to(device)
    x, y = make_data()
    skip = model.no_weight_decay()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and n not in skip]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1 or n in skip]
    optimizer = optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-3
    )
    warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.5, total_iters=1)
    cosine = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=1e-5)
    scheduler = optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, cosine], milestones=[1])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for step in range(steps):
        model.train()
        start = (step * BATCH) % x.shape[0]
        images, target = x[start : start + BATCH].to(device), y[start : start + BATCH].to(device)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        output = model(x.to(device))
        top1, top2 = accuracy(output, y.to(device), topk=(1, 2))
    return {"losses": losses, "top1": top1, "top2": top2, "lr": scheduler.get_last_lr()[0]}


if __name__ == "__main__":
    print(train(build(), steps=40))
