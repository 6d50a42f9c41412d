"""The official neural style transfer tutorial (advanced_source/neural_style_tutorial.py) with a
small random feature net in place of VGG19 and random images: the gram matrix, ``ContentLoss`` and
``StyleLoss`` layers that keep their targets ``detach()``-ed, a ``Normalization`` module of
``torch.tensor(mean).view(-1, 1, 1)``, model surgery by iterating ``cnn.children()`` into an
``nn.Sequential`` with ``add_module`` and cutting it by slicing, ``requires_grad_(False)`` on the
model and ``requires_grad_(True)`` on the input image, and ``optim.LBFGS([input_img])`` stepped with a
closure that clamps the image in place under no_grad."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

SIDE = 8


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


def build():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 4, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(4, 4, 3, padding=1),
    )


def get_style_model_and_losses(cnn, mean, std, style_img, content_img, content_layers=("conv_2",),
                               style_layers=("conv_1", "conv_2")):  # fmt: skip
    normalization = Normalization(mean, std)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = f"pool_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[: (i + 1)]
    return model, style_losses, content_losses


def train(model, steps=3):
    rng = np.random.default_rng(2)
    style_img = torch.tensor(rng.random((1, 3, SIDE, SIDE), dtype=np.float32))
    content_img = torch.tensor(rng.random((1, 3, SIDE, SIDE), dtype=np.float32))
    input_img = content_img.clone()
    cnn = model.eval()
    style_model, style_losses, content_losses = get_style_model_and_losses(
        cnn, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], style_img, content_img
    )
    input_img.requires_grad_(True)
    style_model.eval()
    style_model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img], max_iter=4)
    style_weight, content_weight = 1000, 1
    losses, scores = [], []
    for _ in range(steps):

        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            style_model(input_img)
            style_score = 0
            content_score = 0
            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss
            style_score *= style_weight
            content_score *= content_weight
            loss = style_score + content_score
            loss.backward()
            scores.append([style_score.item(), content_score.item()])
            return style_score + content_score

        losses.append(optimizer.step(closure).item())
    with torch.no_grad():
        input_img.clamp_(0, 1)
    layers = [name for name, _ in style_model.named_children()]
    return {"losses": losses, "scores": scores, "image": input_img.sum().item(), "layers": " ".join(layers)}


if __name__ == "__main__":
    print(train(build(), steps=3))
