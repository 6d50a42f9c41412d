"""Phillip Lippe's UvA deep learning tutorial 5 (Inception, ResNet and DenseNet) at tiny sizes on synthetic
images in place of CIFAR-10, its Lightning module written as the plain loop it runs. ``ARCH`` picks one.

Its idioms: ``act_fn_by_name = {"tanh": nn.Tanh, "relu": nn.ReLU, "leakyrelu": nn.LeakyReLU, "gelu":
nn.GELU}`` classes instantiated inside the blocks; hparams as ``SimpleNamespace(...)`` read by
``self.hparams.c_hidden``; ``InceptionBlock`` with ``c_red`` and ``c_out`` dicts, branches of
``nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...), act_fn())``, a ``nn.MaxPool2d(kernel_size=3,
padding=1, stride=1)`` branch and ``torch.cat([x_1x1, x_3x3, x_5x5, x_max], dim=1)``; ``ResNetBlock`` and
``PreActResNetBlock`` with ``subsample`` by a strided conv (``bias=False``) or a ``downsample`` of
``BatchNorm2d``, ``act_fn()`` and a 1x1 stride-2 conv; ``resnet_blocks_by_name`` picking the block class;
``DenseLayer`` with ``torch.cat([out, x], dim=1)``, ``DenseBlock`` growing ``c_in + layer_idx *
growth_rate`` and ``TransitionLayer`` ending in ``nn.AvgPool2d(kernel_size=2, stride=2)``; ``_init_params``
by ``nn.init.kaiming_normal_(m.weight, nonlinearity=self.hparams.act_fn_name)`` for ``nn.Conv2d`` and
``nn.init.constant_`` for ``nn.BatchNorm2d`` over ``self.modules()`` (``nonlinearity="relu"`` for GELU,
as the tutorial's GoogleNet does through its own name); the output head ``nn.Sequential(nn.AdaptiveAvgPool2d((1,
1)), nn.Flatten(), nn.Linear(...))``; the data normalised by ``DATA_MEANS = (train_dataset.data /
255.0).mean(axis=(0, 1, 2))`` and ``DATA_STD``; ``optim.SGD(self.parameters(), lr=0.1, momentum=0.9,
weight_decay=1e-4)`` with ``optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.1)``;
``acc = (preds.argmax(dim=-1) == labels).float().mean()``; a ``transforms.RandomHorizontalFlip`` as a
``torch.flip`` of every other batch; and the test accuracy under ``model.eval()``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from shim import F, nn, optim, torch

ARCH = "googlenet"  # or "resnet", "preact_resnet", "densenet"
ACT_FN = "relu"  # one of act_fn_by_name
SHUFFLE = True

act_fn_by_name = {"tanh": nn.Tanh, "relu": nn.ReLU, "leakyrelu": nn.LeakyReLU, "gelu": nn.GELU}


class InceptionBlock(nn.Module):
    def __init__(self, c_in, c_red: dict, c_out: dict, act_fn):
        """
        Inputs:
            c_in - Number of input feature maps from the previous layers
            c_red - Dictionary with keys "3x3" and "5x5" specifying the output of the dimensionality reducing 1x1 convolutions
            c_out - Dictionary with keys "1x1", "3x3", "5x5", and "max"
            act_fn - Activation class constructor (e.g. nn.ReLU)
        """
        super().__init__()
        # 1x1 convolution branch
        self.conv_1x1 = nn.Sequential(
            nn.Conv2d(c_in, c_out["1x1"], kernel_size=1), nn.BatchNorm2d(c_out["1x1"]), act_fn()
        )
        # 3x3 convolution branch
        self.conv_3x3 = nn.Sequential(
            nn.Conv2d(c_in, c_red["3x3"], kernel_size=1),
            nn.BatchNorm2d(c_red["3x3"]),
            act_fn(),
            nn.Conv2d(c_red["3x3"], c_out["3x3"], kernel_size=3, padding=1),
            nn.BatchNorm2d(c_out["3x3"]),
            act_fn(),
        )
        # 5x5 convolution branch
        self.conv_5x5 = nn.Sequential(
            nn.Conv2d(c_in, c_red["5x5"], kernel_size=1),
            nn.BatchNorm2d(c_red["5x5"]),
            act_fn(),
            nn.Conv2d(c_red["5x5"], c_out["5x5"], kernel_size=5, padding=2),
            nn.BatchNorm2d(c_out["5x5"]),
            act_fn(),
        )
        # Max-pool branch
        self.max_pool = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, padding=1, stride=1),
            nn.Conv2d(c_in, c_out["max"], kernel_size=1),
            nn.BatchNorm2d(c_out["max"]),
            act_fn(),
        )

    def forward(self, x):
        x_1x1 = self.conv_1x1(x)
        x_3x3 = self.conv_3x3(x)
        x_5x5 = self.conv_5x5(x)
        x_max = self.max_pool(x)
        x_out = torch.cat([x_1x1, x_3x3, x_5x5, x_max], dim=1)
        return x_out


class GoogleNet(nn.Module):
    def __init__(self, num_classes=10, act_fn_name="relu", **kwargs):
        super().__init__()
        self.hparams = SimpleNamespace(
            num_classes=num_classes, act_fn_name=act_fn_name, act_fn=act_fn_by_name[act_fn_name]
        )
        self._create_network()
        self._init_params()

    def _create_network(self):
        # A first convolution on the original image to scale up the channel size
        self.input_net = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), self.hparams.act_fn()
        )
        # Stacking inception blocks
        self.inception_blocks = nn.Sequential(
            InceptionBlock(
                8,
                c_red={"3x3": 4, "5x5": 2},
                c_out={"1x1": 2, "3x3": 4, "5x5": 2, "max": 2},
                act_fn=self.hparams.act_fn,
            ),
            nn.MaxPool2d(3, stride=2, padding=1),  # 8x8 => 4x4
            InceptionBlock(
                10,
                c_red={"3x3": 4, "5x5": 2},
                c_out={"1x1": 4, "3x3": 4, "5x5": 2, "max": 2},
                act_fn=self.hparams.act_fn,
            ),
        )
        # Mapping to classification output
        self.output_net = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(12, self.hparams.num_classes)
        )

    def _init_params(self):
        # Based on our discussion in Tutorial 4, we should initialize the convolutions according to the activation
        # function
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity=self.hparams.act_fn_name)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.input_net(x)
        x = self.inception_blocks(x)
        x = self.output_net(x)
        return x


class ResNetBlock(nn.Module):
    def __init__(self, c_in, act_fn, subsample=False, c_out=-1):
        """
        Inputs:
            c_in - Number of input features
            act_fn - Activation class constructor (e.g. nn.ReLU)
            subsample - If True, we want to apply a stride inside the block and reduce the output shape by 2 in height and width
            c_out - Number of output features. Note that this is only relevant if subsample is True, as otherwise, c_out = c_in
        """
        super().__init__()
        if not subsample:
            c_out = c_in
        # Network representing F
        self.net = nn.Sequential(
            nn.Conv2d(
                c_in, c_out, kernel_size=3, padding=1, stride=1 if not subsample else 2, bias=False
            ),  # No bias needed as the Batch Norm handles it
            nn.BatchNorm2d(c_out),
            act_fn(),
            nn.Conv2d(c_out, c_out, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        # 1x1 convolution with stride 2 means we take the upper left value, and transform it to new output size
        self.downsample = nn.Conv2d(c_in, c_out, kernel_size=1, stride=2) if subsample else None
        self.act_fn = act_fn()

    def forward(self, x):
        z = self.net(x)
        if self.downsample is not None:
            x = self.downsample(x)
        out = z + x
        out = self.act_fn(out)
        return out


class PreActResNetBlock(nn.Module):
    def __init__(self, c_in, act_fn, subsample=False, c_out=-1):
        super().__init__()
        if not subsample:
            c_out = c_in
        # Network representing F
        self.net = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, stride=1 if not subsample else 2, bias=False),
            nn.BatchNorm2d(c_out),
            act_fn(),
            nn.Conv2d(c_out, c_out, kernel_size=3, padding=1, bias=False),
        )
        # 1x1 convolution needs to apply non-linearity as well as not done on skip connection
        self.downsample = (
            nn.Sequential(nn.BatchNorm2d(c_in), act_fn(), nn.Conv2d(c_in, c_out, kernel_size=1, stride=2, bias=False))
            if subsample
            else None
        )

    def forward(self, x):
        z = self.net(x)
        if self.downsample is not None:
            x = self.downsample(x)
        out = z + x
        return out


resnet_blocks_by_name = {"ResNetBlock": ResNetBlock, "PreActResNetBlock": PreActResNetBlock}


class ResNet(nn.Module):
    def __init__(self, num_classes=10, num_blocks=[2, 2], c_hidden=[4, 8], act_fn_name="relu",  # noqa: B006
                 block_name="ResNetBlock", **kwargs):  # fmt: skip
        """
        Inputs:
            num_classes - Number of classification outputs (10 for CIFAR10)
            num_blocks - List with the number of ResNet blocks to use. The first block of each group uses downsampling, except the first.
            c_hidden - List with the hidden dimensionalities in the different blocks. Usually multiplied by 2 the deeper we go.
            act_fn_name - Name of the activation function to use, looked up in "act_fn_by_name"
            block_name - Name of the ResNet block, looked up in "resnet_blocks_by_name"
        """
        super().__init__()
        assert block_name in resnet_blocks_by_name
        self.hparams = SimpleNamespace(
            num_classes=num_classes, c_hidden=c_hidden, num_blocks=num_blocks, act_fn_name=act_fn_name,
            act_fn=act_fn_by_name[act_fn_name], block_class=resnet_blocks_by_name[block_name],
        )  # fmt: skip
        self._create_network()
        self._init_params()

    def _create_network(self):
        c_hidden = self.hparams.c_hidden
        # A first convolution on the original image to scale up the channel size
        if self.hparams.block_class == PreActResNetBlock:  # => Don't apply non-linearity on output
            self.input_net = nn.Sequential(nn.Conv2d(3, c_hidden[0], kernel_size=3, padding=1, bias=False))
        else:
            self.input_net = nn.Sequential(
                nn.Conv2d(3, c_hidden[0], kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(c_hidden[0]),
                self.hparams.act_fn(),
            )
        # Creating the ResNet blocks
        blocks = []
        for block_idx, block_count in enumerate(self.hparams.num_blocks):
            for bc in range(block_count):
                # Subsample the first block of each group, except the very first one.
                subsample = bc == 0 and block_idx > 0
                blocks.append(
                    self.hparams.block_class(
                        c_in=c_hidden[block_idx if not subsample else (block_idx - 1)],
                        act_fn=self.hparams.act_fn,
                        subsample=subsample,
                        c_out=c_hidden[block_idx],
                    )
                )
        self.blocks = nn.Sequential(*blocks)
        # Mapping to classification output
        self.output_net = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(c_hidden[-1], self.hparams.num_classes)
        )

    def _init_params(self):
        # Based on our discussion in Tutorial 4, we should initialize the convolutions according to the activation
        # function. Fan-out focuses on the gradient distribution, and is commonly used in ResNets
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity=self.hparams.act_fn_name)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.input_net(x)
        x = self.blocks(x)
        x = self.output_net(x)
        return x


class DenseLayer(nn.Module):
    def __init__(self, c_in, bn_size, growth_rate, act_fn):
        """
        Inputs:
            c_in - Number of input channels
            bn_size - Bottleneck size (factor of growth rate) for the output of the 1x1 convolution. Typically between 2 and 4.
            growth_rate - Number of output channels of the 3x3 convolution
            act_fn - Activation class constructor (e.g. nn.ReLU)
        """
        super().__init__()
        self.net = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, bn_size * growth_rate, kernel_size=1, bias=False),
            nn.BatchNorm2d(bn_size * growth_rate),
            act_fn(),
            nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, padding=1, bias=False),
        )

    def forward(self, x):
        out = self.net(x)
        out = torch.cat([out, x], dim=1)
        return out


class DenseBlock(nn.Module):
    def __init__(self, c_in, num_layers, bn_size, growth_rate, act_fn):
        super().__init__()
        layers = []
        for layer_idx in range(num_layers):
            # Input channels are original plus the feature maps from previous layers
            layer_c_in = c_in + layer_idx * growth_rate
            layers.append(DenseLayer(c_in=layer_c_in, bn_size=bn_size, growth_rate=growth_rate, act_fn=act_fn))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        out = self.block(x)
        return out


class TransitionLayer(nn.Module):
    def __init__(self, c_in, c_out, act_fn):
        super().__init__()
        self.transition = nn.Sequential(
            nn.BatchNorm2d(c_in),
            act_fn(),
            nn.Conv2d(c_in, c_out, kernel_size=1, bias=False),
            nn.AvgPool2d(kernel_size=2, stride=2),  # Average the output for each 2x2 pixel group
        )

    def forward(self, x):
        return self.transition(x)


class DenseNet(nn.Module):
    def __init__(self, num_classes=10, num_layers=[2, 2], bn_size=2, growth_rate=4, act_fn_name="relu",  # noqa: B006
                 **kwargs):  # fmt: skip
        super().__init__()
        self.hparams = SimpleNamespace(
            num_classes=num_classes, num_layers=num_layers, bn_size=bn_size, growth_rate=growth_rate,
            act_fn_name=act_fn_name, act_fn=act_fn_by_name[act_fn_name],
        )  # fmt: skip
        self._create_network()
        self._init_params()

    def _create_network(self):
        c_hidden = self.hparams.growth_rate * self.hparams.bn_size  # The start number of hidden channels
        # A first convolution on the original image to scale up the channel size
        self.input_net = nn.Sequential(
            # No batch norm or activation function as done inside the Dense layers
            nn.Conv2d(3, c_hidden, kernel_size=3, padding=1)
        )
        # Creating the dense blocks, eventually including transition layers
        blocks = []
        for block_idx, num_layers in enumerate(self.hparams.num_layers):
            blocks.append(
                DenseBlock(
                    c_in=c_hidden,
                    num_layers=num_layers,
                    bn_size=self.hparams.bn_size,
                    growth_rate=self.hparams.growth_rate,
                    act_fn=self.hparams.act_fn,
                )
            )
            c_hidden = c_hidden + num_layers * self.hparams.growth_rate  # Overall output of the dense block
            if block_idx < len(self.hparams.num_layers) - 1:  # Don't apply transition layer on last block
                blocks.append(TransitionLayer(c_in=c_hidden, c_out=c_hidden // 2, act_fn=self.hparams.act_fn))
                c_hidden = c_hidden // 2
        self.blocks = nn.Sequential(*blocks)
        # Mapping to classification output
        self.output_net = nn.Sequential(
            nn.BatchNorm2d(c_hidden),  # The features have not passed a non-linearity until here.
            self.hparams.act_fn(),
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten(),
            nn.Linear(c_hidden, self.hparams.num_classes),
        )

    def _init_params(self):
        # Based on our discussion in Tutorial 4, we should initialize the convolutions according to the activation
        # function
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity=self.hparams.act_fn_name)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.input_net(x)
        x = self.blocks(x)
        x = self.output_net(x)
        return x


model_dict = {"GoogleNet": GoogleNet, "ResNet": ResNet, "DenseNet": DenseNet}


def create_model(model_name, model_hparams):
    if model_name in model_dict:
        return model_dict[model_name](**model_hparams)
    else:
        assert False, f'Unknown model name "{model_name}". Available models are: {str(model_dict.keys())}'  # noqa: B011  (the tutorial's)


def build():
    torch.manual_seed(42)
    # kaiming_normal_ knows relu, leaky_relu and tanh: the tutorial runs GELU nets under "relu"
    act = {"leakyrelu": "leaky_relu", "gelu": "relu"}.get(ACT_FN, ACT_FN)
    if ARCH == "googlenet":
        model = create_model("GoogleNet", {"num_classes": 4, "act_fn_name": act})
    elif ARCH in ("resnet", "preact_resnet"):
        block = "ResNetBlock" if ARCH == "resnet" else "PreActResNetBlock"
        model = create_model("ResNet", {"num_classes": 4, "act_fn_name": act, "block_name": block})
    else:
        model = create_model("DenseNet", {"num_classes": 4, "act_fn_name": act})
    if ACT_FN != act:  # the blocks' activation: the name's own class
        model.hparams.act_fn = act_fn_by_name[ACT_FN]
    return model


def train(model, steps=3):
    rng = np.random.RandomState(0)
    templates = np.random.RandomState(4).randint(0, 256, (4, 8, 8, 3))
    labels = rng.randint(0, 4, 16)
    raw = np.clip(templates[labels] * 0.6 + rng.randint(0, 100, (16, 8, 8, 3)), 0, 255).astype(np.uint8)
    DATA_MEANS = (raw / 255.0).mean(axis=(0, 1, 2))
    DATA_STD = (raw / 255.0).std(axis=(0, 1, 2))
    images = ((raw / 255.0 - DATA_MEANS) / DATA_STD).transpose(0, 3, 1, 2).astype(np.float32)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    torch.manual_seed(1)
    train_loader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=SHUFFLE, drop_last=True)
    test_loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=False)
    # configure_optimizers
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.1)
    loss_module = nn.CrossEntropyLoss()
    record = {"losses": [], "accs": [], "lrs": [], "mean": DATA_MEANS.tolist()}
    model.train()
    for batch_idx, (imgs, labels) in zip(range(steps), train_loader):
        if batch_idx % 2 == 1:
            imgs = torch.flip(imgs, dims=[3])  # transforms.RandomHorizontalFlip
        # training_step
        preds = model(imgs)
        loss = loss_module(preds, labels)
        acc = (preds.argmax(dim=-1) == labels).float().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()  # the tutorial's is per epoch; one here is one batch
        record["losses"].append(loss.item())
        record["accs"].append(acc.item())
        record["lrs"].append(scheduler.get_last_lr()[0])
    # test_step
    model.eval()
    with torch.no_grad():
        for imgs, labels in test_loader:
            preds = model(imgs).argmax(dim=-1)
            acc = (labels == preds).sum().item() / labels.shape[0]
            record.setdefault("test_acc", []).append(acc)
            record.setdefault("test_logits", []).append(F.softmax(model(imgs), dim=-1)[:2].tolist())
    record["params"] = sum(np.prod(p.shape) for p in model.parameters())
    return record


if __name__ == "__main__":
    print(train(build()))
