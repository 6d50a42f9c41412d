"""A categorical VAE trained through the Gumbel-softmax relaxation, written as the well-known
PyTorch re-implementations of Jang et al. (YongfeiYan/Gumbel_Softmax_VAE, dev4488/VAE_gumble) are, at
tiny sizes on synthetic binary images. ``GUMBEL`` picks ``F.gumbel_softmax(hard=True)`` or the
hand-written sampler.

Its idioms: ``sample_gumbel`` by ``-torch.log(-torch.log(U + eps) + eps)`` of ``torch.rand(shape)``;
``gumbel_softmax_sample`` by ``F.softmax(y / temperature, dim=-1)``; the straight-through hard sample
(``_, ind = y.max(dim=-1)``, ``torch.zeros_like(y).view(-1, shape[-1])``, ``y_hard.scatter_(1,
ind.view(-1, 1), 1)``, ``(y_hard - y).detach() + y``); ``F.gumbel_softmax(q_y, tau=temp, hard=True)``;
an encoder-decoder of ``nn.Linear`` with ``nn.ReLU()``/``nn.Sigmoid()`` modules held as attributes;
``x.view(-1, 784)``-style flattening; ``q.view(q.size(0), latent_dim, categorical_dim)`` and
``F.softmax(q_y, dim=-1).reshape(*q.size())``; the loss with the legacy ``F.binary_cross_entropy(...,
size_average=False)`` and the KL to a uniform prior ``torch.sum(qy * torch.log(qy * categorical_dim +
1e-20), dim=-1).mean()``; a temperature annealed by ``np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx),
temp_min)``; and samples from the prior by ``np_y[range(M), ind] = 1`` decoded after
``torch.from_numpy(...).float()``.
"""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

GUMBEL = "functional"  # or "by_hand"
PIXELS = 16
LATENT_DIM = 3
CATEGORICAL_DIM = 4
BATCH = 8
TEMP = 1.0
TEMP_MIN = 0.5
ANNEAL_RATE = 0.3
latent_dim, categorical_dim = LATENT_DIM, CATEGORICAL_DIM


def sample_gumbel(shape, eps=1e-20):
    U = torch.rand(shape)
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax_sample(logits, temperature):
    y = logits + sample_gumbel(logits.size())
    return F.softmax(y / temperature, dim=-1)


def gumbel_softmax(logits, temperature, hard=False):
    """
    ST-gumple-softmax
    input: [*, n_class]
    return: flatten --> [*, n_class] an one-hot vector
    """
    y = gumbel_softmax_sample(logits, temperature)
    if not hard:
        return y.view(-1, latent_dim * categorical_dim)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    # Set gradients w.r.t. y_hard gradients w.r.t. y
    y_hard = (y_hard - y).detach() + y
    return y_hard.view(-1, latent_dim * categorical_dim)


class VAE_gumbel(nn.Module):
    def __init__(self, temp):
        super(VAE_gumbel, self).__init__()  # noqa: UP008 (as the repositories write it)
        self.fc1 = nn.Linear(PIXELS, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, latent_dim * categorical_dim)
        self.fc4 = nn.Linear(latent_dim * categorical_dim, 16)
        self.fc5 = nn.Linear(16, 32)
        self.fc6 = nn.Linear(32, PIXELS)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def encode(self, x):
        h1 = self.relu(self.fc1(x))
        h2 = self.relu(self.fc2(h1))
        return self.relu(self.fc3(h2))

    def decode(self, z):
        h4 = self.relu(self.fc4(z))
        h5 = self.relu(self.fc5(h4))
        return self.sigmoid(self.fc6(h5))

    def forward(self, x, temp, hard):
        q = self.encode(x.view(-1, PIXELS))
        q_y = q.view(q.size(0), latent_dim, categorical_dim)
        if GUMBEL == "functional":
            z = F.gumbel_softmax(q_y, tau=temp, hard=hard).view(-1, latent_dim * categorical_dim)
        else:
            z = gumbel_softmax(q_y, temp, hard)
        return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, qy):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, PIXELS), size_average=False) / x.shape[0]
    log_ratio = torch.log(qy * categorical_dim + 1e-20)
    KLD = torch.sum(qy * log_ratio, dim=-1).mean()
    return BCE + KLD


def synthetic_binary_images(step):
    rng = np.random.default_rng(step)
    patterns = np.array([[i % 2, (i // 2) % 2, (i // 4) % 2, (i // 8) % 2] for i in range(16)], np.float32)
    rows = patterns[rng.integers(0, 16, (BATCH, 4))]  # (batch, 4 rows, 4 columns)
    return torch.from_numpy(rows.reshape(BATCH, 1, 4, 4))


def build():
    torch.manual_seed(0)
    return VAE_gumbel(TEMP)


def train(model, steps=3):
    torch.manual_seed(1)  # the Gumbel noise
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    temp = TEMP
    record = {"losses": [], "temp": [], "codes": [], "samples": []}
    model.train()
    for batch_idx in range(steps):
        data = synthetic_binary_images(batch_idx)
        optimizer.zero_grad()
        recon_batch, qy = model(data, temp, hard=True)
        loss = loss_function(recon_batch, data, qy)
        loss.backward()
        optimizer.step()
        if batch_idx % 1 == 0:
            temp = np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx), TEMP_MIN)
        record["losses"].append(loss.item())
        record["temp"].append(float(temp))
        record["codes"].append(qy.view(-1, latent_dim, categorical_dim).argmax(-1).flatten().tolist())

    model.eval()
    M = 4 * latent_dim
    np_y = np.zeros((M, categorical_dim), dtype=np.float32)
    np_y[range(M), np.random.RandomState(0).choice(categorical_dim, M)] = 1
    np_y = np.reshape(np_y, [M // latent_dim, latent_dim, categorical_dim])
    sample = torch.from_numpy(np_y).view(M // latent_dim, latent_dim * categorical_dim).float()
    with torch.no_grad():
        record["samples"] = model.decode(sample).flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
