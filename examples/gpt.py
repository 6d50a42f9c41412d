"""A small character-level GPT, written as a PyTorch user writes it: only the four import lines differ.

Token and position embeddings, a stack of pre-norm transformer blocks (causal self-attention through
F.scaled_dot_product_attention, a GELU MLP), AdamW with weight decay on the matrices only,
cross_entropy. The training loop is a whole script's: a Dataset of character windows of a text
file and a shuffled DataLoader, a learning rate warmed up linearly and then annealed on a cosine
(LambdaLR), gradient clipping, mixed precision (autocast to float16 with a GradScaler), a
progress bar (tqdm when installed, else a one-line bar below), checkpoints with save/load that a
later run resumes bit for bit (model, optimizer, schedule, scaler, random state, data order), an
evaluation on held-out text under no_grad, a loss plot (matplotlib, when installed) and sampling
with multinomial. On a GPU it runs where ``"cuda"`` points (vkml: best_device()'s Vulkan device).
tests/test_gpt_example.py runs the same file under PyTorch, with the import lines swapped, and
compares the losses; it also stops a run half way and checks the resumed run ends with the same bits.

    python examples/gpt.py --steps 300                          # "cuda" if available, else the CPU
    python examples/gpt.py --steps 20 --device cpu --data my.txt --plot loss.png
    python examples/gpt.py --steps 300 --checkpoint gpt.ckpt --stop-after 100   # interrupted ...
    python examples/gpt.py --steps 300 --checkpoint gpt.ckpt --resume           # ... and resumed
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import vkml as torch  # the only lines that differ from the PyTorch program
import vkml.nn as nn
from vkml.nn import functional as F
from vkml.utils.data import DataLoader, Dataset, Subset

try:
    from tqdm import tqdm
except ImportError:  # a one-line bar with the part of tqdm's interface used here
    tqdm = None

TEXT = """\
The river ran past the mill and under the old stone bridge, and the miller's children
counted the boats that went by. In the morning the boats carried grain down to the town;
in the evening they came back with salt, cloth and news. The youngest child kept a list of
every boat's name in a book with a green cover, and when a boat she had never seen went by
she ran along the bank to read the letters painted on its side. Some names were long and
some were short. Some boats came every week and some came once and never again. When the
river froze the boats stopped, and the children skated where the boats had been, and the
book with the green cover waited on the shelf for the spring.
"""


class Config:
    def __init__(self, vocab_size, block_size=32, n_layer=2, n_head=4, n_embd=64, dropout=0.1):
        self.vocab_size, self.block_size = vocab_size, block_size
        self.n_layer, self.n_head, self.n_embd, self.dropout = n_layer, n_head, n_embd, dropout


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.proj(y))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss

    @torch.no_grad()
    def generate(self, tokens, max_new_tokens, temperature=1.0):
        """``tokens`` (a list of ids) continued by ``max_new_tokens`` sampled ones, one forward pass each."""
        tokens = list(tokens)
        device = self.lm_head.weight.device
        for _ in range(max_new_tokens):
            context = torch.tensor([tokens[-self.config.block_size :]], dtype=torch.long, device=device)
            logits, _ = self(context)
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            tokens.append(torch.multinomial(probs, num_samples=1).item())
        return tokens


def make_optimizer(model, lr=3e-3, weight_decay=0.1):
    """AdamW with weight decay on the matrices only (biases, LayerNorm weights and nothing else)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


def warmup_cosine(warmup, total, floor=0.1):
    """The learning rate factor of step ``i``: linear from 1/warmup up to 1, then a cosine down to ``floor``."""

    def factor(i):
        if i < warmup:
            return (i + 1) / warmup
        progress = min(1.0, (i - warmup) / max(1, total - warmup))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def train_step(model, optimizer, xb, yb, scaler=None, amp_dtype=None):
    """One step; returns the loss tensor (reading it is the caller's choice: it waits for the GPU).

    With ``amp_dtype`` the forward runs under autocast and ``scaler`` scales the loss, unscales the
    gradients before clipping and skips the update when they overflowed.
    """
    with torch.autocast(device_type=xb.device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
        _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss


class CharDataset(Dataset):
    """Every window of ``block_size + 1`` characters of a text: (input, target), the target shifted by one."""

    def __init__(self, ids, block_size):
        self.ids, self.block_size = ids, block_size

    def __len__(self):
        return len(self.ids) - self.block_size

    def __getitem__(self, i):
        chunk = self.ids[i : i + self.block_size + 1]
        return chunk[:-1], chunk[1:]


def epoch_loader(dataset, batch_size, seed, epoch, skip=0):
    """The batches of one epoch in an order fixed by (seed, epoch), after the first ``skip``: a resumed
    run continues the interrupted epoch where it stopped, without drawing the skipped batches.

    The loader draws its workers' base seed from its own generator, not the global one: a resumed
    run makes a loader where the first run did not, and the dropout masks must not move.
    """
    generator = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(len(dataset), generator=generator).tolist()
    subset = Subset(dataset, order[skip * batch_size :])
    return DataLoader(subset, batch_size=batch_size, drop_last=True, generator=generator)


class Bar:
    """A progress bar on stderr, for when tqdm is not installed: ``for x in Bar(it, total=n): bar.set_postfix_str(...)``."""

    def __init__(self, iterable, total, initial=0, desc="", disable=False):
        self.iterable, self.total, self.n, self.desc, self.disable, self.postfix = (
            iterable,
            total,
            initial,
            desc,
            disable,
            "",
        )
        self.start = time.perf_counter()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1
            self._draw()
        if not self.disable:
            print(file=sys.stderr)

    def set_postfix_str(self, text):
        self.postfix = text

    def _draw(self):
        if self.disable:
            return
        done = 30 * self.n // max(1, self.total)
        rate = self.n / max(1e-9, time.perf_counter() - self.start)
        line = f"\r{self.desc}: [{'#' * done}{'.' * (30 - done)}] {self.n}/{self.total} {rate:.1f} it/s {self.postfix}"
        print(line, end="", file=sys.stderr, flush=True)


def plot_losses(losses, path):
    """Write the training loss per step to ``path`` (a PNG) with matplotlib; say so when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"loss plot: matplotlib is not installed, {path} not written")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(len(losses)), losses)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"loss plot: {path}")


def main(
    steps=300,
    device=None,
    batch_size=16,
    block_size=32,
    seed=1337,
    sample_tokens=200,
    n_layer=2,
    n_embd=64,
    data=None,
    checkpoint=None,
    resume=False,
    stop_after=None,
    amp=None,
    warmup=None,
    plot=None,
    progress=True,
):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if amp is None:
        amp = torch.device(device).type != "cpu"  # float16 where a GPU runs it fast
    torch.manual_seed(seed)
    text = TEXT
    if data is not None:
        with open(data, encoding="utf-8") as f:
            text = f.read()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(ids))
    train_set, val_set = CharDataset(ids[:n], block_size), CharDataset(ids[n:], block_size)
    per_epoch = len(train_set) // batch_size
    if per_epoch == 0:
        raise ValueError(f"the text gives {len(train_set)} training windows, fewer than one batch of {batch_size}")

    @torch.no_grad()
    def estimate_loss(iters=4):
        """The mean loss of the first ``iters`` batches of each split, in order (the same batches every time)."""
        model.eval()
        out = {}
        for split, dataset in (("train", train_set), ("val", val_set)):
            losses = [
                model(x.to(device), y.to(device))[1].item()
                for (x, y), _ in zip(DataLoader(dataset, batch_size), range(iters))
            ]
            out[split] = sum(losses) / len(losses)
        model.train()
        return out

    model = GPT(Config(len(chars), block_size=block_size, n_layer=n_layer, n_embd=n_embd)).to(device)
    model = torch.compile(model)  # vkml: an OptimizedModule wrapper that only calls it (it fuses lazily)
    optimizer = make_optimizer(model)
    warmup = max(1, steps // 10) if warmup is None else warmup
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(warmup, steps))
    scaler = torch.amp.GradScaler(torch.device(device).type, enabled=amp)
    amp_dtype = torch.float16 if amp else None
    losses, start_step = [], 0
    if resume:
        state = torch.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["rng"].cpu())  # dropout continues with the masks it would have drawn
        losses, start_step = list(state["losses"]), state["step"]
        print(f"resumed from {checkpoint} at step {start_step}")
    print(f"device: {device} | parameters: {sum(p.numel() for p in model.parameters())} | vocabulary: {len(chars)}")
    end = steps if stop_after is None else min(steps, stop_after)

    def batches():
        step = start_step
        while step < end:
            for xb, yb in epoch_loader(train_set, batch_size, seed, step // per_epoch, skip=step % per_epoch):
                yield step, xb, yb
                step += 1
                if step == end:
                    break

    bar = tqdm if tqdm is not None else Bar
    started = time.perf_counter()
    steps_bar = bar(batches(), total=steps, initial=start_step, desc="training", disable=not progress)
    for step, xb, yb in steps_bar:
        loss = train_step(model, optimizer, xb.to(device), yb.to(device), scaler if amp else None, amp_dtype).item()
        scheduler.step()
        losses.append(loss)
        steps_bar.set_postfix_str(f"loss {loss:.4f} lr {scheduler.get_last_lr()[0]:.2e}")
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step}: loss {loss:.4f}")
    elapsed = time.perf_counter() - started
    if checkpoint is not None:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict(),
            "rng": torch.get_rng_state(),
            "step": end,
            "losses": losses,
        }
        torch.save(state, checkpoint)
        print(f"checkpoint: {checkpoint} at step {end}")
    if end < steps:
        print(f"stopped at step {end} of {steps}")
        return losses[-1] if losses else None
    evaluation = estimate_loss()
    print(f"loss: {losses[0]:.4f} -> {losses[-1]:.4f} | train {evaluation['train']:.4f} val {evaluation['val']:.4f}")
    ran = max(1, end - start_step)
    print(f"steps: {steps} | {elapsed / ran * 1000:.1f} ms/step | random guess {math.log(len(chars)):.4f}")
    if plot is not None:
        plot_losses(losses, plot)
    sample = model.generate([stoi[text[0]]], max_new_tokens=sample_tokens, temperature=0.8)
    print("sample:", "".join(itos[i] for i in sample).replace("\n", " / "))
    return losses[-1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="steps of the whole run (the schedule's length)")
    parser.add_argument("--device", default=None, help="default: 'cuda' if available, else 'cpu'")
    parser.add_argument("--data", default=None, help="a text file to train on (default: the text in this file)")
    parser.add_argument("--checkpoint", default=None, help="a file to save the run to at its end")
    parser.add_argument("--resume", action="store_true", help="continue the run saved in --checkpoint")
    parser.add_argument("--stop-after", type=int, default=None, help="stop (and save) after this step")
    parser.add_argument(
        "--amp", action=argparse.BooleanOptionalAction, default=None, help="float16 autocast (default: on a GPU)"
    )
    parser.add_argument("--plot", default=None, help="write the loss curve to this PNG (needs matplotlib)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--sample-tokens", type=int, default=200)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    main(
        args.steps,
        args.device,
        batch_size=args.batch_size,
        block_size=args.block_size,
        sample_tokens=args.sample_tokens,
        n_layer=args.n_layer,
        n_embd=args.n_embd,
        data=args.data,
        checkpoint=args.checkpoint,
        resume=args.resume,
        stop_after=args.stop_after,
        amp=args.amp,
        plot=args.plot,
        progress=not args.no_progress,
    )
