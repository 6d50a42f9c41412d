"""The shape of pytorch/examples' mnist_forward_forward: layers trained one at a time by Hinton's
forward-forward rule. Layer subclasses nn.Linear (calling its __init__ with positional device and
dtype) and owns its Adam; Layer.train and Net.train shadow Module.train; Net keeps its layers in a
plain list; overlay_y_on_x writes ``x_[range(n), y] = x.max()`` after an in-place ``*= 0.0``;
goodness is a Python sum of tensors; prediction argmaxes over the ten overlaid labels."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

LR = 0.03
THRESHOLD = 2.0
EPOCHS = 3


def get_y_neg(y):
    """A wrong label for each sample: the example draws it with torch.randint; here a fixed pick."""
    y_neg = y.clone()
    for idx, y_samp in enumerate(y):
        allowed_indices = list(range(10))
        allowed_indices.remove(y_samp.item())
        y_neg[idx] = torch.tensor(allowed_indices)[(y_samp.item() + 3) % 9].item()
    return y_neg


def overlay_y_on_x(x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = optim.Adam(self.parameters(), lr=LR)
        self.threshold = THRESHOLD
        self.num_epochs = EPOCHS
        self.losses = []

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for _ in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log1p(torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.losses.append(loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1])]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for layer in self.layers:
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Holder(nn.Module):
    """Registers Net's listed layers, so that its state_dict (and the comparison) reaches them."""

    def __init__(self):
        super().__init__()
        self.net = Net([20, 16, 16])
        for i, layer in enumerate(self.net.layers):
            self.add_module(f"layer{i}", layer)


def build():
    torch.manual_seed(1)
    return Holder()


def train(model, steps=3):
    net = model.net
    for layer in net.layers:
        layer.num_epochs = steps
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(size=(16, 20)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, size=16))
    x_pos = overlay_y_on_x(x, y)
    x_neg = overlay_y_on_x(x, get_y_neg(y))
    net.train(x_pos, x_neg)
    train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
    return {"losses": net.layers[0].losses, "losses_layer1": net.layers[1].losses, "train_error": train_error}


if __name__ == "__main__":
    print(train(build(), steps=3))
