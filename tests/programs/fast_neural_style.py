"""The shape of pytorch/examples' fast neural style: TransformerNet (ReflectionPad2d + Conv2d
layers, InstanceNorm2d with affine, a residual block, nearest upsampling by interpolate), a frozen
Vgg16-style feature net (Sequential slices filled by add_module, requires_grad = False, a
namedtuple of outputs), utils.gram_matrix (view, transpose, bmm) and utils.normalize_batch
(new_tensor, an in-place div_), the style image's repeat, content and style losses; then
stylize's load with the running_mean/var keys filtered by a regex, and the clamp to an image."""

from __future__ import annotations

import io
import re
from collections import namedtuple

import numpy as np
from shim import DataLoader, TensorDataset, nn, optim, torch

SHUFFLE = True


class TransformerNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = ConvLayer(3, 4, kernel_size=5, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(4, affine=True)
        self.conv2 = ConvLayer(4, 8, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(8, affine=True)
        self.res1 = ResidualBlock(8)
        self.deconv1 = UpsampleConvLayer(8, 4, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(4, affine=True)
        self.deconv3 = ConvLayer(4, 3, kernel_size=5, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res1(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.deconv3(y)
        return y


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode="nearest", scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class Vgg16(torch.nn.Module):
    """vgg.py's slicing of torchvision's vgg16().features, on a small stand-in stack."""

    def __init__(self, requires_grad=False):
        super().__init__()
        vgg_pretrained_features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(4, 4, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(4, 8, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(8, 8, 3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        for x in range(4):
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(4, 9):
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(9, 12):
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        vgg_outputs = namedtuple("VggOutputs", ["relu1_2", "relu2_2", "relu3_3"])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3)
        return out


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


class Both(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = TransformerNet()
        self.vgg = Vgg16(requires_grad=False)


def build():
    torch.manual_seed(42)
    return Both()


def train(model, steps=3):
    device = torch.device("cpu")
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.uniform(0, 255, size=(6, 3, 8, 8)).astype(np.float32))
    train_loader = DataLoader(TensorDataset(images, torch.zeros(6)), batch_size=2, shuffle=SHUFFLE)
    transformer = model.transformer.to(device)
    optimizer = optim.Adam(transformer.parameters(), 1e-3)
    mse_loss = torch.nn.MSELoss()
    vgg = model.vgg.to(device)
    style = torch.tensor(rng.uniform(0, 255, size=(3, 8, 8)).astype(np.float32))
    style = style.repeat(2, 1, 1, 1).to(device)
    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]
    transformer.train()
    agg_content_loss = 0.0
    agg_style_loss = 0.0
    count = 0
    losses = []
    for batch_id, (x, _) in enumerate(train_loader):
        if batch_id == steps:
            break
        n_batch = len(x)
        count += n_batch
        optimizer.zero_grad()
        x = x.to(device)
        y = transformer(x)
        y = normalize_batch(y)
        x = normalize_batch(x)
        features_y = vgg(y)
        features_x = vgg(x)
        content_loss = 1e5 * mse_loss(features_y.relu2_2, features_x.relu2_2)
        style_loss = 0.0
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
        style_loss *= 1e10
        total_loss = content_loss + style_loss
        total_loss.backward()
        optimizer.step()
        agg_content_loss += content_loss.item()
        agg_style_loss += style_loss.item()
        losses.append(total_loss.item())
    transformer.eval().cpu()  # neural_style.py's stylize, from the saved state_dict
    f = io.BytesIO()
    torch.save(transformer.state_dict(), f)
    f.seek(0)
    with torch.no_grad():
        style_model = TransformerNet()
        state_dict = torch.load(f)
        for k in list(state_dict.keys()):
            if re.search(r"in\d+\.running_(mean|var)$", k):
                del state_dict[k]
        style_model.load_state_dict(state_dict)
        style_model.to(device)
        style_model.eval()
        output = style_model(images[:1]).cpu()
    img = output[0].clone().clamp(0, 255).numpy()
    img = img.transpose(1, 2, 0).astype("uint8")
    return {
        "losses": losses,
        "content": agg_content_loss,
        "style": agg_style_loss,
        "image": int(img.astype(np.int64).sum()),
    }


if __name__ == "__main__":
    print(train(build(), steps=3))
