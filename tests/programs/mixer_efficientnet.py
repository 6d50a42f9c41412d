"""MLP-Mixer, written as lucidrains/mlp-mixer-pytorch and timm's mlp_mixer.py are, and EfficientNet's
MBConv blocks, written as lukemelas/EfficientNet-PyTorch is, trained as image classifiers at tiny sizes
on synthetic images. ``MODEL`` picks one.

Mixer's idioms: patches cut by ``unfold``-free reshapes and ``permute`` (einops' ``b c (h p1) (w p2) ->
b (h w) (p1 p2 c)`` written out); ``PreNormResidual``; token mixing by ``nn.Conv1d(kernel_size=1)`` over
the patch axis and channel mixing by ``nn.Linear``, chosen by ``functools.partial``; timm's
``drop_path`` (``x.new_empty(shape).bernoulli_(keep_prob)``, ``random_tensor.div_(keep_prob)``) in a
``DropPath`` module with ``extra_repr``; ``Reduce``-style mean pooling; label-smoothed
``nn.CrossEntropyLoss``; SGD with momentum under ``CosineAnnealingLR``.

EfficientNet's: ``Conv2dStaticSamePadding`` (TensorFlow "same" padding computed from the image size
into an ``nn.ZeroPad2d``) and the dynamic variant padding in ``forward`` by ``F.pad`` with
``math.ceil``; ``MemoryEfficientSwish``-free ``Swish`` (``x * torch.sigmoid(x)``) beside ``nn.SiLU``;
``nn.BatchNorm2d(momentum=1 - 0.99, eps=1e-3)``; the inverted bottleneck (1x1 expand, depthwise conv
by ``groups=oup``, squeeze-and-excitation by ``F.adaptive_avg_pool2d(x, 1)`` and
``torch.sigmoid(x_squeezed) * x``, 1x1 project); ``drop_connect`` by hand (``random_tensor = keep_prob;
random_tensor += torch.rand([batch_size, 1, 1, 1], ...)``, ``torch.floor``, ``inputs / keep_prob *
binary_tensor``) with a rate growing over blocks (``drop_connect_rate *= float(idx) /
len(self._blocks)``); ``round_filters`` by ``int(filters + divisor / 2) // divisor * divisor``; and
RMSprop with ``eps=1e-3``, as the TensorFlow reference trains it.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from shim import F, nn, optim, torch

MODEL = "mixer"  # or "efficientnet"
DROP_PATH = 0.1
DROPOUT = 0.2
IMAGE = 8
CLASSES = 3
BATCH = 4


# ---------------------------------------------------------------------- MLP-Mixer


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    """Drop paths (Stochastic Depth) per sample (when applied in main path of residual blocks)."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    """Drop paths (Stochastic Depth) per sample  (when applied in main path of residual blocks)."""

    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super(DropPath, self).__init__()  # noqa: UP008 (as timm writes it)
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn, drop_path_rate=0.0):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()

    def forward(self, x):
        return self.drop_path(self.fn(self.norm(x))) + x


def FeedForward(dim, expansion_factor=4, dropout=0.0, dense=nn.Linear):
    inner_dim = int(dim * expansion_factor)
    return nn.Sequential(
        dense(dim, inner_dim), nn.GELU(), nn.Dropout(dropout), dense(inner_dim, dim), nn.Dropout(dropout)
    )


class Patches(nn.Module):
    """b c (h p1) (w p2) -> b (h w) (p1 p2 c)"""

    def __init__(self, patch_size):
        super().__init__()
        self.p = patch_size

    def forward(self, x):
        b, c, H, W = x.shape
        h, w = H // self.p, W // self.p
        x = x.reshape(b, c, h, self.p, w, self.p)
        x = x.permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, h * w, self.p * self.p * c)


def MLPMixer(
    *,
    image_size,
    channels,
    patch_size,
    dim,
    depth,
    num_classes,
    expansion_factor=4,
    expansion_factor_token=0.5,
    dropout=0.0,
    drop_path_rate=0.0,
):
    image_h, image_w = (image_size, image_size)
    assert (image_h % patch_size) == 0 and (image_w % patch_size) == 0, "image must be divisible by patch size"
    num_patches = (image_h // patch_size) * (image_w // patch_size)
    chan_first, chan_last = partial(nn.Conv1d, kernel_size=1), nn.Linear
    dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # stochastic depth decay rule

    return nn.Sequential(
        Patches(patch_size),
        nn.Linear((patch_size**2) * channels, dim),
        *[
            nn.Sequential(
                PreNormResidual(dim, FeedForward(num_patches, expansion_factor, dropout, chan_first), dpr[i]),
                PreNormResidual(dim, FeedForward(dim, expansion_factor_token, dropout, chan_last), dpr[i]),
            )
            for i in range(depth)
        ],
        nn.LayerNorm(dim),
        Mean(1),
        nn.Linear(dim, num_classes),
    )


class Mean(nn.Module):
    """einops' Reduce('b n c -> b c', 'mean')."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.mean(dim=self.dim)


# ---------------------------------------------------------------------- EfficientNet


def round_filters(filters, width_coefficient=1.0, depth_divisor=8, min_depth=None):
    multiplier = width_coefficient
    divisor = depth_divisor
    min_depth = min_depth
    filters *= multiplier
    min_depth = min_depth or divisor  # pay attention to this line when using min_depth
    # follow the formula transferred from official TensorFlow implementation
    new_filters = max(min_depth, int(filters + divisor / 2) // divisor * divisor)
    if new_filters < 0.9 * filters:  # prevent rounding by more than 10%
        new_filters += divisor
    return int(new_filters)


def drop_connect(inputs, p, training):
    """Drop connect."""
    assert 0 <= p <= 1, "p must be in range of [0,1]"
    if not training:
        return inputs
    batch_size = inputs.shape[0]
    keep_prob = 1 - p
    # generate binary_tensor mask according to probability (p for 0, 1-p for 1)
    random_tensor = keep_prob
    random_tensor += torch.rand([batch_size, 1, 1, 1], dtype=inputs.dtype, device=inputs.device)
    binary_tensor = torch.floor(random_tensor)
    output = inputs / keep_prob * binary_tensor
    return output


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class Conv2dDynamicSamePadding(nn.Conv2d):
    """2D Convolutions like TensorFlow, for a dynamic image size."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, groups=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)
        self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2

    def forward(self, x):
        ih, iw = x.size()[-2:]
        kh, kw = self.weight.size()[-2:]
        sh, sw = self.stride
        oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)  # change the output size according to stride ! ! !
        pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
        pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2dStaticSamePadding(nn.Conv2d):
    """2D Convolutions like TensorFlow's 'SAME' mode, with the given input image size."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, image_size=None, **kwargs):
        super().__init__(in_channels, out_channels, kernel_size, stride, **kwargs)
        self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2

        # Calculate padding based on image size and save it
        assert image_size is not None
        ih, iw = (image_size, image_size) if isinstance(image_size, int) else image_size
        kh, kw = self.weight.size()[-2:]
        sh, sw = self.stride
        oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
        pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
        pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            self.static_padding = nn.ZeroPad2d((pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2))
        else:
            self.static_padding = nn.Identity()

    def forward(self, x):
        x = self.static_padding(x)
        x = F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        return x


def get_same_padding_conv2d(image_size=None):
    if image_size is None:
        return Conv2dDynamicSamePadding
    return partial(Conv2dStaticSamePadding, image_size=image_size)


class MBConvBlock(nn.Module):
    """Mobile Inverted Residual Bottleneck Block."""

    def __init__(self, input_filters, output_filters, expand_ratio, kernel_size, stride, se_ratio, image_size=None):
        super().__init__()
        self._bn_mom = 1 - 0.99  # pytorch's difference from tensorflow
        self._bn_eps = 1e-3
        self.has_se = (se_ratio is not None) and (0 < se_ratio <= 1)
        self.id_skip = True
        self.input_filters, self.output_filters, self.stride = input_filters, output_filters, stride

        # Expansion phase (Inverted Bottleneck)
        inp = input_filters  # number of input channels
        oup = input_filters * expand_ratio  # number of output channels
        if expand_ratio != 1:
            Conv2d = get_same_padding_conv2d(image_size=image_size)
            self._expand_conv = Conv2d(in_channels=inp, out_channels=oup, kernel_size=1, bias=False)
            self._bn0 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)
        self.expand_ratio = expand_ratio

        # Depthwise convolution phase
        k = kernel_size
        s = stride
        Conv2d = get_same_padding_conv2d(image_size=image_size)
        self._depthwise_conv = Conv2d(
            in_channels=oup,
            out_channels=oup,
            groups=oup,  # groups makes it depthwise
            kernel_size=k,
            stride=s,
            bias=False,
        )
        self._bn1 = nn.BatchNorm2d(num_features=oup, momentum=self._bn_mom, eps=self._bn_eps)
        image_size = math.ceil(image_size / stride) if image_size else None

        # Squeeze and Excitation layer, if desired
        if self.has_se:
            Conv2d = get_same_padding_conv2d(image_size=(1, 1))
            num_squeezed_channels = max(1, int(input_filters * se_ratio))
            self._se_reduce = Conv2d(in_channels=oup, out_channels=num_squeezed_channels, kernel_size=1)
            self._se_expand = Conv2d(in_channels=num_squeezed_channels, out_channels=oup, kernel_size=1)

        # Pointwise convolution phase
        final_oup = output_filters
        Conv2d = get_same_padding_conv2d(image_size=image_size)
        self._project_conv = Conv2d(in_channels=oup, out_channels=final_oup, kernel_size=1, bias=False)
        self._bn2 = nn.BatchNorm2d(num_features=final_oup, momentum=self._bn_mom, eps=self._bn_eps)
        self._swish = nn.SiLU()

    def forward(self, inputs, drop_connect_rate=None):
        # Expansion and Depthwise Convolution
        x = inputs
        if self.expand_ratio != 1:
            x = self._expand_conv(inputs)
            x = self._bn0(x)
            x = self._swish(x)

        x = self._depthwise_conv(x)
        x = self._bn1(x)
        x = self._swish(x)

        # Squeeze and Excitation
        if self.has_se:
            x_squeezed = F.adaptive_avg_pool2d(x, 1)
            x_squeezed = self._se_reduce(x_squeezed)
            x_squeezed = self._swish(x_squeezed)
            x_squeezed = self._se_expand(x_squeezed)
            x = torch.sigmoid(x_squeezed) * x

        # Pointwise Convolution
        x = self._project_conv(x)
        x = self._bn2(x)

        # Skip connection and drop connect
        if self.id_skip and self.stride == 1 and self.input_filters == self.output_filters:
            # The combination of skip connection and drop connect brings about stochastic depth.
            if drop_connect_rate:
                x = drop_connect(x, p=drop_connect_rate, training=self.training)
            x = x + inputs  # skip connection
        return x


class EfficientNet(nn.Module):
    def __init__(self, num_classes=CLASSES, image_size=IMAGE, drop_connect_rate=0.2, dynamic=False):
        super().__init__()
        self.drop_connect_rate = drop_connect_rate
        Conv2d = get_same_padding_conv2d(image_size=None if dynamic else image_size)
        out_channels = round_filters(8)
        self._conv_stem = Conv2d(3, out_channels, kernel_size=3, stride=2, bias=False)
        self._bn0 = nn.BatchNorm2d(num_features=out_channels, momentum=1 - 0.99, eps=1e-3)
        image_size = None if dynamic else math.ceil(image_size / 2)
        self._blocks = nn.ModuleList(
            [
                MBConvBlock(8, 8, 1, 3, 1, 0.25, image_size),
                MBConvBlock(8, 16, 4, 3, 2, 0.25, image_size),
                MBConvBlock(16, 16, 4, 5, 1, 0.25, None if dynamic else math.ceil(image_size / 2)),
            ]
        )
        self._conv_head = nn.Conv2d(16, 32, kernel_size=1, bias=False)
        self._bn1 = nn.BatchNorm2d(num_features=32, momentum=1 - 0.99, eps=1e-3)
        self._avg_pooling = nn.AdaptiveAvgPool2d(1)
        self._dropout = nn.Dropout(DROPOUT)
        self._fc = nn.Linear(32, num_classes)
        self._swish = Swish()

    def extract_features(self, inputs):
        # Stem
        x = self._swish(self._bn0(self._conv_stem(inputs)))
        # Blocks
        for idx, block in enumerate(self._blocks):
            drop_connect_rate = self.drop_connect_rate
            if drop_connect_rate:
                drop_connect_rate *= float(idx) / len(self._blocks)  # scale drop connect_rate
            x = block(x, drop_connect_rate=drop_connect_rate)
        # Head
        x = self._swish(self._bn1(self._conv_head(x)))
        return x

    def forward(self, inputs):
        x = self.extract_features(inputs)
        x = self._avg_pooling(x)
        x = x.flatten(start_dim=1)
        x = self._dropout(x)
        x = self._fc(x)
        return x


def synthetic_batch(step):
    rng = np.random.default_rng(step)
    labels = rng.integers(0, CLASSES, BATCH)
    yy, xx = np.mgrid[0:IMAGE, 0:IMAGE].astype(np.float32) / IMAGE
    images = np.stack([np.sin((2 + c) * xx + c * yy + rng.uniform(0, 1)) for c in labels])[:, None].repeat(3, 1)
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels)


def build():
    torch.manual_seed(0)
    if MODEL == "efficientnet":
        return EfficientNet(drop_connect_rate=2 * DROP_PATH)
    return MLPMixer(
        image_size=IMAGE, channels=3, patch_size=2, dim=8, depth=2, num_classes=CLASSES, drop_path_rate=DROP_PATH
    )


def train(model, steps=3):
    torch.manual_seed(1)  # stochastic depth's draws
    if MODEL == "efficientnet":
        optimizer = optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.9, eps=1e-3, momentum=0.9, weight_decay=1e-5)
    else:
        optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    record = {"losses": [], "accuracy": [], "lr": []}
    for step in range(steps):
        model.train()
        images, labels = synthetic_batch(step)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        record["lr"].append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        images, labels = synthetic_batch(99)
        logits = model(images)
        record["accuracy"] = (logits.argmax(1) == labels).float().mean().item()
        record["logits"] = logits.flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
