"""A VQ-VAE with an exponential-moving-average codebook, as the widely copied PyTorch VQ-VAE notebooks
write it.

Its idioms: ``inputs.permute(0, 2, 3, 1).contiguous()`` and ``view(-1, D)``; distances
``torch.sum(flat**2, dim=1, keepdim=True) + torch.sum(self._embedding.weight**2, dim=1) - 2 *
torch.matmul(flat, self._embedding.weight.t())``; ``torch.argmin(distances, dim=1).unsqueeze(1)`` and
one-hot encodings by ``encodings.scatter_(1, encoding_indices, 1)``; the commitment loss
``F.mse_loss(quantized.detach(), inputs)``; the straight-through estimator
``inputs + (quantized - inputs).detach()``; the perplexity ``torch.exp(-torch.sum(avg_probs *
torch.log(avg_probs + 1e-10)))``; an EMA buffer (``register_buffer``) reassigned under ``self.training``
(an attribute set to a tensor stays a buffer), with Laplace smoothing through ``.data``; the codebook
rebuilt as ``self._embedding.weight = nn.Parameter(self._ema_w / ...)`` each step (the optimizer keeps
the old one); ``weight.data.normal_()`` and ``nn.Parameter(torch.Tensor(n, d))``; a residual stack of
``ReLU(True)``-``Conv2d``; ``ConvTranspose2d`` decoding; the reconstruction loss over the data variance.
``DECAY = 0.0`` gives the plain quantiser with its codebook loss."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

NUM_EMBEDDINGS = 8
EMBEDDING_DIM = 4
COMMITMENT_COST = 0.25
DECAY = 0.9  # 0.0: the plain (non-EMA) quantiser with a codebook loss
DEVICE = "cpu"


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.normal_()
        self._commitment_cost = commitment_cost
        self.register_buffer("_ema_cluster_size", torch.zeros(num_embeddings))
        self._ema_w = nn.Parameter(torch.Tensor(num_embeddings, self._embedding_dim))
        self._ema_w.data.normal_()
        self._decay = decay
        self._epsilon = epsilon

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (
            torch.sum(flat_input**2, dim=1, keepdim=True)
            + torch.sum(self._embedding.weight**2, dim=1)
            - 2 * torch.matmul(flat_input, self._embedding.weight.t())
        )
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)

        if self.training and self._decay > 0:
            self._ema_cluster_size = self._ema_cluster_size * self._decay + (1 - self._decay) * torch.sum(encodings, 0)
            n = torch.sum(self._ema_cluster_size.data)
            self._ema_cluster_size = (
                (self._ema_cluster_size + self._epsilon) / (n + self._num_embeddings * self._epsilon) * n
            )
            dw = torch.matmul(encodings.t(), flat_input)
            self._ema_w = nn.Parameter(self._ema_w * self._decay + (1 - self._decay) * dw)
            self._embedding.weight = nn.Parameter(self._ema_w / self._ema_cluster_size.unsqueeze(1))

        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        if self._decay > 0:
            loss = self._commitment_cost * e_latent_loss
        else:
            q_latent_loss = F.mse_loss(quantized, inputs.detach())
            loss = q_latent_loss + self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class Residual(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super().__init__()
        self._block = nn.Sequential(
            nn.ReLU(True),
            nn.Conv2d(in_channels, num_residual_hiddens, kernel_size=3, stride=1, padding=1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(num_residual_hiddens, num_hiddens, kernel_size=1, stride=1, bias=False),
        )

    def forward(self, x):
        return x + self._block(x)


class Model(nn.Module):
    def __init__(self, num_hiddens=6, num_residual_hiddens=3):
        super().__init__()
        self._encoder = nn.Sequential(
            nn.Conv2d(1, num_hiddens, kernel_size=4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(num_hiddens, num_hiddens, kernel_size=3, stride=1, padding=1),
            Residual(num_hiddens, num_hiddens, num_residual_hiddens),
            nn.ReLU(),
        )
        self._pre_vq_conv = nn.Conv2d(num_hiddens, EMBEDDING_DIM, kernel_size=1, stride=1)
        self._vq_vae = VectorQuantizerEMA(NUM_EMBEDDINGS, EMBEDDING_DIM, COMMITMENT_COST, DECAY)
        self._decoder = nn.Sequential(
            nn.Conv2d(EMBEDDING_DIM, num_hiddens, kernel_size=3, stride=1, padding=1),
            Residual(num_hiddens, num_hiddens, num_residual_hiddens),
            nn.ReLU(),
            nn.ConvTranspose2d(num_hiddens, 1, kernel_size=4, stride=2, padding=1),
        )

    def forward(self, x):
        z = self._pre_vq_conv(self._encoder(x))
        loss, quantized, perplexity, _ = self._vq_vae(z)
        x_recon = self._decoder(quantized)
        return loss, x_recon, perplexity


def build():
    torch.manual_seed(0)
    return Model()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    rng = np.random.default_rng(0)
    images = rng.random((4 * steps, 1, 8, 8)).astype(np.float32)
    data_variance = float(np.var(images))
    optimizer = optim.Adam(model.parameters(), lr=3e-3, amsgrad=False)
    record = {"losses": [], "recon": [], "perplexity": [], "cluster_size": []}
    model.train()
    for i in range(steps):
        data = torch.from_numpy(images[4 * i : 4 * i + 4]).to(device)
        optimizer.zero_grad()
        vq_loss, data_recon, perplexity = model(data)
        recon_error = F.mse_loss(data_recon, data) / data_variance
        loss = recon_error + vq_loss
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["recon"].append(recon_error.item())
        record["perplexity"].append(perplexity.item())
        record["cluster_size"].append(model._vq_vae._ema_cluster_size.sum().item())
    model.eval()
    with torch.no_grad():
        _, recon, perplexity = model(torch.from_numpy(images[:4]).to(device))
    record["eval_perplexity"] = perplexity.item()
    record["codebook"] = model._vq_vae._embedding.weight.abs().sum().item()
    record["buffers"] = ",".join(name for name, _ in model.named_buffers())
    record["state_keys"] = len(model.state_dict())
    return record


if __name__ == "__main__":
    print(train(build()))
