"""Two official tutorials on custom ``autograd.Function``s, at a tiny size on synthetic images:
"Double Backward with Custom Functions" and "Fusing Convolution and Batch Norm using Custom Function".

Idioms: a ``Square`` saving its input, an ``Exp`` saving its output and a ``Sinh`` returning its
intermediate results as extra outputs (``backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp)``,
``grad_input += ...`` in the backward), checked by ``torch.autograd.gradcheck`` and ``gradgradcheck`` in
float64; the wrong ``SinhBad`` that stashes intermediates on ``ctx`` and fails ``gradgradcheck(...,
raise_exception=False)``; a ``Cube`` whose backward is itself a Function (``CubeBackward``) so it can
be differentiated twice, and a gradient penalty by ``autograd.grad(create_graph=True)`` through it;
then the fused Conv-BN: a convolution's backward by ``F.conv2d`` of transposed tensors and
``F.conv_transpose2d``, batch norm's backward by hand (``X.var(unbiased=True, dim=(0, 2, 3))``,
``unsqueeze_all(t) = t[None, :, None, None]``, python-float ``N = X.numel() / X.size(1)``, state on
``ctx``, in-place ``out /= ...`` inside ``forward``), a ``FusedConvBN2DFunction`` whose backward
recomputes the convolution and returns more ``None`` gradients than it has inputs, both checked by
``gradcheck`` in float64, and a small net of ``FusedConvBN`` modules (``kaiming_uniform_(a=sqrt(5))``,
``factory_kwargs``) trained by SGD beside the same net of ``nn.Conv2d(bias=False)`` + ``nn.BatchNorm2d``.
"""

from __future__ import annotations

import math

from shim import F, nn, optim, torch

Function = torch.autograd.Function
gradcheck, gradgradcheck = torch.autograd.gradcheck, torch.autograd.gradgradcheck


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * 2 * x


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        (result,) = ctx.saved_tensors
        return result * grad_out


class Sinh(Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        grad_input += _grad_out_exp * expx
        grad_input -= _grad_out_negexp * expnegx
        return grad_input


def sinh(x):
    return Sinh.apply(x)[0]


class SinhBad(Function):
    """Saves intermediates on ctx without returning them: the double backward misses their gradient."""

    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.expx = expx
        ctx.expnegx = expnegx
        return (expx - expnegx) / 2

    @staticmethod
    def backward(ctx, grad_out):
        expx = ctx.expx
        expnegx = ctx.expnegx
        grad_input = grad_out * (expx + expnegx) / 2
        return grad_input


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return grad_out * 3 * x**2

    @staticmethod
    def backward(ctx, grad_out):
        x, grad_out_prev = ctx.saved_tensors
        return grad_out * 3 * x**2, grad_out * grad_out_prev * 6 * x


def convolution_backward(grad_out, X, weight):
    grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
    grad_X = F.conv_transpose2d(grad_out, weight)
    return grad_X, grad_input


class Conv2D(Function):
    @staticmethod
    def forward(ctx, X, weight):
        ctx.save_for_backward(X, weight)
        return F.conv2d(X, weight)

    @staticmethod
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        return convolution_backward(grad_out, X, weight)


def unsqueeze_all(t):
    return t[None, :, None, None]


def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps):  # noqa: A002 - the tutorial's name
    tmp = ((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
    tmp *= -1
    d_denom = tmp / (sqrt_var + eps) ** 2
    d_var = d_denom / (2 * sqrt_var)
    d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
    d_mean_dx = unsqueeze_all(-d_mean_dx.sum(dim=(0, 2, 3)) / N)
    grad_input = X * unsqueeze_all(d_var * N)
    grad_input += unsqueeze_all(-d_var * sum)
    grad_input *= 2 / ((N - 1) * N)
    grad_input += d_mean_dx
    grad_input *= unsqueeze_all(sqrt_var + eps)
    grad_input += grad_out
    grad_input /= unsqueeze_all(sqrt_var + eps)
    return grad_input


class BatchNorm(Function):
    @staticmethod
    def forward(ctx, X, eps=1e-3):
        sum = X.sum(dim=(0, 2, 3))  # noqa: A001
        var = X.var(unbiased=True, dim=(0, 2, 3))
        N = X.numel() / X.size(1)
        sqrt_var = torch.sqrt(var)
        ctx.save_for_backward(X)
        ctx.eps = eps
        ctx.sum = sum
        ctx.N = N
        ctx.sqrt_var = sqrt_var
        mean = sum / N
        denom = sqrt_var + eps
        out = X - unsqueeze_all(mean)
        out /= unsqueeze_all(denom)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (X,) = ctx.saved_tensors
        return batch_norm_backward(grad_out, X, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)


class FusedConvBN2DFunction(Function):
    @staticmethod
    def forward(ctx, X, conv_weight, eps=1e-3):
        assert X.ndim == 4
        ctx.save_for_backward(X, conv_weight)
        X = F.conv2d(X, conv_weight)
        sum = X.sum(dim=(0, 2, 3))  # noqa: A001
        var = X.var(unbiased=True, dim=(0, 2, 3))
        N = X.numel() / X.size(1)
        sqrt_var = torch.sqrt(var)
        ctx.eps = eps
        ctx.sum = sum
        ctx.N = N
        ctx.sqrt_var = sqrt_var
        mean = sum / N
        denom = sqrt_var + eps
        out = X - unsqueeze_all(mean)
        out /= unsqueeze_all(denom)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        X, conv_weight = ctx.saved_tensors
        X_conv_out = F.conv2d(X, conv_weight)
        grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
        grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
        return grad_X, grad_input, None, None, None, None, None


class FusedConvBN(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, exp_avg_factor=0.1, eps=1e-3, device=None, dtype=None):
        super().__init__()
        factory_kwargs = {"device": device, "dtype": dtype}
        weight_shape = (out_channels, in_channels, kernel_size, kernel_size)
        self.conv_weight = nn.Parameter(torch.empty(*weight_shape, **factory_kwargs))
        self.eps = eps
        self.reset_parameters()

    def forward(self, X):
        return FusedConvBN2DFunction.apply(X, self.conv_weight, self.eps)

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.conv_weight, a=math.sqrt(5))


class Net(nn.Module):
    def __init__(self, fused=True):
        super().__init__()
        self.fused = fused
        if fused:
            self.convbn1 = FusedConvBN(1, 3, 3)
            self.convbn2 = FusedConvBN(3, 4, 3)
        else:
            self.conv1 = nn.Conv2d(1, 3, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(3, affine=False, track_running_stats=False, eps=1e-3)
            self.conv2 = nn.Conv2d(3, 4, 3, bias=False)
            self.bn2 = nn.BatchNorm2d(4, affine=False, track_running_stats=False, eps=1e-3)
        self.fc1 = nn.Linear(4 * 2 * 2, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        if self.fused:
            x = self.convbn1(x)
        else:
            x = self.bn1(self.conv1(x))
        x = F.relu(x)
        if self.fused:
            x = self.convbn2(x)
        else:
            x = self.bn2(self.conv2(x))
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def build():
    torch.manual_seed(0)
    return nn.ModuleDict({"fused": Net(fused=True), "plain": Net(fused=False)})


def images(n=6):
    ramp = torch.arange(n * 8 * 8, dtype=torch.float32)
    x = torch.sin(ramp * 0.21).view(n, 1, 8, 8) + 0.3 * torch.cos(ramp * 0.05).view(n, 1, 8, 8)
    target = torch.arange(n) % 3
    return x, target


def double_backward_checks():
    ramp = torch.arange(9, dtype=torch.float64).view(3, 3)
    x = (torch.sin(ramp) * 0.8).requires_grad_()
    checks = [
        gradcheck(Square.apply, x),
        gradgradcheck(Square.apply, x),
        gradcheck(Exp.apply, x),
        gradgradcheck(Exp.apply, x),
        gradcheck(sinh, x),
        gradgradcheck(sinh, x),
        gradcheck(SinhBad.apply, x),
        gradgradcheck(SinhBad.apply, x, raise_exception=False),
        gradcheck(Cube.apply, x),
        gradgradcheck(Cube.apply, x),
    ]
    # a gradient penalty through the twice-differentiable Cube
    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    penalty = g.pow(2).sum()
    penalty.backward()
    # small: gradcheck perturbs every element, one forward each
    weight = (torch.cos(torch.arange(2 * 2 * 2 * 2, dtype=torch.float64)) * 0.5).view(2, 2, 2, 2).requires_grad_()
    X = torch.sin(torch.arange(1 * 2 * 3 * 3, dtype=torch.float64) * 0.7).view(1, 2, 3, 3).requires_grad_()
    checks.append(gradcheck(Conv2D.apply, (X, weight)))
    checks.append(gradcheck(BatchNorm.apply, (X,)))
    checks.append(gradcheck(FusedConvBN2DFunction.apply, (X, weight)))
    return checks, [penalty.item(), x.grad.sum().item()]


def train(model, steps=3):
    checks, penalty = double_backward_checks()
    x, target = images()
    losses, plain_losses = [], []
    for name, record in (("fused", losses), ("plain", plain_losses)):
        net = model[name]
        optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = F.nll_loss(net(x), target)
            loss.backward()
            optimizer.step()
            record.append(loss.item())
    weight_grad = model["fused"].convbn1.conv_weight.grad.abs().sum().item()
    return {
        "losses": losses,
        "plain_losses": plain_losses,
        "checks": checks,
        "penalty": penalty,
        "weight_grad": weight_grad,
    }


if __name__ == "__main__":
    print(train(build()))
