"""Phillip Lippe's UvA deep learning tutorials 8, 11 and 12 (deep energy-based models, normalizing flows on
images, autoregressive image modelling) at tiny sizes on synthetic images in place of MNIST. ``PART``
picks one.

Tutorial 8's idioms: the ``Sampler`` keeping a buffer of ``torch.rand((1,) + img_shape) * 2 - 1`` examples,
``np.random.binomial(self.sample_size, 0.05)`` fresh ones and ``torch.cat(random.choices(self.examples,
k=...), dim=0)`` old ones, pushed back by ``list(inp_imgs.to(torch.device("cpu")).chunk(self.sample_size,
dim=0)) + self.examples``; ``generate_samples`` switching ``p.requires_grad = False`` on the model,
``inp_imgs.requires_grad = True``, ``had_gradients_enabled = torch.is_grad_enabled()`` with
``torch.set_grad_enabled(True)`` called as a function, ``noise.normal_(0, 0.005)``,
``inp_imgs.data.add_(noise.data)``, ``inp_imgs.data.clamp_(min=-1.0, max=1.0)``, ``-model(inp_imgs)``
summed and backpropagated, ``inp_imgs.grad.data.clamp_(-0.03, 0.03)``, ``inp_imgs.data.add_(-step_size *
inp_imgs.grad.data)``, ``inp_imgs.grad.detach_()`` and ``inp_imgs.grad.zero_()``, then
``model.train(is_training)``; a ``Swish`` CNN scoring images by ``self.cnn_layers(x).squeeze(dim=-1)``;
the training step's ``real_imgs.add_(small_noise).clamp_(min=-1.0, max=1.0)``, ``real_out, fake_out =
self.cnn(inp_imgs).chunk(2, dim=0)``, the regularised contrastive-divergence loss, ``optim.Adam(...,
betas=(0.0, 0.999))`` and ``StepLR(optimizer, 1, gamma=0.97)``.

Tutorial 11's: ``ImageFlow`` encoding through ``nn.ModuleList`` flows with ``ldj`` accumulated in place,
``torch.distributions.normal.Normal(loc=0.0, scale=1.0)``'s ``log_prob(z).sum(dim=[1, 2, 3])``, bits per
dim by ``nll * np.log2(np.exp(1)) / np.prod(imgs.shape[1:])``, importance sampling by ``torch.stack(samples,
dim=-1)`` and ``torch.logsumexp(img_ll, dim=-1) - np.log(self.import_samples)``; ``Dequantization`` by
``torch.rand_like(z).detach()``, its sigmoid and inverse with ``F.softplus`` and the reverse
``torch.floor(z).clamp(min=0, max=self.quants-1).to(torch.int32)``; ``CouplingLayer`` with a registered
``mask`` buffer, a learnable ``scaling_factor`` and ``torch.tanh(s / s_fac) * s_fac``; masks by
``torch.meshgrid(x, y, indexing='ij')`` and ``torch.fmod(xx + yy, 2)`` over int32; ``GatedConvNet`` of
``ConcatELU`` (``torch.cat([F.elu(x), F.elu(-x)], dim=1)``), ``LayerNormChannels`` permuting around
``nn.LayerNorm`` and zero-initialised output ``weight.data.zero_()``; ``SqueezeFlow`` by ``reshape`` and
``permute(0, 1, 3, 5, 2, 4)``; ``SplitFlow`` scoring the split half; sampling under ``@torch.no_grad()``
from ``self.prior.sample(sample_shape=img_shape)`` through ``reversed(self.flows)``.

Tutorial 12's: ``MaskedConvolution`` wrapping an ``nn.Conv2d`` padded by ``dilation*(kernel_size[i]-1)//2``
and writing ``self.conv.weight.data *= self.mask`` (a buffer registered as ``mask[None, None]``) before each
call; vertical and horizontal stack masks built by ``mask[kernel_size//2+1:, :] = 0`` and ``mask[0,
kernel_size//2+1:] = 0``; ``GatedMaskedConv`` with ``chunk(2, dim=1)``, ``torch.tanh(v_val) *
torch.sigmoid(v_gate)`` and dilation 2; ``PixelCNN.forward`` by ``(x.float() / 255.0) * 2 - 1`` and
``out.reshape(out.shape[0], 256, out.shape[1]//256, out.shape[2], out.shape[3])``; the likelihood by
``F.cross_entropy(pred, x, reduction='none')`` over 5-D logits and ``nll.mean(dim=[1, 2, 3]) *
np.log2(np.exp(1))``; sampling into ``torch.zeros(img_shape, dtype=torch.long) - 1`` over
``itertools.product`` with ``(img[:, c, h, w] != -1).all().item()`` and ``torch.multinomial(probs,
num_samples=1).squeeze(dim=-1)``."""

# ruff: noqa: B007  (the tutorial's spelling is the point: unused loop names)
from __future__ import annotations

import itertools
import random

import numpy as np
from shim import F, nn, optim, torch

PART = "ebm"  # or "flow", "pixelcnn"
SHUFFLE = True
FIXED_NOISE = True  # the comparison's: EBM and flow draws from the seeded generator only (same in both)

levels = 8  # the PixelCNN's intensity levels (MNIST's 256)


def images(count, seed=0):
    """MNIST's stand-in: (1, 6, 6) images of blobs, in [0, 1]."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:6, 0:6]
    centres = rng.uniform(1, 4, (count, 2))
    blobs = np.exp(-((yy - centres[:, :1, None]) ** 2 + (xx - centres[:, 1:, None]) ** 2) / 3.0)
    return blobs[:, None].astype(np.float32)


# ---------------------------------------------------------------------------------------- tutorial 8
class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class CNNModel(nn.Module):
    def __init__(self, hidden_features=4, out_dim=1, **kwargs):
        super().__init__()
        # We increase the hidden dimension over layers. Here pre-calculated for simplicity.
        c_hid1 = hidden_features // 2
        c_hid2 = hidden_features
        c_hid3 = hidden_features * 2
        # Series of convolutions and Swish activation functions
        self.cnn_layers = nn.Sequential(
            nn.Conv2d(1, c_hid1, kernel_size=3, stride=2, padding=2),  # [6x6] - Larger padding to get 32x32 image
            Swish(),
            nn.Conv2d(c_hid1, c_hid2, kernel_size=3, stride=2, padding=1),  # [4x4] -> [2x2]
            Swish(),
            nn.Conv2d(c_hid2, c_hid3, kernel_size=2, stride=1, padding=0),  # [2x2] -> [1x1]
            Swish(),
            nn.Flatten(),
            nn.Linear(c_hid3, c_hid3),
            Swish(),
            nn.Linear(c_hid3, out_dim),
        )

    def forward(self, x):
        x = self.cnn_layers(x).squeeze(dim=-1)
        return x


class Sampler:
    def __init__(self, model, img_shape, sample_size, max_len=8192):
        """
        Inputs:
            model - Neural network to use for modeling E_theta
            img_shape - Shape of the images to model
            sample_size - Batch size of the samples
            max_len - Maximum number of data points to keep in the buffer
        """
        super().__init__()
        self.model = model
        self.img_shape = img_shape
        self.sample_size = sample_size
        self.max_len = max_len
        self.examples = [(torch.rand((1,) + img_shape) * 2 - 1) for _ in range(self.sample_size)]

    def sample_new_exmps(self, steps=60, step_size=10):
        """
        Function for getting a new batch of "fake" images.
        Inputs:
            steps - Number of iterations in the MCMC algorithm
            step_size - Learning rate nu in the algorithm above
        """
        # Choose 95% of the batch from the buffer, 5% generate from scratch
        n_new = np.random.binomial(self.sample_size, 0.05)
        rand_imgs = torch.rand((n_new,) + self.img_shape) * 2 - 1
        old_imgs = torch.cat(random.choices(self.examples, k=self.sample_size - n_new), dim=0)
        inp_imgs = torch.cat([rand_imgs, old_imgs], dim=0).detach()
        # Perform MCMC sampling
        inp_imgs = Sampler.generate_samples(self.model, inp_imgs, steps=steps, step_size=step_size)
        # Add new images to the buffer and remove old ones if needed
        self.examples = list(inp_imgs.to(torch.device("cpu")).chunk(self.sample_size, dim=0)) + self.examples
        self.examples = self.examples[: self.max_len]
        return inp_imgs

    @staticmethod
    def generate_samples(model, inp_imgs, steps=60, step_size=10, return_img_per_step=False):
        """
        Function for sampling images for a given model.
        Inputs:
            model - Neural network to use for modeling E_theta
            inp_imgs - Images to start from for sampling. If you want to generate new images, enter noise between -1 and 1.
            steps - Number of iterations in the MCMC algorithm.
            step_size - Learning rate nu in the algorithm above
            return_img_per_step - If True, we return the sample at every iteration of the MCMC
        """
        # Before MCMC: set model parameters to "required_grad=False"
        # because we are only interested in the gradients of the input.
        is_training = model.training
        model.eval()
        for p in model.parameters():
            p.requires_grad = False
        inp_imgs.requires_grad = True
        # Enable gradient calculation if not already the case
        had_gradients_enabled = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        # We use a buffer tensor in which we generate noise each loop iteration.
        # More efficient than creating a new tensor every iteration.
        noise = torch.randn(inp_imgs.shape, device=inp_imgs.device)
        # List for storing generations at each step (for later analysis)
        imgs_per_step = []
        # Loop over K (steps)
        for _ in range(steps):
            # Part 1: Add noise to the input.
            noise.normal_(0, 0.005)
            inp_imgs.data.add_(noise.data)
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            # Part 2: calculate gradients for the current input.
            out_imgs = -model(inp_imgs)
            out_imgs.sum().backward()
            inp_imgs.grad.data.clamp_(-0.03, 0.03)  # For stabilizing and preventing too high gradients
            # Apply gradients to our current samples
            inp_imgs.data.add_(-step_size * inp_imgs.grad.data)
            inp_imgs.grad.detach_()
            inp_imgs.grad.zero_()
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            if return_img_per_step:
                imgs_per_step.append(inp_imgs.clone().detach())
        # Reactivate gradients for parameters for training
        for p in model.parameters():
            p.requires_grad = True
        model.train(is_training)
        # Reset gradient calculation to setting before this function
        torch.set_grad_enabled(had_gradients_enabled)
        if return_img_per_step:
            return torch.stack(imgs_per_step, dim=0)
        else:
            return inp_imgs


class DeepEnergyModel(nn.Module):
    def __init__(self, img_shape, batch_size, alpha=0.1, lr=1e-4, beta1=0.0, **CNN_args):
        super().__init__()
        self.hparams = dict(img_shape=img_shape, batch_size=batch_size, alpha=alpha, lr=lr, beta1=beta1)
        self.cnn = CNNModel(**CNN_args)
        self.example_input_array = torch.zeros(1, *img_shape)

    def forward(self, x):
        z = self.cnn(x)
        return z

    def configure_optimizers(self):
        # Energy models can have issues with momentum as the loss surfaces changes with its parameters.
        # Hence, we set it to 0 by default.
        optimizer = optim.Adam(self.parameters(), lr=self.hparams["lr"], betas=(self.hparams["beta1"], 0.999))
        scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.97)  # Exponential decay over epochs
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        # We add minimal noise to the original images to prevent the model from focusing on purely "clean" inputs
        real_imgs, _ = batch
        small_noise = torch.randn_like(real_imgs) * 0.005
        real_imgs.add_(small_noise).clamp_(min=-1.0, max=1.0)
        # Obtain samples
        fake_imgs = self.sampler.sample_new_exmps(steps=4, step_size=10)
        # Predict energy score for all images
        inp_imgs = torch.cat([real_imgs, fake_imgs], dim=0)
        real_out, fake_out = self.cnn(inp_imgs).chunk(2, dim=0)
        # Calculate losses
        reg_loss = self.hparams["alpha"] * (real_out**2 + fake_out**2).mean()
        cdiv_loss = fake_out.mean() - real_out.mean()
        loss = reg_loss + cdiv_loss
        return loss, [reg_loss.item(), cdiv_loss.item(), real_out.mean().item(), fake_out.mean().item()]


# ---------------------------------------------------------------------------------------- tutorial 11
class ImageFlow(nn.Module):
    def __init__(self, flows, import_samples=2):
        """
        Inputs:
            flows - A list of flows (each a nn.Module) that should be applied on the images.
            import_samples - Number of importance samples to use during testing (see explanation below).
        """
        super().__init__()
        self.flows = nn.ModuleList(flows)
        self.import_samples = import_samples
        # Create prior distribution for final latent space
        self.prior = torch.distributions.normal.Normal(loc=0.0, scale=1.0)

    def forward(self, imgs):
        # The forward function is only used for visualizing the graph
        return self._get_likelihood(imgs)

    def encode(self, imgs):
        # Given a batch of images, return the latent representation z and ldj of the transformations
        z, ldj = imgs, torch.zeros(imgs.shape[0])
        for flow in self.flows:
            z, ldj = flow(z, ldj, reverse=False)
        return z, ldj

    def _get_likelihood(self, imgs, return_ll=False):
        """
        Given a batch of images, return the likelihood of those.
        If return_ll is True, this function returns the log likelihood of the input.
        Otherwise, the ouptut metric is bits per dimension (scaled negative log likelihood)
        """
        z, ldj = self.encode(imgs)
        log_pz = self.prior.log_prob(z).sum(dim=[1, 2, 3])
        log_px = ldj + log_pz
        nll = -log_px
        # Calculating bits per dimension
        bpd = nll * np.log2(np.exp(1)) / np.prod(imgs.shape[1:])
        return bpd.mean() if not return_ll else log_px

    @torch.no_grad()
    def sample(self, img_shape, z_init=None):
        """
        Sample a batch of images from the flow.
        """
        # Sample latent representation from prior
        if z_init is None:
            z = self.prior.sample(sample_shape=img_shape)
        else:
            z = z_init
        # Transform z to x by inverting the flows
        ldj = torch.zeros(img_shape[0])
        for flow in reversed(self.flows):
            z, ldj = flow(z, ldj, reverse=True)
        return z

    def test_step(self, batch):
        # Perform importance sampling during testing => estimate likelihood M times for each image
        samples = []
        for _ in range(self.import_samples):
            img_ll = self._get_likelihood(batch[0], return_ll=True)
            samples.append(img_ll)
        img_ll = torch.stack(samples, dim=-1)
        # To average the probabilities, we need to go from log-space to exp, and back to log.
        # Logsumexp provides us a stable implementation for this
        img_ll = torch.logsumexp(img_ll, dim=-1) - np.log(self.import_samples)
        # Calculate final bpd
        bpd = -img_ll * np.log2(np.exp(1)) / np.prod(batch[0].shape[1:])
        bpd = bpd.mean()
        return bpd


class Dequantization(nn.Module):
    def __init__(self, alpha=1e-5, quants=256):
        """
        Inputs:
            alpha - small constant that is used to scale the original input.
                    Prevents dealing with values very close to 0 and 1 when inverting the sigmoid
            quants - Number of possible discrete values (usually 256 for 8-bit image)
        """
        super().__init__()
        self.alpha = alpha
        self.quants = quants

    def forward(self, z, ldj, reverse=False):
        if not reverse:
            z, ldj = self.dequant(z, ldj)
            z, ldj = self.sigmoid(z, ldj, reverse=True)
        else:
            z, ldj = self.sigmoid(z, ldj, reverse=False)
            z = z * self.quants
            ldj += np.log(self.quants) * np.prod(z.shape[1:])
            z = torch.floor(z).clamp(min=0, max=self.quants - 1).to(torch.int32)
        return z, ldj

    def sigmoid(self, z, ldj, reverse=False):
        # Applies an invertible sigmoid transformation
        if not reverse:
            ldj += (-z - 2 * F.softplus(-z)).sum(dim=[1, 2, 3])
            z = torch.sigmoid(z)
        else:
            z = z * (1 - self.alpha) + 0.5 * self.alpha  # Scale to prevent boundaries 0 and 1
            ldj += np.log(1 - self.alpha) * np.prod(z.shape[1:])
            ldj += (-torch.log(z) - torch.log(1 - z)).sum(dim=[1, 2, 3])
            z = torch.log(z) - torch.log(1 - z)
        return z, ldj

    def dequant(self, z, ldj):
        # Transform discrete values to continuous volumes
        z = z.to(torch.float32)
        z = z + torch.rand_like(z).detach()
        z = z / self.quants
        ldj -= np.log(self.quants) * np.prod(z.shape[1:])
        return z, ldj


class CouplingLayer(nn.Module):
    def __init__(self, network, mask, c_in):
        """
        Coupling layer inside a normalizing flow.
        Inputs:
            network - A PyTorch nn.Module constituting the deep neural network for mu and sigma.
                      Output shape should be twice the channel size as the input.
            mask - Binary mask (0 or 1) where 0 denotes that the element should be transformed,
                   while 1 means the latent will be used as input to the NN.
            c_in - Number of input channels
        """
        super().__init__()
        self.network = network
        self.scaling_factor = nn.Parameter(torch.zeros(c_in))
        # Register mask as buffer as it is a tensor which is not a parameter,
        # but should be part of the modules state.
        self.register_buffer("mask", mask)

    def forward(self, z, ldj, reverse=False, orig_img=None):
        """
        Inputs:
            z - Latent input to the flow
            ldj - The current ldj of the previous flows.
                  The ldj of this layer will be added to this tensor.
            reverse - If True, we apply the inverse of the layer.
            orig_img (optional) - Only needed in VarDeq. Allows external
                                  input to condition the flow on (e.g. original image)
        """
        # Apply network to masked input
        z_in = z * self.mask
        if orig_img is None:
            nn_out = self.network(z_in)
        else:
            nn_out = self.network(torch.cat([z_in, orig_img], dim=1))
        s, t = nn_out.chunk(2, dim=1)
        # Stabilize scaling output
        s_fac = self.scaling_factor.exp().view(1, -1, 1, 1)
        s = torch.tanh(s / s_fac) * s_fac
        # Mask outputs (only transform the second part)
        s = s * (1 - self.mask)
        t = t * (1 - self.mask)
        # Affine transformation
        if not reverse:
            # Whether we first shift and then scale, or the other way round,
            # is a design choice, and usually does not have a big impact
            z = (z + t) * torch.exp(s)
            ldj += s.sum(dim=[1, 2, 3])
        else:
            z = (z * torch.exp(-s)) - t
            ldj -= s.sum(dim=[1, 2, 3])
        return z, ldj


def create_checkerboard_mask(h, w, invert=False):
    x, y = torch.arange(h, dtype=torch.int32), torch.arange(w, dtype=torch.int32)
    xx, yy = torch.meshgrid(x, y, indexing="ij")
    mask = torch.fmod(xx + yy, 2)
    mask = mask.to(torch.float32).view(1, 1, h, w)
    if invert:
        mask = 1 - mask
    return mask


def create_channel_mask(c_in, invert=False):
    mask = torch.cat([torch.ones(c_in // 2, dtype=torch.float32), torch.zeros(c_in - c_in // 2, dtype=torch.float32)])
    mask = mask.view(1, c_in, 1, 1)
    if invert:
        mask = 1 - mask
    return mask


class ConcatELU(nn.Module):
    """
    Activation function that applies ELU in both direction (inverted and plain).
    Allows non-linearity while providing strong gradients for any input (important for final convolution)
    """

    def forward(self, x):
        return torch.cat([F.elu(x), F.elu(-x)], dim=1)


class LayerNormChannels(nn.Module):
    def __init__(self, c_in, eps=1e-5):
        """
        This module applies layer norm across channels in an image.
        Inputs:
            c_in - Number of channels of the input
            eps - Small constant to stabilize std
        """
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, c_in, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, c_in, 1, 1))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, unbiased=False, keepdim=True)
        y = (x - mean) / torch.sqrt(var + self.eps)
        y = y * self.gamma + self.beta
        return y


class GatedConv(nn.Module):
    def __init__(self, c_in, c_hidden):
        """
        This module applies a two-layer convolutional ResNet block with input gate
        Inputs:
            c_in - Number of channels of the input
            c_hidden - Number of hidden dimensions we want to model (usually similar to c_in)
        """
        super().__init__()
        self.net = nn.Sequential(
            ConcatELU(),
            nn.Conv2d(2 * c_in, c_hidden, kernel_size=3, padding=1),
            ConcatELU(),
            nn.Conv2d(2 * c_hidden, 2 * c_in, kernel_size=1),
        )

    def forward(self, x):
        out = self.net(x)
        val, gate = out.chunk(2, dim=1)
        return x + val * torch.sigmoid(gate)


class GatedConvNet(nn.Module):
    def __init__(self, c_in, c_hidden=32, c_out=-1, num_layers=3):
        """
        Module that summarizes the previous blocks to a full convolutional neural network.
        Inputs:
            c_in - Number of input channels
            c_hidden - Number of hidden dimensions to use within the network
            c_out - Number of output channels. If -1, 2 times the input channels are used (affine coupling)
            num_layers - Number of gated ResNet blocks to apply
        """
        super().__init__()
        c_out = c_out if c_out > 0 else 2 * c_in
        layers = []
        layers += [nn.Conv2d(c_in, c_hidden, kernel_size=3, padding=1)]
        for layer_index in range(num_layers):
            layers += [GatedConv(c_hidden, c_hidden), LayerNormChannels(c_hidden)]
        layers += [ConcatELU(), nn.Conv2d(2 * c_hidden, c_out, kernel_size=3, padding=1)]
        self.nn = nn.Sequential(*layers)
        self.nn[-1].weight.data.zero_()
        self.nn[-1].bias.data.zero_()

    def forward(self, x):
        return self.nn(x)


class SqueezeFlow(nn.Module):
    def forward(self, z, ldj, reverse=False):
        B, C, H, W = z.shape
        if not reverse:
            # Forward direction: H x W x C => H/2 x W/2 x 4C
            z = z.reshape(B, C, H // 2, 2, W // 2, 2)
            z = z.permute(0, 1, 3, 5, 2, 4)
            z = z.reshape(B, 4 * C, H // 2, W // 2)
        else:
            # Reverse direction: H/2 x W/2 x 4C => H x W x C
            z = z.reshape(B, C // 4, 2, 2, H, W)
            z = z.permute(0, 1, 4, 2, 5, 3)
            z = z.reshape(B, C // 4, H * 2, W * 2)
        return z, ldj


class SplitFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.prior = torch.distributions.normal.Normal(loc=0.0, scale=1.0)

    def forward(self, z, ldj, reverse=False):
        if not reverse:
            z, z_split = z.chunk(2, dim=1)
            ldj += self.prior.log_prob(z_split).sum(dim=[1, 2, 3])
        else:
            z_split = self.prior.sample(sample_shape=z.shape)
            z = torch.cat([z, z_split], dim=1)
            ldj -= self.prior.log_prob(z_split).sum(dim=[1, 2, 3])
        return z, ldj


def create_multiscale_flow():
    flow_layers = []
    flow_layers += [Dequantization(quants=levels)]
    flow_layers += [
        CouplingLayer(
            network=GatedConvNet(c_in=1, c_hidden=4, num_layers=1),
            mask=create_checkerboard_mask(h=6, w=6, invert=(i % 2 == 1)),
            c_in=1,
        )
        for i in range(2)
    ]
    flow_layers += [SqueezeFlow()]
    for i in range(2):
        flow_layers += [
            CouplingLayer(
                network=GatedConvNet(c_in=4, c_hidden=6, num_layers=1),
                mask=create_channel_mask(c_in=4, invert=(i % 2 == 1)),
                c_in=4,
            )
        ]
    flow_layers += [SplitFlow()]
    return ImageFlow(flow_layers)


# ---------------------------------------------------------------------------------------- tutorial 12
class MaskedConvolution(nn.Module):
    def __init__(self, c_in, c_out, mask, **kwargs):
        """
        Implements a convolution with mask applied on its weights.
        Inputs:
            c_in - Number of input channels
            c_out - Number of output channels
            mask - Tensor of shape [kernel_size_H, kernel_size_W] with 0s where
                   the convolution should be masked, and 1s otherwise.
            kwargs - Additional arguments for the convolution
        """
        super().__init__()
        # For simplicity: calculate padding automatically
        kernel_size = (mask.shape[0], mask.shape[1])
        dilation = 1 if "dilation" not in kwargs else kwargs["dilation"]
        padding = tuple([dilation * (kernel_size[i] - 1) // 2 for i in range(2)])
        # Actual convolution
        self.conv = nn.Conv2d(c_in, c_out, kernel_size, padding=padding, **kwargs)
        # Mask as buffer => it is no parameter but still a tensor of the module
        # (must be moved with the devices)
        self.register_buffer("mask", mask[None, None])

    def forward(self, x):
        self.conv.weight.data *= self.mask  # Ensures zero's at masked positions
        out = self.conv(x)
        return out


class VerticalStackConvolution(MaskedConvolution):
    def __init__(self, c_in, c_out, kernel_size=3, mask_center=False, **kwargs):
        # Mask out all pixels below. For efficiency, we could also reduce the kernel
        # size in height, but for simplicity, we stick with masking here.
        mask = torch.ones(kernel_size, kernel_size)
        mask[kernel_size // 2 + 1 :, :] = 0
        # For the very first convolution, we will also mask the center row
        if mask_center:
            mask[kernel_size // 2, :] = 0
        super().__init__(c_in, c_out, mask, **kwargs)


class HorizontalStackConvolution(MaskedConvolution):
    def __init__(self, c_in, c_out, kernel_size=3, mask_center=False, **kwargs):
        # Mask out all pixels on the left. Note that our kernel has a size of 1
        # in height because we only look at the pixel in the same row.
        mask = torch.ones(1, kernel_size)
        mask[0, kernel_size // 2 + 1 :] = 0
        # For the very first convolution, we will also mask the center pixel
        if mask_center:
            mask[0, kernel_size // 2] = 0
        super().__init__(c_in, c_out, mask, **kwargs)


class GatedMaskedConv(nn.Module):
    def __init__(self, c_in, **kwargs):
        """
        Gated Convolution block implemented the computation graph shown above.
        """
        super().__init__()
        self.conv_vert = VerticalStackConvolution(c_in, c_out=2 * c_in, **kwargs)
        self.conv_horiz = HorizontalStackConvolution(c_in, c_out=2 * c_in, **kwargs)
        self.conv_vert_to_horiz = nn.Conv2d(2 * c_in, 2 * c_in, kernel_size=1, padding=0)
        self.conv_horiz_1x1 = nn.Conv2d(c_in, c_in, kernel_size=1, padding=0)

    def forward(self, v_stack, h_stack):
        # Vertical stack (left)
        v_stack_feat = self.conv_vert(v_stack)
        v_val, v_gate = v_stack_feat.chunk(2, dim=1)
        v_stack_out = torch.tanh(v_val) * torch.sigmoid(v_gate)
        # Horizontal stack (right)
        h_stack_feat = self.conv_horiz(h_stack)
        h_stack_feat = h_stack_feat + self.conv_vert_to_horiz(v_stack_feat)
        h_val, h_gate = h_stack_feat.chunk(2, dim=1)
        h_stack_feat = torch.tanh(h_val) * torch.sigmoid(h_gate)
        h_stack_out = self.conv_horiz_1x1(h_stack_feat)
        h_stack_out = h_stack_out + h_stack
        return v_stack_out, h_stack_out


class PixelCNN(nn.Module):
    def __init__(self, c_in, c_hidden):
        super().__init__()
        # Initial convolutions skipping the center pixel
        self.conv_vstack = VerticalStackConvolution(c_in, c_hidden, mask_center=True)
        self.conv_hstack = HorizontalStackConvolution(c_in, c_hidden, mask_center=True)
        # Convolution block of PixelCNN. We use dilation instead of downscaling
        self.conv_layers = nn.ModuleList(
            [
                GatedMaskedConv(c_hidden),
                GatedMaskedConv(c_hidden, dilation=2),
                GatedMaskedConv(c_hidden),
            ]
        )
        # Output classification convolution (1x1)
        self.conv_out = nn.Conv2d(c_hidden, c_in * levels, kernel_size=1, padding=0)

    def forward(self, x):
        """
        Forward image through model and return logits for each pixel.
        Inputs:
            x - Image tensor with integer values between 0 and 255.
        """
        # Scale input from 0 to 255 back to -1 to 1
        x = (x.float() / (levels - 1)) * 2 - 1
        # Initial convolutions
        v_stack = self.conv_vstack(x)
        h_stack = self.conv_hstack(x)
        # Gated Convolutions
        for layer in self.conv_layers:
            v_stack, h_stack = layer(v_stack, h_stack)
        # 1x1 classification convolution
        # Apply ELU before 1x1 convolution for non-linearity on residual connection
        out = self.conv_out(F.elu(h_stack))
        # Output dimensions: [Batch, Classes, Channels, Height, Width]
        out = out.reshape(out.shape[0], levels, out.shape[1] // levels, out.shape[2], out.shape[3])
        return out

    def calc_likelihood(self, x):
        # Forward pass with bpd likelihood calculation
        pred = self.forward(x)
        nll = F.cross_entropy(pred, x, reduction="none")
        bpd = nll.mean(dim=[1, 2, 3]) * np.log2(np.exp(1))
        return bpd.mean()

    @torch.no_grad()
    def sample(self, img_shape, img=None):
        """
        Sampling function for the autoregressive model.
        Inputs:
            img_shape - Shape of the image to generate (B,C,H,W)
            img (optional) - If given, this tensor will be used as
                             a starting image. The pixels to fill
                             should be -1 in the input tensor.
        """
        # Create empty image
        if img is None:
            img = torch.zeros(img_shape, dtype=torch.long) - 1
        # Generation loop
        for h, w, c in itertools.product(range(img_shape[2]), range(img_shape[3]), range(img_shape[1])):
            # Skip if not to be filled (-1)
            if (img[:, c, h, w] != -1).all().item():
                continue
            # For efficiency, we only have to input the upper part of the image
            # as all other parts will be skipped by the masked convolutions anyways
            pred = self.forward(img[:, :, : h + 1, :])
            probs = F.softmax(pred[:, :, c, h, w], dim=-1)
            img[:, c, h, w] = torch.multinomial(probs, num_samples=1).squeeze(dim=-1)
        return img


def build():
    torch.manual_seed(42)
    if PART == "ebm":
        return DeepEnergyModel(img_shape=(1, 6, 6), batch_size=4, lr=1e-3, hidden_features=4)
    if PART == "flow":
        return create_multiscale_flow()
    return PixelCNN(c_in=1, c_hidden=4)


def ebm(model, steps, record):
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(1)
    model.sampler = Sampler(model.cnn, img_shape=(1, 6, 6), sample_size=4)
    # transforms.Normalize((0.5,), (0.5,)): images in [-1, 1]
    data = torch.utils.data.TensorDataset(torch.from_numpy(images(12) * 2 - 1), torch.zeros(12, dtype=torch.long))
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=SHUFFLE, drop_last=True)
    [optimizer], [scheduler] = model.configure_optimizers()
    for batch_idx, batch in zip(range(steps), loader):
        loss, logs = model.training_step(batch, batch_idx)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        record["logs"].append(logs)
    record["lr"] = scheduler.get_last_lr()
    record["grad_enabled"] = torch.is_grad_enabled()
    record["requires_grad"] = all(p.requires_grad for p in model.parameters())
    record["buffer"] = [len(model.sampler.examples), model.sampler.examples[0].flatten()[:6].tolist()]
    # the tutorial's "generating images" cell: the samples of each step
    torch.manual_seed(2)
    start_imgs = torch.rand((2,) + (1, 6, 6)) * 2 - 1
    imgs_per_step = Sampler.generate_samples(model.cnn, start_imgs, steps=3, step_size=10, return_img_per_step=True)
    record["per_step"] = [list(imgs_per_step.shape), imgs_per_step[-1, 0, 0, 2].tolist()]
    return record


def flow(model, steps, record):
    torch.manual_seed(1)
    # discretize: (sample * 255).to(torch.int32), here with `levels` intensities
    x = torch.from_numpy(np.floor(images(12) * (levels - 1) + 0.5).astype(np.int32))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=4, shuffle=SHUFFLE)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    # An scheduler is optional, but can help in flows to get the last bpd improvement
    scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.99)
    masks = [create_checkerboard_mask(2, 3).tolist(), create_channel_mask(3, invert=True).flatten().tolist()]
    record["masks"] = masks
    for _, batch in zip(range(steps), loader):
        # Normalizing flows are trained by maximum likelihood => return bpd
        loss = model._get_likelihood(batch[0])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
    model.eval()
    with torch.no_grad():
        record["test_bpd"] = model.test_step((x[:4],)).item()
    samples = model.sample(img_shape=[2, 2, 3, 3])
    record["samples"] = [str(samples.dtype).split(".")[-1], list(samples.shape), samples.flatten()[:8].tolist()]
    return record


def pixelcnn(model, steps, record):
    torch.manual_seed(1)
    x = torch.from_numpy(np.floor(images(12) * (levels - 1) + 0.5).astype(np.int64))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=4, shuffle=SHUFFLE)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.99)
    for _, batch in zip(range(steps), loader):
        loss = model.calc_likelihood(batch[0])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
    record["masked_zero"] = (model.conv_vstack.conv.weight.data * (1 - model.conv_vstack.mask)).abs().sum().item()
    model.eval()
    torch.manual_seed(3)
    img = torch.zeros(2, 1, 4, 4, dtype=torch.long) - 1
    img[:, :, :2] = x[:2, :, :2, :4]  # autocomplete the lower half
    samples = model.sample(img.shape, img)
    record["samples"] = samples.tolist()
    return record


def train(model, steps=3):
    record = {"losses": [], "logs": []}
    if PART == "ebm":
        return ebm(model, steps, record)
    if PART == "flow":
        return flow(model, steps, record)
    return pixelcnn(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
