"""Dive into Deep Learning's computer vision chapter (PyTorch edition) at tiny sizes on synthetic images (no
download, no pretrained weights: a small ResNet-like network stands in for ``torchvision.models.resnet18``):
image augmentation by tensor operations, fine-tuning with a ten times larger learning rate for the new
output layer, fully convolutional semantic segmentation with a transposed convolution initialized by
bilinear interpolation, and neural style transfer of a synthesized image.

Its idioms: flips by ``torch.flip`` drawn with ``torch.rand(1) < 0.5``, a random crop by slicing, brightness by
multiplication and ``torch.clamp``; ``finetune_net.fc = nn.Linear(finetune_net.fc.in_features, 2)``,
``nn.init.xavier_uniform_(finetune_net.fc.weight)``, ``params_1x = [param for name, param in net.named_parameters()
if name not in ["fc.weight", "fc.bias"]]`` and ``torch.optim.SGD([{'params': params_1x}, {'params':
net.fc.parameters(), 'lr': learning_rate * 10}], lr=learning_rate, weight_decay=0.001)``; the FCN's
``nn.Sequential(*list(pretrained_net.children())[:-2])``, ``net.add_module('final_conv', nn.Conv2d(...))`` and
``nn.ConvTranspose2d(num_classes, num_classes, kernel_size=..., padding=..., stride=...)``; ``bilinear_kernel``'s
``og = (torch.arange(kernel_size).reshape(-1, 1), torch.arange(kernel_size).reshape(1, -1))`` and ``weight[range(
in_channels), range(out_channels), :, :] = filt``, copied by ``W.data.copy_(...)``; the segmentation loss
``F.cross_entropy(inputs, targets, reduction='none').mean(1).mean(1)`` and ``pred.argmax(dim=1)``; style
transfer's ``preprocess`` and ``postprocess`` by ``(img - rgb_mean) / rgb_std`` and ``torch.clamp(img.permute(1,
2, 0) * rgb_std + rgb_mean, 0, 1)``, ``extract_features`` walking ``net[i]``, ``gram``'s ``X.reshape((num_channels,
n))`` and ``torch.matmul(X, X.T) / (num_channels * n)``, ``content_loss`` on ``Y.detach()``, ``tv_loss``,
``sum(styles_l + contents_l + [tv_l])``, ``SynthesizedImage``'s ``nn.Parameter(torch.rand(*img_shape))``,
``gen_img.weight.data.copy_(X.data)`` and ``torch.optim.lr_scheduler.StepLR(trainer, lr_decay_epoch, 0.8)``."""

from __future__ import annotations

from shim import F, nn, torch

data = torch.utils.data  # from torch.utils import data

MODEL = "finetune"  # or "fcn", "style"
SHUFFLE = True
IMG = 16


class Residual(nn.Module):
    def __init__(self, in_channels, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2d(in_channels, num_channels, kernel_size=1, stride=strides) if use_1x1conv else None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


class TinyResNet(nn.Module):
    """``resnet18``'s layout (``conv1``, ``bn1``, ``layer1``..., ``avgpool``, ``fc``) at a few channels."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.layer1 = nn.Sequential(Residual(8, 8))
        self.layer2 = nn.Sequential(Residual(8, 16, use_1x1conv=True, strides=2))
        self.layer3 = nn.Sequential(Residual(16, 16, use_1x1conv=True, strides=2))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, X):
        X = self.layer3(self.layer2(self.layer1(self.relu(self.bn1(self.conv1(X))))))
        return self.fc(torch.flatten(self.avgpool(X), 1))


# ---- image augmentation, by tensor operations ----


def augment(img):
    """A horizontal flip half the time, a random crop padded back, and a random brightness."""
    if torch.rand(1) < 0.5:
        img = torch.flip(img, dims=[-1])
    top, left = torch.randint(0, 3, (2,)).tolist()
    img = F.pad(img[:, top : top + IMG - 2, left : left + IMG - 2], (1, 1, 1, 1), mode="replicate")
    brightness = 0.8 + 0.4 * torch.rand(1)
    return torch.clamp(img * brightness, 0, 1)


def hotdog_images(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    images = torch.rand((n, 3, IMG, IMG), generator=g) * 0.5
    images[labels == 1, 0, 4:12, 2:14] += 0.5  # a red sausage in the hot dogs
    return images, labels


class AugmentedDataset(data.Dataset):
    def __init__(self, images, labels, train):
        self.images, self.labels, self.train = images, labels, train

    def __getitem__(self, idx):
        img = self.images[idx]
        return (augment(img) if self.train else img), self.labels[idx]

    def __len__(self):
        return len(self.labels)


# ---- fine-tuning ----


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def train_fine_tuning(net, learning_rate, num_epochs, record, param_group=True):
    images, labels = hotdog_images(32, 0)
    test_images, test_labels = hotdog_images(16, 1)
    train_iter = data.DataLoader(AugmentedDataset(images, labels, True), batch_size=8, shuffle=SHUFFLE)
    test_iter = data.DataLoader(AugmentedDataset(test_images, test_labels, False), batch_size=8)
    loss = nn.CrossEntropyLoss(reduction="none")
    if param_group:
        params_1x = [param for name, param in net.named_parameters() if name not in ["fc.weight", "fc.bias"]]
        trainer = torch.optim.SGD([{"params": params_1x}, {"params": net.fc.parameters(), "lr": learning_rate * 10}],
                                  lr=learning_rate, weight_decay=0.001)  # fmt: skip
    else:
        trainer = torch.optim.SGD(net.parameters(), lr=learning_rate, weight_decay=0.001)
    record["losses"], record["test_acc"] = [], []
    for _ in range(num_epochs):
        total, count = 0.0, 0
        net.train()
        for X, y in train_iter:
            trainer.zero_grad()
            pred = net(X)
            l = loss(pred, y)  # noqa: E741  (the book's name)
            l.sum().backward()
            trainer.step()
            total += float(l.sum())
            count += y.numel()
        net.eval()
        with torch.no_grad():
            correct = sum(accuracy(net(X), y) for X, y in test_iter)
        record["losses"].append(total / count)
        record["test_acc"].append(correct)
    record["lrs"] = [group["lr"] for group in trainer.param_groups]


# ---- fully convolutional network ----


def bilinear_kernel(in_channels, out_channels, kernel_size):
    factor = (kernel_size + 1) // 2
    if kernel_size % 2 == 1:
        center = factor - 1
    else:
        center = factor - 0.5
    og = (torch.arange(kernel_size).reshape(-1, 1), torch.arange(kernel_size).reshape(1, -1))
    filt = (1 - torch.abs(og[0] - center) / factor) * (1 - torch.abs(og[1] - center) / factor)
    weight = torch.zeros((in_channels, out_channels, kernel_size, kernel_size))
    weight[range(in_channels), range(out_channels), :, :] = filt
    return weight


def fcn_from(pretrained_net, num_classes):
    net = nn.Sequential(*list(pretrained_net.children())[:-2])
    net.add_module("final_conv", nn.Conv2d(16, num_classes, kernel_size=1))
    net.add_module("transpose_conv", nn.ConvTranspose2d(num_classes, num_classes, kernel_size=8, padding=2, stride=4))
    return net


def train_fcn(net, num_epochs, record):
    # the upsampling of the book's section: a bilinear transposed convolution doubling an image
    conv_trans = nn.ConvTranspose2d(3, 3, kernel_size=4, padding=1, stride=2, bias=False)
    conv_trans.weight.data.copy_(bilinear_kernel(3, 3, 4))
    img = torch.rand((3, 6, 6), generator=torch.Generator().manual_seed(4))
    X = img.unsqueeze(0)
    Y = conv_trans(X)
    out_img = Y[0].permute(1, 2, 0).detach()
    record["upsample"] = [list(out_img.shape), out_img[:3, :3, 0].tolist(), bilinear_kernel(1, 1, 3).tolist()]
    num_classes = 3
    W = bilinear_kernel(num_classes, num_classes, 8)
    net.transpose_conv.weight.data.copy_(W)
    images, labels = hotdog_images(16, 2)
    # pixel labels: background 0, the sausage 1, a bright corner 2
    masks = torch.zeros((16, IMG, IMG), dtype=torch.long)
    masks[labels == 1, 4:12, 2:14] = 1
    images[:, :, :4, :4] += 0.4
    masks[:, :4, :4] = 2
    train_iter = data.DataLoader(data.TensorDataset(images, masks), batch_size=4, shuffle=SHUFFLE)

    def loss(inputs, targets):
        return F.cross_entropy(inputs, targets, reduction="none").mean(1).mean(1)

    trainer = torch.optim.SGD(net.parameters(), lr=0.1, weight_decay=1e-3)
    record["losses"], record["pixel_acc"] = [], []
    for _ in range(num_epochs):
        total, correct, pixels = 0.0, 0.0, 0
        net.train()
        for X, y in train_iter:
            trainer.zero_grad()
            pred = net(X)
            l = loss(pred, y)  # noqa: E741  (the book's name)
            l.sum().backward()
            trainer.step()
            total += float(l.sum())
            correct += float((pred.argmax(dim=1) == y).sum())
            pixels += y.numel()
        record["losses"].append(total)
        record["pixel_acc"].append(correct / pixels)
    net.eval()
    X = images[:1]
    pred = net(X).argmax(dim=1)
    record["prediction"] = pred.reshape(pred.shape[1], pred.shape[2])[::4, ::4].tolist()


# ---- neural style transfer ----

rgb_mean = torch.tensor([0.485, 0.456, 0.406])
rgb_std = torch.tensor([0.229, 0.224, 0.225])


def preprocess(img):
    return ((img - rgb_mean.reshape(3, 1, 1)) / rgb_std.reshape(3, 1, 1)).unsqueeze(0)


def postprocess(img):
    img = img[0].to(rgb_std.device)
    img = torch.clamp(img.permute(1, 2, 0) * rgb_std + rgb_mean, 0, 1)
    return img.permute(2, 0, 1)


style_layers, content_layers = [0, 3, 5], [5]


def extract_features(X, content_layers, style_layers, net):
    contents = []
    styles = []
    for i in range(len(net)):
        X = net[i](X)
        if i in style_layers:
            styles.append(X)
        if i in content_layers:
            contents.append(X)
    return contents, styles


def content_loss(Y_hat, Y):
    # We detach the target content from the tree used to dynamically compute the gradient: this is a stated
    # value, not a variable. Otherwise the loss will throw an error.
    return torch.square(Y_hat - Y.detach()).mean()


def gram(X):
    num_channels, n = X.shape[1], X.numel() // X.shape[1]
    X = X.reshape((num_channels, n))
    return torch.matmul(X, X.T) / (num_channels * n)


def style_loss(Y_hat, gram_Y):
    return torch.square(gram(Y_hat) - gram_Y.detach()).mean()


def tv_loss(Y_hat):
    return 0.5 * (torch.abs(Y_hat[:, :, 1:, :] - Y_hat[:, :, :-1, :]).mean()
                  + torch.abs(Y_hat[:, :, :, 1:] - Y_hat[:, :, :, :-1]).mean())  # fmt: skip


content_weight, style_weight, tv_weight = 1, 1e3, 10


def compute_loss(X, contents_Y_hat, styles_Y_hat, contents_Y, styles_Y_gram):
    # Calculate the content, style, and total variance losses respectively
    contents_l = [content_loss(Y_hat, Y) * content_weight for Y_hat, Y in zip(contents_Y_hat, contents_Y, strict=False)]
    styles_l = [style_loss(Y_hat, Y) * style_weight for Y_hat, Y in zip(styles_Y_hat, styles_Y_gram, strict=False)]
    tv_l = tv_loss(X) * tv_weight
    # Add up all the losses
    l = sum(styles_l + contents_l + [tv_l])  # noqa: E741  (the book's name)
    return contents_l, styles_l, tv_l, l


class SynthesizedImage(nn.Module):
    def __init__(self, img_shape, **kwargs):
        super().__init__(**kwargs)
        self.weight = nn.Parameter(torch.rand(*img_shape))

    def forward(self):
        return self.weight


def get_inits(X, lr, styles_Y):
    gen_img = SynthesizedImage(X.shape)
    gen_img.weight.data.copy_(X.data)
    trainer = torch.optim.Adam(gen_img.parameters(), lr=lr)
    styles_Y_gram = [gram(Y) for Y in styles_Y]
    return gen_img(), styles_Y_gram, trainer


def train_style(net, num_epochs, record):
    g = torch.Generator().manual_seed(6)
    content_img, style_img = torch.rand((3, IMG, IMG), generator=g), torch.rand((3, IMG, IMG), generator=g)
    content_X = preprocess(content_img)
    contents_Y, _ = extract_features(content_X, content_layers, style_layers, net)
    style_X = preprocess(style_img)
    _, styles_Y = extract_features(style_X, content_layers, style_layers, net)
    X, styles_Y_gram, trainer = get_inits(content_X, 0.3, styles_Y)
    scheduler = torch.optim.lr_scheduler.StepLR(trainer, 2, 0.8)
    record["losses"], record["parts"] = [], []
    for _ in range(num_epochs):
        trainer.zero_grad()
        contents_Y_hat, styles_Y_hat = extract_features(X, content_layers, style_layers, net)
        contents_l, styles_l, tv_l, l = compute_loss(X, contents_Y_hat, styles_Y_hat, contents_Y, styles_Y_gram)
        l.backward()
        trainer.step()
        scheduler.step()
        record["losses"].append(float(l))
        record["parts"].append([float(sum(contents_l)), float(sum(styles_l)), float(tv_l)])
    record["image"] = postprocess(X)[:, :2, :2].tolist()


def build():
    torch.manual_seed(0)
    pretrained_net = TinyResNet()
    if MODEL == "fcn":
        return fcn_from(pretrained_net, 3)
    if MODEL == "style":
        # the book's VGG-19 feature layers, a few of them
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1),
                             nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())  # fmt: skip
    finetune_net = pretrained_net
    finetune_net.fc = nn.Linear(finetune_net.fc.in_features, 2)
    return finetune_net


def train(net, steps=3):
    torch.manual_seed(1)
    record = {}
    img = hotdog_images(1, 9)[0][0]
    record["augment"] = [augment(img)[:, ::5, ::5].tolist() for _ in range(3)]
    if MODEL == "fcn":
        train_fcn(net, steps, record)
    elif MODEL == "style":
        for param in net.parameters():
            param.requires_grad_(False)
        train_style(net, steps * 2, record)
        record["losses"] = record["losses"][::2]
    else:
        nn.init.xavier_uniform_(net.fc.weight)
        train_fine_tuning(net, 5e-3, steps, record)
    return record


if __name__ == "__main__":
    print(train(build()))
