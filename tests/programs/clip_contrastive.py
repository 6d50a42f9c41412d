"""CLIP's contrastive pre-training, written as openai/CLIP's model.py and mlfoundations/open_clip's
loss and training loop are, at tiny sizes on synthetic image-caption pairs.

Its idioms: a ViT image tower (a bias-free ``Conv2d`` patch embedding, ``class_embedding`` joined by
``torch.cat([self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype,
device=x.device), x], dim=1)``, ``ln_pre``/``ln_post``, ``x[:, 0, :] @ self.proj``); residual attention
blocks of ``nn.MultiheadAttention`` (sequence first, ``need_weights=False``) and an MLP built from an
``OrderedDict`` with ``QuickGELU`` (``x * torch.sigmoid(1.702 * x)``); the causal text mask built by
``torch.empty``, ``fill_(float("-inf"))`` and ``triu_(1)`` into a non-persistent buffer; ``x.permute(1, 0,
2)``; the text feature at the end-of-text token by ``x[torch.arange(x.shape[0]), text.argmax(dim=-1)]``;
``initialize_parameters`` by ``nn.init.normal_`` with the width's scales; ``logit_scale =
nn.Parameter(torch.ones([]) * np.log(1 / 0.07))`` used as ``logit_scale.exp()``; ``F.normalize(...,
dim=-1)``; open_clip's ``ClipLoss`` (``torch.arange`` labels, the mean of the two cross-entropies over
``logits_per_image`` and its ``.T``); AdamW groups excluding gains, biases and ``logit_scale`` by
``p.ndim < 2``; a warmup-cosine rate written into ``param_group["lr"]``; ``clip_grad_norm_``; and
``logit_scale.clamp_(0, math.log(100))`` under ``torch.no_grad()`` after each step; then zero-shot
accuracy from normalised text embeddings.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from shim import F, nn, optim, torch

WIDTH = 16
EMBED_DIM = 8
LAYERS = 1
HEADS = 2
IMAGE = 8
PATCH = 4
CONTEXT = 6
VOCAB = 12
BATCH = 6
WARMUP = 2


class LayerNorm(nn.LayerNorm):
    """Subclass torch's LayerNorm to handle fp16."""

    def forward(self, x):
        orig_type = x.dtype
        ret = super().forward(x.type(torch.float32))
        return ret.type(orig_type)


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, d_model, n_head, attn_mask=None):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_1 = LayerNorm(d_model)
        self.mlp = nn.Sequential(
            OrderedDict(
                [
                    ("c_fc", nn.Linear(d_model, d_model * 4)),
                    ("gelu", QuickGELU()),
                    ("c_proj", nn.Linear(d_model * 4, d_model)),
                ]
            )
        )
        self.ln_2 = LayerNorm(d_model)
        self.attn_mask = attn_mask

    def attention(self, x):
        self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
        return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class Transformer(nn.Module):
    def __init__(self, width, layers, heads, attn_mask=None):
        super().__init__()
        self.width = width
        self.layers = layers
        self.resblocks = nn.Sequential(*[ResidualAttentionBlock(width, heads, attn_mask) for _ in range(layers)])

    def forward(self, x):
        return self.resblocks(x)


class VisionTransformer(nn.Module):
    def __init__(self, input_resolution, patch_size, width, layers, heads, output_dim):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=width, kernel_size=patch_size, stride=patch_size, bias=False)
        scale = width**-0.5
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(scale * torch.randn((input_resolution // patch_size) ** 2 + 1, width))
        self.ln_pre = LayerNorm(width)
        self.transformer = Transformer(width, layers, heads)
        self.ln_post = LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, output_dim))

    def forward(self, x):
        x = self.conv1(x)  # shape = [*, width, grid, grid]
        x = x.reshape(x.shape[0], x.shape[1], -1)  # shape = [*, width, grid ** 2]
        x = x.permute(0, 2, 1)  # shape = [*, grid ** 2, width]
        x = torch.cat(
            [
                self.class_embedding.to(x.dtype)
                + torch.zeros(x.shape[0], 1, x.shape[-1], dtype=x.dtype, device=x.device),
                x,
            ],
            dim=1,
        )  # shape = [*, grid ** 2 + 1, width]
        x = x + self.positional_embedding.to(x.dtype)
        x = self.ln_pre(x)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x)
        x = x.permute(1, 0, 2)  # LND -> NLD
        x = self.ln_post(x[:, 0, :])
        if self.proj is not None:
            x = x @ self.proj
        return x


class CLIP(nn.Module):
    def __init__(
        self, embed_dim, image_resolution, vision_patch_size, context_length, vocab_size, width, heads, layers
    ):
        super().__init__()
        self.context_length = context_length
        self.visual = VisionTransformer(image_resolution, vision_patch_size, width, layers, heads, embed_dim)
        self.transformer = Transformer(width, layers, heads, attn_mask=self.build_attention_mask())
        self.vocab_size = vocab_size
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.empty(self.context_length, width))
        self.ln_final = LayerNorm(width)
        self.text_projection = nn.Parameter(torch.empty(width, embed_dim))
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))
        self.initialize_parameters()

    def initialize_parameters(self):
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.positional_embedding, std=0.01)
        proj_std = (self.transformer.width**-0.5) * ((2 * self.transformer.layers) ** -0.5)
        attn_std = self.transformer.width**-0.5
        fc_std = (2 * self.transformer.width) ** -0.5
        for block in self.transformer.resblocks:
            nn.init.normal_(block.attn.in_proj_weight, std=attn_std)
            nn.init.normal_(block.attn.out_proj.weight, std=proj_std)
            nn.init.normal_(block.mlp.c_fc.weight, std=fc_std)
            nn.init.normal_(block.mlp.c_proj.weight, std=proj_std)
        if self.text_projection is not None:
            nn.init.normal_(self.text_projection, std=self.transformer.width**-0.5)

    def build_attention_mask(self):
        # lazily create causal attention mask, with full attention between the vision tokens
        # pytorch uses additive attention mask; fill with -inf
        mask = torch.empty(self.context_length, self.context_length)
        mask.fill_(float("-inf"))
        mask.triu_(1)  # zero out the lower diagonal
        return mask

    @property
    def dtype(self):
        return self.visual.conv1.weight.dtype

    def encode_image(self, image):
        return self.visual(image.type(self.dtype))

    def encode_text(self, text):
        x = self.token_embedding(text).type(self.dtype)  # [batch_size, n_ctx, d_model]
        x = x + self.positional_embedding.type(self.dtype)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x)
        x = x.permute(1, 0, 2)  # LND -> NLD
        x = self.ln_final(x).type(self.dtype)
        # take features from the eot embedding (eot_token is the highest number in each sequence)
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return x

    def forward(self, image, text):
        image_features = F.normalize(self.encode_image(image), dim=-1)
        text_features = F.normalize(self.encode_text(text), dim=-1)
        return image_features, text_features, self.logit_scale.exp()


class ClipLoss(nn.Module):
    def forward(self, image_features, text_features, logit_scale):
        device = image_features.device
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        num_logits = logits_per_image.shape[0]
        labels = torch.arange(num_logits, device=device, dtype=torch.long)
        total_loss = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2
        return total_loss


def cosine_lr(optimizer, base_lr, warmup_length, steps):
    def _lr_adjuster(step):
        if step < warmup_length:
            lr = base_lr * (step + 1) / warmup_length
        else:
            e = step - warmup_length
            es = steps - warmup_length
            lr = 0.5 * (1 + np.cos(np.pi * e / es)) * base_lr
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        return lr

    return _lr_adjuster


def synthetic_pairs(n, step):
    """Images whose colour pattern is named by a caption: token ``VOCAB - 1`` ends each caption."""
    rng = np.random.default_rng(step)
    classes = rng.integers(0, 3, n)
    grid = np.linspace(0, 1, IMAGE, dtype=np.float32)
    images = np.zeros((n, 3, IMAGE, IMAGE), np.float32)
    texts = np.zeros((n, CONTEXT), np.int64)
    for i, c in enumerate(classes):
        images[i, c] = np.outer(grid, grid) + 0.1 * rng.standard_normal((IMAGE, IMAGE))
        length = 2 + (i % 3)
        texts[i, :length] = 1 + 3 * c + rng.integers(0, 3, length)
        texts[i, length] = VOCAB - 1
    return torch.from_numpy(images), torch.from_numpy(texts), torch.from_numpy(classes)


def build():
    torch.manual_seed(0)
    return CLIP(EMBED_DIM, IMAGE, PATCH, CONTEXT, VOCAB, WIDTH, HEADS, LAYERS)


def train(model, steps=3):
    exclude = lambda n, p: p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n  # noqa: E731
    include = lambda n, p: not exclude(n, p)  # noqa: E731
    named_parameters = list(model.named_parameters())
    gain_or_bias_params = [p for n, p in named_parameters if exclude(n, p) and p.requires_grad]
    rest_params = [p for n, p in named_parameters if include(n, p) and p.requires_grad]
    optimizer = optim.AdamW(
        [
            {"params": gain_or_bias_params, "weight_decay": 0.0},
            {"params": rest_params, "weight_decay": 0.2},
        ],
        lr=5e-3,
        betas=(0.9, 0.98),
        eps=1e-6,
    )
    scheduler = cosine_lr(optimizer, 5e-3, WARMUP, steps + WARMUP)
    loss_fn = ClipLoss()
    record = {"losses": [], "lr": [], "logit_scale": [], "zero_shot": []}
    model.train()
    for step in range(steps):
        record["lr"].append(scheduler(step))
        images, texts, _ = synthetic_pairs(BATCH, step)
        optimizer.zero_grad()
        image_features, text_features, logit_scale = model(images, texts)
        total_loss = loss_fn(image_features, text_features, logit_scale)
        total_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, norm_type=2.0)
        optimizer.step()
        # Note: we clamp to 4.6052 = ln(100), as in the original paper.
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        record["losses"].append(total_loss.item())
        record["logit_scale"].append(model.logit_scale.item())

    model.eval()
    with torch.no_grad():
        prompts = torch.tensor([[1 + 3 * c, 2 + 3 * c, VOCAB - 1, 0, 0, 0] for c in range(3)])
        text_features = model.encode_text(prompts)
        text_features /= text_features.norm(dim=-1, keepdim=True)
        images, _, classes = synthetic_pairs(BATCH, 99)
        image_features = model.encode_image(images)
        image_features /= image_features.norm(dim=-1, keepdim=True)
        text_probs = (100.0 * image_features @ text_features.T).softmax(dim=-1)
        top_probs, top_labels = text_probs.cpu().topk(1, dim=-1)
        record["zero_shot"] = [top_probs.flatten().tolist(), (top_labels.flatten() == classes).float().mean().item()]
    return record


if __name__ == "__main__":
    print(train(build()))
