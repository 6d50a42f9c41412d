"""The "How to save memory by fusing the optimizer step into the backward pass" tutorial, at a tiny size
on synthetic data: one optimizer per parameter, stepped by a hook the moment that parameter's gradient is
accumulated, beside the same model trained the usual way.

Idioms: ``optimizer_dict = {p: torch.optim.Adam([p], foreach=False) for p in model.parameters()}``;
``def optimizer_hook(parameter) -> None: optimizer_dict[parameter].step(); optimizer_dict[parameter].zero_grad()``
registered by ``p.register_post_accumulate_grad_hook(optimizer_hook)``; a ``scheduler_dict`` of
per-parameter ``StepLR`` stepped after each iteration; ``p.grad is None`` after the fused backward
(``zero_grad()`` sets None); parameters as dict keys (hashed by identity); the usual loop with one
``Adam(model.parameters(), foreach=False)`` for comparison; and the hook handles' ``remove()``, after
which backward leaves the gradients in ``.grad``.
"""

from __future__ import annotations

from shim import F, lr_scheduler, nn, optim, torch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.block = nn.Sequential(nn.LayerNorm(6), nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6))
        self.head = nn.Linear(6, 10)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.block(h)
        return self.head(h.mean(1))


def build():
    torch.manual_seed(0)
    fused, plain = Net(), Net()
    plain.load_state_dict(fused.state_dict())
    return nn.ModuleDict({"fused": fused, "plain": plain})


def batch(step, n=4, length=5):
    tokens = (torch.arange(n * length).view(n, length) * (step + 3)) % 10
    target = tokens[:, 0]
    return tokens, target


def train(model, steps=3):
    fused, plain = model["fused"], model["plain"]
    optimizer_dict = {p: optim.Adam([p], lr=0.01, foreach=False) for p in fused.parameters()}
    scheduler_dict = {p: lr_scheduler.StepLR(optimizer_dict[p], step_size=2, gamma=0.5) for p in fused.parameters()}

    def optimizer_hook(parameter) -> None:
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in fused.parameters()]
    optimizer = optim.Adam(plain.parameters(), lr=0.01, foreach=False)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses, plain_losses, grads_cleared = [], [], []
    for step in range(steps):
        tokens, target = batch(step)
        loss = F.cross_entropy(fused(tokens), target)
        loss.backward()
        for s in scheduler_dict.values():
            s.step()
        grads_cleared.append(all(p.grad is None for p in fused.parameters()))
        losses.append(loss.item())
        optimizer.zero_grad()
        plain_loss = F.cross_entropy(plain(tokens), target)
        plain_loss.backward()
        optimizer.step()
        scheduler.step()
        plain_losses.append(plain_loss.item())
    for handle in handles:
        handle.remove()
    tokens, target = batch(steps)
    F.cross_entropy(fused(tokens), target).backward()
    kept = all(p.grad is not None for p in fused.parameters())
    drift = max((a - b).abs().max().item() for a, b in zip(fused.parameters(), plain.parameters()))
    lrs = sorted({round(o.param_groups[0]["lr"], 6) for o in optimizer_dict.values()})
    return {
        "losses": losses,
        "plain_losses": plain_losses,
        "grads_cleared": grads_cleared,
        "kept_after_remove": kept,
        "same_as_plain": drift < 1e-5,
        "lrs": lrs + [optimizer.param_groups[0]["lr"]],
    }


if __name__ == "__main__":
    print(train(build()))
