"""Optimizers and schedulers that users write themselves, as popular third-party code writes them: SAM
(davda54/sam), Lookahead (lonePatient/lookahead_pytorch), GradualWarmupScheduler (ildoonet/pytorch-
gradual-warmup-lr) and an Optimizer subclass in the style of torch's own (AdamW written out), trained on a
tiny classifier.

Its idioms: ``class SAM(torch.optim.Optimizer)`` whose ``__init__`` builds
``base_optimizer(self.param_groups, **kwargs)``, rebinds ``self.param_groups =
self.base_optimizer.param_groups`` and ``self.defaults.update(self.base_optimizer.defaults)``;
``@torch.no_grad()`` ``first_step`` / ``second_step`` with ``self.state[p]["old_p"] = p.data.clone()``,
``p.add_(e_w)``, ``p.data = self.state[p]["old_p"]``; ``_grad_norm`` by ``torch.norm(torch.stack([...
.norm(p=2).to(shared_device) ...]), p=2)``; ``step(closure)`` with ``torch.enable_grad()(closure)``;
SAM's ``disable_running_stats`` / ``enable_running_stats`` by ``model.apply`` setting
``momentum = 0`` on ``_BatchNorm`` (``nn.modules.batchnorm._BatchNorm``) and restoring ``backup_momentum``;
Lookahead wrapping an optimizer (``self.param_groups = self.optimizer.param_groups``, a
``defaultdict(dict)`` state with ``slow_buffer``, ``slow.add_(fast_p.data - slow, alpha=self.alpha)``,
``fast_p.data.copy_(slow)``, its own ``state_dict`` packing the fast optimizer's); a hand-written AdamW
subclass (``defaults = dict(...)``, ``super().__init__(params, defaults)``, ``__setstate__`` with
``group.setdefault``, lazy state by ``len(state) == 0``, ``torch.zeros_like(p,
memory_format=torch.preserve_format)``, ``p.mul_(1 - lr * wd)``, ``exp_avg.mul_(beta1).add_(grad, alpha=1 -
beta1)``, ``addcmul_(grad, grad, value=...)``, ``denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)``,
``p.addcdiv_(exp_avg, denom, value=-step_size)``) saved by ``state_dict()`` and loaded into a fresh one that
goes on to the same weights; and ``GradualWarmupScheduler(_LRScheduler)`` (``get_lr`` over
``self.base_lrs`` and ``self.last_epoch``, ``after_scheduler.base_lrs = [...]``, ``get_last_lr``, a
``super(GradualWarmupScheduler, self).step(epoch)``) over a ``CosineAnnealingLR``.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict

import numpy as np
from shim import F, lr_scheduler, nn, torch

OPTIMIZER = "sam"  # or "lookahead", "adamw"
ADAPTIVE = False


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
        assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"

        defaults = dict(rho=rho, adaptive=adaptive, **kwargs)  # noqa: C408 (as the repository writes it)
        super(SAM, self).__init__(params, defaults)  # noqa: UP008

        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.defaults.update(self.base_optimizer.defaults)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)

            for p in group["params"]:
                if p.grad is None:
                    continue
                self.state[p]["old_p"] = p.data.clone()
                e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                p.add_(e_w)  # climb to the local maximum "w + e(w)"

        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data = self.state[p]["old_p"]  # get back to "w" from "w + e(w)"

        self.base_optimizer.step()  # do the actual "sharpness-aware" update

        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def step(self, closure=None):
        assert closure is not None, "Sharpness Aware Minimization requires closure, but it was not provided"
        closure = torch.enable_grad()(closure)  # the closure should do a full forward-backward pass

        self.first_step(zero_grad=True)
        closure()
        self.second_step()

    def _grad_norm(self):
        shared_device = self.param_groups[0]["params"][
            0
        ].device  # put everything on the same device, in case of model parallelism
        norm = torch.norm(
            torch.stack(
                [
                    ((torch.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2).to(shared_device)
                    for group in self.param_groups
                    for p in group["params"]
                    if p.grad is not None
                ]
            ),
            p=2,
        )
        return norm

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.base_optimizer.param_groups = self.param_groups


def disable_running_stats(model):
    def _disable(module):
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.backup_momentum = module.momentum
            module.momentum = 0

    model.apply(_disable)


def enable_running_stats(model):
    def _enable(module):
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and hasattr(module, "backup_momentum"):
            module.momentum = module.backup_momentum

    model.apply(_enable)


class Lookahead(torch.optim.Optimizer):
    def __init__(self, optimizer, alpha=0.5, k=6, pullback_momentum="none"):
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"Invalid slow update rate: {alpha}")
        if not 1 <= k:
            raise ValueError(f"Invalid lookahead steps: {k}")
        self.optimizer = optimizer
        self.param_groups = self.optimizer.param_groups
        self.alpha = alpha
        self.k = k
        self.step_counter = 0
        assert pullback_momentum in ["reset", "pullback", "none"]
        self.pullback_momentum = pullback_momentum
        self.state = defaultdict(dict)

        # Cache the current optimizer parameters
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                param_state = self.state[p]
                param_state["cached_params"] = torch.zeros_like(p.data)
                param_state["cached_params"].copy_(p.data)

    def __getstate__(self):
        return {
            "state": self.state,
            "optimizer": self.optimizer,
            "alpha": self.alpha,
            "step_counter": self.step_counter,
            "k": self.k,
            "pullback_momentum": self.pullback_momentum,
        }

    def zero_grad(self, set_to_none: bool = True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self.optimizer.load_state_dict(state_dict)

    def step(self, closure=None):
        """Performs a single Lookahead optimization step.
        Arguments:
            closure (callable, optional): A closure that reevaluates the model
                and returns the loss.
        """
        loss = self.optimizer.step(closure)
        self.step_counter += 1

        if self.step_counter >= self.k:
            self.step_counter = 0
            # Lookahead and cache the current optimizer parameters
            for group in self.optimizer.param_groups:
                for p in group["params"]:
                    param_state = self.state[p]
                    p.data.mul_(self.alpha).add_(param_state["cached_params"], alpha=1.0 - self.alpha)  # crucial line
                    param_state["cached_params"].copy_(p.data)
                    if self.pullback_momentum == "pullback":
                        internal_momentum = self.optimizer.state[p]["momentum_buffer"]
                        self.optimizer.state[p]["momentum_buffer"] = internal_momentum.mul_(self.alpha).add_(
                            self.state[p]["cached_mom"], alpha=1.0 - self.alpha
                        )
                        self.state[p]["cached_mom"] = self.optimizer.state[p]["momentum_buffer"]
                    elif self.pullback_momentum == "reset":
                        self.optimizer.state[p]["momentum_buffer"] = torch.zeros_like(p.data)

        return loss


class AdamWByHand(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))  # noqa: UP032
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)  # noqa: C408
        super(AdamWByHand, self).__init__(params, defaults)  # noqa: UP008

    def __setstate__(self, state):
        super(AdamWByHand, self).__setstate__(state)  # noqa: UP008
        for group in self.param_groups:
            group.setdefault("amsgrad", False)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()

        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue

                # Perform stepweight decay
                p.mul_(1 - group["lr"] * group["weight_decay"])

                # Perform optimization step
                grad = p.grad
                if grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                amsgrad = group["amsgrad"]

                state = self.state[p]

                # State initialization
                if len(state) == 0:
                    state["step"] = 0
                    # Exponential moving average of gradient values
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    # Exponential moving average of squared gradient values
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if amsgrad:
                        # Maintains max of all exp. moving avg. of sq. grad. values
                        state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)

                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                if amsgrad:
                    max_exp_avg_sq = state["max_exp_avg_sq"]
                beta1, beta2 = group["betas"]

                state["step"] += 1
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]

                # Decay the first and second moment running average coefficient
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if amsgrad:
                    # Maintains the maximum of all 2nd moment running avg. till now
                    torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
                    # Use the max. for normalizing running avg. of gradient
                    denom = (max_exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])
                else:
                    denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])

                step_size = group["lr"] / bias_correction1

                p.addcdiv_(exp_avg, denom, value=-step_size)

        return loss


class GradualWarmupScheduler(lr_scheduler._LRScheduler):
    """Gradually warm-up(increasing) learning rate in optimizer.
    Proposed in 'Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour'.

    Args:
        optimizer (Optimizer): Wrapped optimizer.
        multiplier: target learning rate = base lr * multiplier if multiplier > 1.0. if multiplier = 1.0, lr starts from 0 and ends up with the base_lr.
        total_epoch: target learning rate is reached at total_epoch, gradually
        after_scheduler: after target_epoch, use this scheduler(eg. ReduceLROnPlateau)
    """

    def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
        self.multiplier = multiplier
        if self.multiplier < 1.0:
            raise ValueError("multiplier should be greater thant or equal to 1.")
        self.total_epoch = total_epoch
        self.after_scheduler = after_scheduler
        self.finished = False
        super(GradualWarmupScheduler, self).__init__(optimizer)  # noqa: UP008

    def get_lr(self):
        if self.last_epoch > self.total_epoch:
            if self.after_scheduler:
                if not self.finished:
                    self.after_scheduler.base_lrs = [base_lr * self.multiplier for base_lr in self.base_lrs]
                    self.finished = True
                return self.after_scheduler.get_last_lr()
            return [base_lr * self.multiplier for base_lr in self.base_lrs]

        if self.multiplier == 1.0:
            return [base_lr * (float(self.last_epoch) / self.total_epoch) for base_lr in self.base_lrs]
        else:
            return [
                base_lr * ((self.multiplier - 1.0) * self.last_epoch / self.total_epoch + 1.0)
                for base_lr in self.base_lrs
            ]

    def step(self, epoch=None, metrics=None):
        if self.finished and self.after_scheduler:
            if epoch is None:
                self.after_scheduler.step(None)
            else:
                self.after_scheduler.step(epoch - self.total_epoch)
            self._last_lr = self.after_scheduler.get_last_lr()
        else:
            return super(GradualWarmupScheduler, self).step(epoch)  # noqa: UP008


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16, bias=False)  # a bias before BatchNorm has an exact gradient of zero
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


def data(rng, n=12):
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    return torch.tensor(x), torch.tensor(y)


def build():
    torch.manual_seed(0)
    return Net()


def make_optimizer(model):
    if OPTIMIZER == "sam":
        return SAM(model.parameters(), torch.optim.SGD, rho=0.1, adaptive=ADAPTIVE, lr=0.1, momentum=0.9)
    if OPTIMIZER == "lookahead":
        return Lookahead(
            torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), alpha=0.5, k=2, pullback_momentum="pullback"
        )
    return AdamWByHand(model.parameters(), lr=0.05, weight_decay=0.01, amsgrad=ADAPTIVE)


def train(model, steps=4):
    rng = np.random.default_rng(0)
    optimizer = make_optimizer(model)
    base = optimizer.base_optimizer if OPTIMIZER == "sam" else optimizer
    if OPTIMIZER == "lookahead":
        for p in model.parameters():  # pullback needs the cached momentum to start from
            optimizer.state[p]["cached_mom"] = torch.zeros_like(p.data)
    cosine = lr_scheduler.CosineAnnealingLR(base, T_max=steps)
    scheduler = GradualWarmupScheduler(base, multiplier=2, total_epoch=2, after_scheduler=cosine)
    record = {"losses": [], "lr": []}
    model.train()
    for step in range(steps):
        x, y = data(rng)
        if OPTIMIZER == "sam":
            # first forward-backward step
            enable_running_stats(model)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.first_step(zero_grad=True)

            # second forward-backward step
            disable_running_stats(model)
            F.cross_entropy(model(x), y).backward()
            optimizer.second_step(zero_grad=True)
        else:

            def closure():
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)  # noqa: B023 (called within this iteration)
                loss.backward()
                return loss

            loss = optimizer.step(closure)
        scheduler.step(step + 1)
        record["losses"].append(loss.item())
        record["lr"].append(scheduler.get_last_lr()[0])
        if step == 1 and OPTIMIZER == "adamw":
            # the hand-written optimizer's state_dict, loaded into a fresh one over a copy of the model
            buffer = io.BytesIO()
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    record["running_mean"] = model.bn.running_mean.tolist()
    if OPTIMIZER == "adamw":
        final = [p.detach().clone() for p in model.parameters()]
        buffer.seek(0)
        checkpoint = torch.load(buffer)
        resumed = build()
        resumed.load_state_dict(checkpoint["model"])
        opt2 = AdamWByHand(resumed.parameters(), lr=0.05, weight_decay=0.01, amsgrad=ADAPTIVE)
        opt2.load_state_dict(checkpoint["optimizer"])
        rng = np.random.default_rng(0)
        batches = [data(rng) for _ in range(steps)]
        resumed.train()
        for k, (x, y) in enumerate(batches[2:], start=2):
            for group in opt2.param_groups:
                group["lr"] = record["lr"][k - 1]  # the rate the scheduler had set for step k
            opt2.zero_grad()
            F.cross_entropy(resumed(x), y).backward()
            opt2.step()
        record["state_step"] = float(opt2.state[next(iter(resumed.parameters()))]["step"])
        record["resumes_exactly"] = all(
            torch.equal(a, b.detach()) for a, b in zip(final, resumed.parameters(), strict=True)
        )
    return record


if __name__ == "__main__":
    print(train(build()))
