"""pytorch/examples' super_resolution (model.py, main.py) at a tiny size on synthetic luminance images:
an ESPCN-style net (Conv2d 5x5 then 3x3 with ``(kernel - 1) // 2`` padding, ``upscale_factor ** 2``
channels) ending in ``nn.PixelShuffle(upscale_factor)``, its weights set in ``_initialize_weights`` by
``init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))``; ``nn.MSELoss``, Adam, the
epoch loss ``epoch_loss += loss.item()`` over ``len(training_data_loader)``, and the test PSNR
``10 * log10(1 / mse.item())`` averaged over the batches (``from math import log10``); a
``torch.save(model, ...)``-style checkpoint is here a ``state_dict`` copy, then super-resolving one
image as ``model(input).cpu()`` with ``out[0].detach().numpy()`` clipped with ``clip(0, 255)``."""

from __future__ import annotations

from math import log10

import numpy as np
from shim import DataLoader, TensorDataset, nn, optim, torch

init = nn.init
SHUFFLE = True
UPSCALE = 2
LR_SIDE = 6


def make_data(n=24, seed=4):
    """Low-resolution inputs and their high-resolution targets (the example's Y channel)."""
    rng = np.random.default_rng(seed)
    side = LR_SIDE * UPSCALE
    yy, xx = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    freq = rng.uniform(0.2, 0.8, size=(n, 2))
    phase = rng.uniform(0, np.pi, size=(n, 1, 1))
    target = 0.5 + 0.5 * np.sin(freq[:, :1, None] * yy + freq[:, 1:, None] * xx + phase)
    target = target[:, None].astype(np.float32)
    low = target.reshape(n, 1, LR_SIDE, UPSCALE, LR_SIDE, UPSCALE).mean(axis=(3, 5))  # box downscale
    return torch.tensor(low), torch.tensor(target)


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor**2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv4.weight)


def build():
    torch.manual_seed(123)
    model = Net(upscale_factor=UPSCALE)
    # the orthogonal rows really are orthogonal, scaled by the gain
    w = model.conv1.weight.detach().reshape(16, -1)
    gram = w @ w.t()
    assert torch.allclose(gram, torch.eye(16) * init.calculate_gain("relu") ** 2, atol=1e-4)
    return model


def train(model, steps=4):
    low, high = make_data()
    training_data_loader = DataLoader(TensorDataset(low[:16], high[:16]), batch_size=4, shuffle=SHUFFLE)
    testing_data_loader = DataLoader(TensorDataset(low[16:], high[16:]), batch_size=4, shuffle=False)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    losses, epoch_losses = [], []

    while len(losses) < steps:
        epoch_loss = 0
        for iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0], batch[1]

            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            progress = f"===> Epoch[{len(epoch_losses) + 1}]({iteration}/{len(training_data_loader)})"
            assert progress.endswith("/4)"), progress
            if len(losses) == steps:
                break
        epoch_losses.append(epoch_loss / iteration)

    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0], batch[1]

            prediction = model(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    avg_psnr /= len(testing_data_loader)

    checkpoint = {key: value.clone() for key, value in model.state_dict().items()}
    model = Net(upscale_factor=UPSCALE)
    model.load_state_dict(checkpoint)
    out = model(low[:1]).cpu()
    out_img_y = out[0].detach().numpy()
    out_img_y *= 255.0
    out_img_y = out_img_y.clip(0, 255)
    return {
        "losses": losses,
        "epoch_losses": epoch_losses,
        "psnr": avg_psnr,
        "out_shape": list(out.shape),
        "out_img": float(out_img_y.sum()),
    }


if __name__ == "__main__":
    print(train(build(), steps=12))
