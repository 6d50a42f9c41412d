"""pytorch/examples' VAE as of PyTorch 0.3-0.4, at 6x6 images, trained by an Adam written the pre-1.5 way.

Its idioms: ``F.binary_cross_entropy(recon_x, x.view(-1, 36), size_average=False)`` (the legacy argument,
mapped to ``reduction='sum'``); ``F.sigmoid`` in ``decode``; the reparameterisation ``std =
logvar.mul(0.5).exp_()``, ``eps = Variable(std.data.new(std.size()).normal_())``,
``eps.mul(std).add_(mu)``; ``KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())``;
``train_loss += loss.data.item()`` and ``'{:.4f}'.format(train_loss / len(train_loader.dataset))``; a
test pass under ``Variable(data, volatile=True)``; samples from ``Variable(torch.randn(4, 3))``; and an
optimizer subclassing ``torch.optim.Optimizer`` with the deprecated scalar-first overloads of its day:
``exp_avg.mul_(beta1).add_(1 - beta1, grad)``, ``exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad,
grad)``, ``p.data.addcdiv_(-step_size, exp_avg, denom)`` (PyTorch warns once and takes them)."""

# ruff: noqa: UP008, UP032  (the old repositories' spelling is the point: super(VAE, self) and .format)

from __future__ import annotations

import math
import warnings

import numpy as np
from shim import F, nn, torch

Variable = torch.autograd.Variable  # from torch.autograd import Variable

PIXELS, HIDDEN, LATENT, BATCH = 36, 12, 3, 4
SAMPLE_NOISE = True  # eps drawn from the generator (False: zeros, the mean's path)


class OldAdam(torch.optim.Optimizer):
    """Adam as 2017 repositories copied it out of torch/optim/adam.py."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super(OldAdam, self).__init__(params, defaults)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = grad.new().resize_as_(grad).zero_()
                    state["exp_avg_sq"] = grad.new().resize_as_(grad).zero_()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad.add(group["weight_decay"], p.data)
                exp_avg.mul_(beta1).add_(1 - beta1, grad)
                exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                step_size = group["lr"] * math.sqrt(bias_correction2) / bias_correction1
                p.data.addcdiv_(-step_size, exp_avg, denom)
        return loss


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(PIXELS, HIDDEN)
        self.fc21 = nn.Linear(HIDDEN, LATENT)
        self.fc22 = nn.Linear(HIDDEN, LATENT)
        self.fc3 = nn.Linear(LATENT, HIDDEN)
        self.fc4 = nn.Linear(HIDDEN, PIXELS)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def encode(self, x):
        h1 = self.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        if self.training:
            std = logvar.mul(0.5).exp_()
            if SAMPLE_NOISE:
                eps = Variable(std.data.new(std.size()).normal_())
            else:
                eps = Variable(std.data.new(std.size()).zero_())
            return eps.mul(std).add_(mu)
        else:
            return mu

    def decode(self, z):
        h3 = self.relu(self.fc3(z))
        return F.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, PIXELS))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, PIXELS), size_average=False)
    # see Appendix B from VAE paper: Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def build():
    torch.manual_seed(1)
    return VAE()


def train(model, steps=3):
    torch.manual_seed(1)
    rng = np.random.RandomState(0)
    images = torch.from_numpy((rng.rand(BATCH * steps, 1, 6, 6) > 0.5).astype(np.float32))
    test_images = torch.from_numpy((rng.rand(BATCH, 1, 6, 6) > 0.5).astype(np.float32))
    optimizer = OldAdam(model.parameters(), lr=1e-2)
    record = {"losses": [], "lines": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated overloads warn once in PyTorch, once a line in vkml
        model.train()
        train_loss = 0
        for batch_idx in range(steps):
            data = Variable(images[batch_idx * BATCH : (batch_idx + 1) * BATCH])
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.data.item()
            optimizer.step()
            record["losses"].append(loss.data.item() / len(data))
        record["lines"].append("====> Epoch: {} Average loss: {:.4f}".format(1, train_loss / (BATCH * steps)))
        model.eval()
        test_loss = 0
        data = Variable(test_images, volatile=True)
        recon_batch, mu, logvar = model(data)
        test_loss += loss_function(recon_batch, data, mu, logvar).data.item()
        record["lines"].append("====> Test set loss: {:.4f}".format(test_loss / BATCH))
        sample = Variable(torch.randn(4, LATENT))
        sample = model.decode(sample).cpu()
    record["test_loss"] = test_loss
    record["sample"] = sample.data.view(4, 1, 6, 6).sum(3).numpy().tolist()
    record["state_steps"] = [optimizer.state[p]["step"] for p in model.parameters()]
    return record


if __name__ == "__main__":
    print(train(build()))
