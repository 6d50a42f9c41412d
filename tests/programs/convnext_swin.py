"""A tiny ConvNeXt stage followed by a Swin Transformer stage classifying synthetic 8x8 images,
written the way the ConvNeXt and Swin reference repositories write their blocks.

Its idioms: ConvNeXt's block (a depthwise ``nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)``,
``x.permute(0, 2, 3, 1)`` to channels-last for ``nn.LayerNorm(dim, eps=1e-6)`` and the pointwise
``nn.Linear`` MLP, a layer-scale ``gamma = nn.Parameter(layer_scale_init_value * torch.ones(dim))``,
``permute(0, 3, 1, 2)`` back) and its channels-first LayerNorm written by hand
(``u = x.mean(1, keepdim=True)``, ``(x - u).pow(2).mean(1, keepdim=True)``, ``self.weight[:, None, None]``);
DropPath by ``keep_prob + torch.rand(shape)``, ``floor_()`` and ``x.div(keep_prob) * random_tensor``, live
while training and the identity in ``eval()``; Swin's ``window_partition``/``window_reverse`` by
``view``/``permute``/``contiguous``; cyclic shifts by ``torch.roll(x, shifts=(-s, -s), dims=(1, 2))`` and
back; the shifted-window attention mask built by assigning a counter into ``img_mask[:, h, w, :]`` over
``slice`` objects, then ``mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)`` and two
``masked_fill``; a relative position bias table gathered by an index buffer built from
``torch.meshgrid(..., indexing="ij")``, ``torch.flatten``, broadcast differences and in-place
``+=``/``*=`` on slices, kept by ``register_buffer(..., persistent=False)``; attention logits
``attn.view(B_ // nW, nW, heads, N, N) + mask.unsqueeze(1).unsqueeze(0)``; ``trunc_normal_`` through
``self.apply``; and AdamW with ``weight_decay=0.05``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

DEVICE = "cpu"
DROP_PATH = 0.2
IMG, DIM, WINDOW, HEADS, CLASSES, BATCH = 8, 8, 2, 2, 3, 4


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


class LayerNorm(nn.Module):
    """LayerNorm over channels for channels_first (N, C, H, W) or channels_last (N, H, W, C) input."""

    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        self.normalized_shape = (normalized_shape,)

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, drop_path=0.0, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init_value * torch.ones(dim)) if layer_scale_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        input = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return input + self.drop_path(x)


def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class WindowAttention(nn.Module):
    def __init__(self, dim, window_size, num_heads, qkv_bias=True):
        super().__init__()
        self.dim, self.window_size, self.num_heads = dim, window_size, num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads)
        )
        coords_h = torch.arange(self.window_size[0])
        coords_w = torch.arange(self.window_size[1])
        coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))
        coords_flatten = torch.flatten(coords, 1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()
        relative_coords[:, :, 0] += self.window_size[0] - 1
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
        relative_position_index = relative_coords.sum(-1)
        self.register_buffer("relative_position_index", relative_position_index, persistent=False)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        relative_position_bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(
            self.window_size[0] * self.window_size[1], self.window_size[0] * self.window_size[1], -1
        )
        relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
        attn = attn + relative_position_bias.unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = self.softmax(attn)
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj(x)


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim, input_resolution, num_heads, window_size=WINDOW, shift_size=0, drop_path=0.0):
        super().__init__()
        self.dim, self.input_resolution, self.num_heads = dim, input_resolution, num_heads
        self.window_size, self.shift_size = window_size, shift_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window_size=(window_size, window_size), num_heads=num_heads)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        if self.shift_size > 0:
            H, W = self.input_resolution
            img_mask = torch.zeros((1, H, W, 1))
            h_slices = (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None))
            w_slices = (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None))
            cnt = 0
            for h in h_slices:
                for w in w_slices:
                    img_mask[:, h, w, :] = cnt
                    cnt += 1
            mask_windows = window_partition(img_mask, self.window_size)
            mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        else:
            attn_mask = None
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        shortcut = x
        x = self.norm1(x)
        x = x.view(B, H, W, C)
        if self.shift_size > 0:
            shifted_x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        else:
            shifted_x = x
        x_windows = window_partition(shifted_x, self.window_size)
        x_windows = x_windows.view(-1, self.window_size * self.window_size, C)
        attn_windows = self.attn(x_windows, mask=self.attn_mask)
        attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
        shifted_x = window_reverse(attn_windows, self.window_size, H, W)
        if self.shift_size > 0:
            x = torch.roll(shifted_x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        else:
            x = shifted_x
        x = x.view(B, H * W, C)
        x = shortcut + self.drop_path(x)
        return x + self.drop_path(self.mlp(self.norm2(x)))


class ConvNeXtSwin(nn.Module):
    def __init__(self, in_chans=3, num_classes=CLASSES, dim=DIM, drop_path_rate=DROP_PATH):
        super().__init__()
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, 4)]
        self.stem = nn.Sequential(
            nn.Conv2d(in_chans, dim, kernel_size=2, stride=2), LayerNorm(dim, eps=1e-6, data_format="channels_first")
        )
        self.stage1 = nn.Sequential(
            *[ConvNeXtBlock(dim=dim, drop_path=dpr[j], layer_scale_init_value=0.5) for j in range(2)]
        )
        resolution = (IMG // 2, IMG // 2)
        self.stage2 = nn.Sequential(
            *[
                SwinTransformerBlock(
                    dim, resolution, HEADS, shift_size=0 if j % 2 == 0 else WINDOW // 2, drop_path=dpr[2 + j]
                )
                for j in range(2)
            ]
        )
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Conv2d | nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.2)
            nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.stage1(self.stem(x))
        x = x.flatten(2).transpose(1, 2)
        x = self.stage2(x)
        return self.head(self.norm(x.mean(1)))


def make_data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % CLASSES
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32)
    pattern = np.stack([np.sin(xx), np.sin(yy), np.sin(xx + yy)])
    x = pattern[y][:, None].repeat(3, 1) * (1 + 0.1 * rng.standard_normal((n, 3, IMG, IMG)))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.int64))


def build():
    torch.manual_seed(0)
    return ConvNeXtSwin(drop_path_rate=DROP_PATH)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    x, y = make_data()
    optimizer = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        model.train()
        start = (step * BATCH) % x.shape[0]
        images, target = x[start : start + BATCH].to(device), y[start : start + BATCH].to(device)
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(x.to(device))
        accuracy = (logits.argmax(1) == y.to(device)).float().mean().item()
    return {
        "losses": losses,
        "logits": logits[:4].flatten().tolist(),
        "accuracy": accuracy,
        "state_keys": len(model.state_dict()),
        "gamma": model.stage1[0].gamma.tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=10))
