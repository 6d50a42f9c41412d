"""A plain SGD training loop written as PyTorch tutorials write it: parameters as leaf tensors,
updated in place under ``no_grad`` (``p -= lr * p.grad``, ``p.grad.zero_()``), momentum
buffers updated with ``mul_``/``add_``, and a max-norm constraint applied through ``p.data``.

Apart from the import line, this is PyTorch code; ``--torch`` runs it on PyTorch instead.

    python examples/sgd_inplace.py --steps 200 --device vulkan:0
"""

from __future__ import annotations

import argparse

import numpy as np


def make_data(n: int, features: int, seed: int = 0):
    """A smooth nonlinear target of Gaussian inputs, with a little noise."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    w = rng.standard_normal((features, 1)).astype(np.float32)
    y = np.sin(x @ w) + 0.05 * rng.standard_normal((n, 1)).astype(np.float32)
    return x, y.astype(np.float32)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch", action="store_true", help="run on PyTorch instead of vkml")
    args = parser.parse_args(argv)
    if args.torch:
        import torch
    else:
        import vkml as torch  # the one line that differs from the PyTorch program

    device = torch.device(args.device)
    features, hidden, lr, momentum = 6, 32, 0.05, 0.9
    x_np, y_np = make_data(256, features)
    x = torch.tensor(x_np, device=device)
    y = torch.tensor(y_np, device=device)

    rng = np.random.default_rng(1)
    w1 = torch.tensor(rng.standard_normal((features, hidden)).astype(np.float32) / features**0.5, device=device)
    w1.requires_grad_()
    b1 = torch.zeros(hidden, device=device, requires_grad=True)
    w2 = torch.tensor(rng.standard_normal((hidden, 1)).astype(np.float32) / hidden**0.5, device=device)
    w2.requires_grad_()
    b2 = torch.zeros(1, device=device, requires_grad=True)
    params = [w1, b1, w2, b2]
    velocity = [torch.zeros_like(p) for p in params]

    first = None
    for step in range(args.steps):
        pred = torch.tanh(x @ w1 + b1) @ w2 + b2
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p, v in zip(params, velocity):
                v.mul_(momentum).add_(p.grad)  # in-place momentum buffer
                p -= lr * v
                p.grad.zero_()
        w1.data.clamp_(-2.0, 2.0)  # a max-norm style constraint: .data writes are not recorded
        value = loss.item()
        first = value if first is None else first
        if step % max(1, args.steps // 5) == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {value:.6f}")
    print(f"loss: {first:.6f} -> {value:.6f}")
    print(f"w1 version {w1._version}, leaf {w1.is_leaf}, grad zero {bool((w1.grad == 0).all())}")
    print(f"w2[:3]: {[round(v, 6) for v in w2.detach().reshape(-1)[:3].tolist()]}")


if __name__ == "__main__":
    main()
