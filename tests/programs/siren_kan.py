"""Implicit and spline networks: SIREN, written as vsitzmann/siren's explore_siren notebook is, and a
Kolmogorov-Arnold network, written as Blealtan/efficient-kan's KANLinear is, fitting a tiny
synthetic image. ``MODEL`` picks one.

SIREN's idioms: ``SineLayer`` (``torch.sin(self.omega_0 * self.linear(input))``) initialised under
``torch.no_grad()`` by ``self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
...)``; an outermost linear layer initialised the same way; ``get_mgrid`` by ``torch.meshgrid`` of
``torch.linspace`` (PyTorch's default ``ij`` indexing, with its warning) stacked and reshaped;
``coords.clone().detach().requires_grad_(True)`` in ``forward`` to differentiate with respect to the
input; ``gradient`` by ``torch.autograd.grad(y, [x], grad_outputs=torch.ones_like(y),
create_graph=True)``; ``divergence`` summed over ``y[..., i]`` and ``laplace``; a Poisson-style loss on
the image gradients trained through the second derivatives of ``sin``.

KAN's idioms: a ``grid`` buffer from ``(torch.arange(-spline_order, grid_size + spline_order + 1) * h
+ grid_range[0]).expand(in_features, -1).contiguous()``; parameters made by ``torch.nn.Parameter(
torch.Tensor(out_features, in_features))`` and initialised by ``kaiming_uniform_(a=math.sqrt(5) *
scale)``; the spline weights by ``curve2coeff`` of uniform noise, a batched ``torch.linalg.lstsq(A,
B).solution`` (underdetermined at initialisation: the minimum-norm solution); B-spline bases by the
Cox-de Boor recursion over broadcast comparisons ``((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)``
and sliced grids; ``F.linear`` of the bases ``.view(x.size(0), -1)``; ``update_grid`` under
``@torch.no_grad()`` (``torch.bmm`` of the splines, ``torch.sort(x, dim=0)[0]``, an adaptive grid indexed
by ``torch.linspace(..., dtype=torch.int64)``, ``torch.concatenate``, ``self.grid.copy_(grid.T)``,
the spline weights refitted by ``lstsq``); the activation and entropy regulariser; and
``torch.einsum`` to evaluate the learned univariate functions on a grid.
"""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

MODEL = "siren"  # or "kan"
SIDELEN = 6


class SineLayer(nn.Module):
    # See paper sec. 3.2, final paragraph, and supplement Sec. 1.5 for discussion of omega_0.
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                self.linear.weight.uniform_(
                    -np.sqrt(6 / self.in_features) / self.omega_0, np.sqrt(6 / self.in_features) / self.omega_0
                )

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(
        self,
        in_features,
        hidden_features,
        hidden_layers,
        out_features,
        outermost_linear=False,
        first_omega_0=30,
        hidden_omega_0=30.0,
    ):
        super().__init__()
        self.net = []
        self.net.append(SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0))
        for _i in range(hidden_layers):
            self.net.append(SineLayer(hidden_features, hidden_features, is_first=False, omega_0=hidden_omega_0))
        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                final_linear.weight.uniform_(
                    -np.sqrt(6 / hidden_features) / hidden_omega_0, np.sqrt(6 / hidden_features) / hidden_omega_0
                )
            self.net.append(final_linear)
        else:
            self.net.append(SineLayer(hidden_features, out_features, is_first=False, omega_0=hidden_omega_0))
        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)  # allows to take derivative w.r.t. input
        output = self.net(coords)
        return output, coords


def laplace(y, x):
    grad = gradient(y, x)
    return divergence(grad, x)


def divergence(y, x):
    div = 0.0
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]), create_graph=True)[0][..., i : i + 1]
    return div


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
    return grad


def get_mgrid(sidelen, dim=2):
    """Generates a flattened grid of (x,y,...) coordinates in a range of -1 to 1.
    sidelen: int
    dim: int"""
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    mgrid = mgrid.reshape(-1, dim)
    return mgrid


class KANLinear(torch.nn.Module):
    def __init__(
        self,
        in_features,
        out_features,
        grid_size=5,
        spline_order=3,
        scale_noise=0.1,
        scale_base=1.0,
        scale_spline=1.0,
        enable_standalone_scale_spline=True,
        base_activation=torch.nn.SiLU,
        grid_eps=0.02,
        grid_range=(-1, 1),
    ):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.grid_size = grid_size
        self.spline_order = spline_order

        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = (
            (torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
            .expand(in_features, -1)
            .contiguous()
        )
        self.register_buffer("grid", grid)

        self.base_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features))
        self.spline_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features, grid_size + spline_order))
        if enable_standalone_scale_spline:
            self.spline_scaler = torch.nn.Parameter(torch.Tensor(out_features, in_features))

        self.scale_noise = scale_noise
        self.scale_base = scale_base
        self.scale_spline = scale_spline
        self.enable_standalone_scale_spline = enable_standalone_scale_spline
        self.base_activation = base_activation()
        self.grid_eps = grid_eps

        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
        with torch.no_grad():
            noise = (
                (torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                * self.scale_noise
                / self.grid_size
            )
            self.spline_weight.data.copy_(
                (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                * self.curve2coeff(
                    self.grid.T[self.spline_order : -self.spline_order],
                    noise,
                )
            )
            if self.enable_standalone_scale_spline:
                # torch.nn.init.constant_(self.spline_scaler, self.scale_spline)
                torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

    def b_splines(self, x: torch.Tensor):
        """
        Compute the B-spline bases for the given input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_features).

        Returns:
            torch.Tensor: B-spline bases tensor of shape (batch_size, in_features, grid_size + spline_order).
        """
        assert x.dim() == 2 and x.size(1) == self.in_features

        grid: torch.Tensor = self.grid  # (in_features, grid_size + 2 * spline_order + 1)
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = ((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)]) * bases[:, :, :-1]) + (
                (grid[:, k + 1 :] - x) / (grid[:, k + 1 :] - grid[:, 1:(-k)]) * bases[:, :, 1:]
            )

        assert bases.size() == (
            x.size(0),
            self.in_features,
            self.grid_size + self.spline_order,
        )
        return bases.contiguous()

    def curve2coeff(self, x: torch.Tensor, y: torch.Tensor):
        """
        Compute the coefficients of the curve that interpolates the given points.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_features).
            y (torch.Tensor): Output tensor of shape (batch_size, in_features, out_features).

        Returns:
            torch.Tensor: Coefficients tensor of shape (out_features, in_features, grid_size + spline_order).
        """
        assert x.dim() == 2 and x.size(1) == self.in_features
        assert y.size() == (x.size(0), self.in_features, self.out_features)

        A = self.b_splines(x).transpose(0, 1)  # (in_features, batch_size, grid_size + spline_order)
        B = y.transpose(0, 1)  # (in_features, batch_size, out_features)
        solution = torch.linalg.lstsq(A, B).solution  # (in_features, grid_size + spline_order, out_features)
        result = solution.permute(2, 0, 1)  # (out_features, in_features, grid_size + spline_order)

        assert result.size() == (
            self.out_features,
            self.in_features,
            self.grid_size + self.spline_order,
        )
        return result.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * (self.spline_scaler.unsqueeze(-1) if self.enable_standalone_scale_spline else 1.0)

    def forward(self, x: torch.Tensor):
        assert x.size(-1) == self.in_features
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)

        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(
            self.b_splines(x).view(x.size(0), -1),
            self.scaled_spline_weight.view(self.out_features, -1),
        )
        output = base_output + spline_output

        output = output.reshape(*original_shape[:-1], self.out_features)
        return output

    @torch.no_grad()
    def update_grid(self, x: torch.Tensor, margin=0.01):
        assert x.dim() == 2 and x.size(1) == self.in_features
        batch = x.size(0)

        splines = self.b_splines(x)  # (batch, in, coeff)
        splines = splines.permute(1, 0, 2)  # (in, batch, coeff)
        orig_coeff = self.scaled_spline_weight  # (out, in, coeff)
        orig_coeff = orig_coeff.permute(1, 2, 0)  # (in, coeff, out)
        unreduced_spline_output = torch.bmm(splines, orig_coeff)  # (in, batch, out)
        unreduced_spline_output = unreduced_spline_output.permute(1, 0, 2)  # (batch, in, out)

        # sort each channel individually to collect data distribution
        x_sorted = torch.sort(x, dim=0)[0]
        grid_adaptive = x_sorted[torch.linspace(0, batch - 1, self.grid_size + 1, dtype=torch.int64, device=x.device)]

        uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
        grid_uniform = (
            torch.arange(self.grid_size + 1, dtype=torch.float32, device=x.device).unsqueeze(1) * uniform_step
            + x_sorted[0]
            - margin
        )

        grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
        grid = torch.concatenate(
            [
                grid[:1] - uniform_step * torch.arange(self.spline_order, 0, -1, device=x.device).unsqueeze(1),
                grid,
                grid[-1:] + uniform_step * torch.arange(1, self.spline_order + 1, device=x.device).unsqueeze(1),
            ],
            dim=0,
        )

        self.grid.copy_(grid.T)
        self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        regularization_loss_activation = l1_fake.sum()
        p = l1_fake / regularization_loss_activation
        regularization_loss_entropy = -torch.sum(p * p.log())
        return regularize_activation * regularization_loss_activation + regularize_entropy * regularization_loss_entropy


class KAN(torch.nn.Module):
    def __init__(self, layers_hidden, grid_size=5, spline_order=3):
        super().__init__()
        self.grid_size = grid_size
        self.spline_order = spline_order

        self.layers = torch.nn.ModuleList()
        for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
            self.layers.append(KANLinear(in_features, out_features, grid_size=grid_size, spline_order=spline_order))

    def forward(self, x: torch.Tensor, update_grid=False):
        for layer in self.layers:
            if update_grid:
                layer.update_grid(x)
            x = layer(x)
        return x

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        return sum(layer.regularization_loss(regularize_activation, regularize_entropy) for layer in self.layers)


def target_image(coords):
    """A smooth synthetic image on the coordinate grid, with its gradient and Laplacian."""
    x, y = coords[:, :1], coords[:, 1:]
    image = torch.sin(2 * x) * torch.cos(3 * y)
    grad = torch.cat([2 * torch.cos(2 * x) * torch.cos(3 * y), -3 * torch.sin(2 * x) * torch.sin(3 * y)], dim=-1)
    return image, grad


def build():
    torch.manual_seed(0)
    if MODEL == "kan":
        return KAN([2, 3, 1], grid_size=4, spline_order=3)
    return Siren(in_features=2, out_features=1, hidden_features=16, hidden_layers=2, outermost_linear=True)


def _train_siren(img_siren, steps):
    model_input = get_mgrid(SIDELEN, 2)
    ground_truth, gt_grad = target_image(model_input)
    optim_ = torch.optim.Adam(lr=1e-4, params=img_siren.parameters())
    record = {"losses": [], "grad_loss": [], "laplacian": []}
    for _step in range(steps):
        model_output, coords = img_siren(model_input)
        img_grad = gradient(model_output, coords)
        grad_loss = ((img_grad - gt_grad) ** 2).mean()
        loss = ((model_output - ground_truth) ** 2).mean() + 0.1 * grad_loss
        img_laplacian = laplace(model_output, coords)
        record["losses"].append(loss.item())
        record["grad_loss"].append(grad_loss.item())
        record["laplacian"].append(img_laplacian.abs().mean().item())
        optim_.zero_grad()
        loss.backward()
        optim_.step()
    return record


def _train_kan(model, steps):
    x = get_mgrid(SIDELEN, 2)
    y, _ = target_image(x)
    optimizer = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
    criterion = nn.MSELoss()
    record = {"losses": [], "regularization": []}
    for step in range(steps):
        optimizer.zero_grad()
        output = model(x, update_grid=step == 1)
        reg = model.regularization_loss()
        loss = criterion(output, y) + 1e-3 * reg
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        record["regularization"].append(reg.item())
    layer = model.layers[0]
    with torch.no_grad():
        xs = torch.linspace(-1, 1, 5).unsqueeze(1).expand(-1, layer.in_features).contiguous()
        # each learned univariate function phi_{o,i} on a grid: bases (b, i, c) with weights (o, i, c)
        phi = torch.einsum("bic,oic->boi", layer.b_splines(xs), layer.scaled_spline_weight)
    record["phi"] = phi.flatten().tolist()
    record["grid"] = layer.grid.flatten().tolist()
    return record


def train(model, steps=3):
    return _train_kan(model, steps) if MODEL == "kan" else _train_siren(model, steps)


if __name__ == "__main__":
    print(train(build()))
