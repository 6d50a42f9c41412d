"""A character model of Mamba blocks (a selective state-space scan) or of RWKV time-mix and
channel-mix blocks, written as mamba-minimal, Mamba-2's "minimal SSD" listing, mamba_ssm's
``step`` and RWKV-4's model.py write them, at tiny sizes.

Its idioms: Mamba's ``in_proj(x).split([d_inner, d_inner], dim=-1)``, a depthwise causal
``nn.Conv1d(groups=d_inner, padding=d_conv - 1)`` cut to ``[:, :, :l]``, ``A = -torch.exp(self.A_log
.float())``, ``F.softplus`` of ``dt_proj``, the discretisation ``torch.exp(torch.einsum("bld,dn->bldn",
delta, A))`` and ``torch.einsum("bld,bln,bld->bldn", delta, B, u)``; the scan as a Python loop over
time with ``torch.einsum("bdn,bn->bd", ...)`` and ``torch.stack(ys, dim=1)`` (``SCAN = "loop"``) or in
closed form by Mamba-2's ``segsum`` (``torch.tril(torch.ones(T, T, dtype=bool), diagonal=-1)``,
``masked_fill(~mask, 0)``, ``torch.cumsum(x, dim=-2)``, ``masked_fill(~mask, -torch.inf)``, ``exp``) and
two einsums (``"cumsum"``); ``dt_proj``'s bias set to the inverse softplus of a log-uniform ``dt``
by ``dt + torch.log(-torch.expm1(-dt))`` under ``torch.no_grad()`` with ``copy_`` and a
``_no_reinit`` flag on the Parameter read back by ``getattr(module.bias, "_no_reinit", False)`` in
``self.apply(self._init_weights)``, which rescales ``out_proj.weight`` found by ``named_parameters()``
with ``p /= math.sqrt(n_layer)`` under ``torch.no_grad()``; ``A_log`` from ``torch.arange(...).repeat(d, 1)``; the
recurrent ``step``: a conv state shifted by ``conv_state.copy_(torch.roll(conv_state, shifts=-1,
dims=-1))``, ``conv_state[:, :, -1] = x`` and ``torch.sum(conv_state * conv1d.weight.squeeze(1),
dim=-1)``, the SSM state updated in place by ``ssm_state.copy_(ssm_state * dA + dBx)``. RWKV's token
shift by ``nn.ZeroPad2d((0, 0, 1, -1))`` (time mix) or ``F.pad(x, (0, 0, 1, -1))`` (channel mix), its
``time_mix`` lerps, the WKV recurrence with the running-maximum trick (``torch.maximum``,
``torch.full(..., -1e38)``), ``torch.square(torch.relu(...))``; its init of ``time_decay`` and
``time_first`` from Python lists of per-channel formulas and ``time_mix`` by ``torch.pow`` of a ramp
written element by element (``x[0, 0, i] = i / C``)."""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, torch

MIXER = "mamba"  # or "rwkv"
SCAN = "loop"  # or "cumsum"
DEVICE = "cpu"
VOCAB, D_MODEL, N_LAYER, SEQ = 9, 12, 2, 8
D_STATE, D_CONV, EXPAND = 4, 3, 2


class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def segsum(x):
    """segsum[..., t, s] = x[..., s+1] + ... + x[..., t] for s <= t, -inf above the diagonal."""
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, device=x.device, dtype=bool), diagonal=0)
    return x_segsum.masked_fill(~mask, -torch.inf)


class MambaBlock(nn.Module):
    def __init__(self, d_model, dt_min=0.001, dt_max=0.1, dt_init_floor=1e-4):
        super().__init__()
        self.d_inner = EXPAND * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=False)
        self.conv1d = nn.Conv1d(
            self.d_inner, self.d_inner, kernel_size=D_CONV, groups=self.d_inner, padding=D_CONV - 1, bias=True
        )
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + D_STATE * 2, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        dt = torch.exp(torch.rand(self.d_inner) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        dt = dt.clamp(min=dt_init_floor)
        inv_dt = dt + torch.log(-torch.expm1(-dt))  # softplus(inv_dt) == dt
        with torch.no_grad():
            self.dt_proj.bias.copy_(inv_dt)
        self.dt_proj.bias._no_reinit = True
        A = torch.arange(1, D_STATE + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, x):
        _b, l, _d = x.shape
        x, res = self.in_proj(x).split([self.d_inner, self.d_inner], dim=-1)
        x = self.conv1d(x.transpose(1, 2))[:, :, :l].transpose(1, 2)
        x = F.silu(x)
        y = self.ssm(x)
        return self.out_proj(y * F.silu(res))

    def ssm(self, x):
        A = -torch.exp(self.A_log.float())
        delta, B, C = self.x_proj(x).split([self.dt_rank, D_STATE, D_STATE], dim=-1)
        delta = F.softplus(self.dt_proj(delta))
        return self.selective_scan(x, delta, A, B, C, self.D.float())

    def selective_scan(self, u, delta, A, B, C, D):
        b, l, d_in = u.shape
        n = A.shape[1]
        deltaB_u = torch.einsum("bld,bln,bld->bldn", delta, B, u)
        if SCAN == "loop":
            deltaA = torch.exp(torch.einsum("bld,dn->bldn", delta, A))
            state = torch.zeros((b, d_in, n), device=u.device)
            ys = []
            for i in range(l):
                state = deltaA[:, i] * state + deltaB_u[:, i]
                ys.append(torch.einsum("bdn,bn->bd", state, C[:, i, :]))
            y = torch.stack(ys, dim=1)
        else:
            log_decay = torch.einsum("bld,dn->bdnl", delta, A)
            weights = torch.exp(segsum(log_decay))  # (b, d, n, t, s)
            states = torch.einsum("bdnts,bsdn->btdn", weights, deltaB_u)
            y = torch.einsum("btdn,btn->btd", states, C)
        return y + u * D

    def step(self, x, conv_state, ssm_state):
        """One token (b, d_model) through the block with its conv and SSM states updated in place."""
        x, res = self.in_proj(x).chunk(2, dim=-1)
        conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=-1))
        conv_state[:, :, -1] = x
        x = torch.sum(conv_state * self.conv1d.weight.squeeze(1), dim=-1) + self.conv1d.bias
        x = F.silu(x)
        delta, B, C = self.x_proj(x).split([self.dt_rank, D_STATE, D_STATE], dim=-1)
        dt = F.softplus(self.dt_proj(delta))
        A = -torch.exp(self.A_log.float())
        dA = torch.exp(torch.einsum("bd,dn->bdn", dt, A))
        dBx = torch.einsum("bd,bn,bd->bdn", dt, B, x)
        ssm_state.copy_(ssm_state * dA + dBx)
        y = torch.einsum("bdn,bn->bd", ssm_state, C) + self.D * x
        return self.out_proj(y * F.silu(res))


class RWKVTimeMix(nn.Module):
    def __init__(self, n_embd, layer_id, n_layer):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        ratio_0_to_1 = layer_id / (n_layer - 1)
        ratio_1_to_almost0 = 1.0 - (layer_id / n_layer)
        decay_speed = [-5 + 8 * (h / (n_embd - 1)) ** (0.7 + 1.3 * ratio_0_to_1) for h in range(n_embd)]
        self.time_decay = nn.Parameter(torch.tensor(decay_speed))
        zigzag = torch.tensor([(i + 1) % 3 - 1 for i in range(n_embd)]) * 0.5
        self.time_first = nn.Parameter(torch.ones(n_embd) * math.log(0.3) + zigzag)
        ramp = torch.ones(1, 1, n_embd)
        for i in range(n_embd):
            ramp[0, 0, i] = i / n_embd
        self.time_mix_k = nn.Parameter(torch.pow(ramp, ratio_1_to_almost0))
        self.time_mix_v = nn.Parameter(torch.pow(ramp, ratio_1_to_almost0) + 0.3 * ratio_0_to_1)
        self.time_mix_r = nn.Parameter(torch.pow(ramp, 0.5 * ratio_1_to_almost0))
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.output = nn.Linear(n_embd, n_embd, bias=False)

    def wkv(self, k, v):
        B, T, C = k.shape
        w = -torch.exp(self.time_decay)
        u = self.time_first
        aa = torch.zeros(B, C, device=k.device)
        bb = torch.zeros(B, C, device=k.device)
        pp = torch.full((B, C), -1e38, device=k.device)
        out = []
        for t in range(T):
            kk, vv = k[:, t], v[:, t]
            ww = u + kk
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
            ww = w + pp
            p = torch.maximum(ww, kk)
            e1, e2 = torch.exp(ww - p), torch.exp(kk - p)
            aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
        return torch.stack(out, dim=1)

    def forward(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k, v = self.key(xk), self.value(xv)
        r = torch.sigmoid(self.receptance(xr))
        return self.output(r * self.wkv(k, v))


class RWKVChannelMix(nn.Module):
    def __init__(self, n_embd, layer_id, n_layer):
        super().__init__()
        ratio_1_to_almost0 = 1.0 - (layer_id / n_layer)
        ramp = torch.ones(1, 1, n_embd)
        for i in range(n_embd):
            ramp[0, 0, i] = i / n_embd
        self.time_mix_k = nn.Parameter(torch.pow(ramp, ratio_1_to_almost0))
        self.time_mix_r = nn.Parameter(torch.pow(ramp, ratio_1_to_almost0))
        self.key = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(4 * n_embd, n_embd, bias=False)

    def forward(self, x):
        xx = F.pad(x, (0, 0, 1, -1))
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k = torch.square(torch.relu(self.key(xk)))
        return torch.sigmoid(self.receptance(xr)) * self.value(k)


class Block(nn.Module):
    def __init__(self, layer_id):
        super().__init__()
        if MIXER == "mamba":
            self.norm = RMSNorm(D_MODEL)
            self.mixer = MambaBlock(D_MODEL)
        else:
            self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
            self.att = RWKVTimeMix(D_MODEL, layer_id, N_LAYER)
            self.ffn = RWKVChannelMix(D_MODEL, layer_id, N_LAYER)

    def forward(self, x):
        if MIXER == "mamba":
            return x + self.mixer(self.norm(x))
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList([Block(i) for i in range(N_LAYER)])
        self.norm_f = RMSNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.lm_head.weight = self.embedding.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        """mamba_ssm's rule: zero Linear biases unless marked ``_no_reinit``, a small embedding, and the
        output projections rescaled by the depth (the residual stream adds N_LAYER of them)."""
        if isinstance(module, nn.Linear) and module.bias is not None:
            if not getattr(module.bias, "_no_reinit", False):
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        for name, p in module.named_parameters():
            if name in ("out_proj.weight", "output.weight"):
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))
                with torch.no_grad():
                    p /= math.sqrt(N_LAYER)

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm_f(x))

    @torch.no_grad()
    def recurrent_logits(self, input_ids):
        """Mamba's token-by-token inference: the logits of every position from the states alone."""
        b = input_ids.shape[0]
        states = []
        for layer in self.layers:
            d_inner = layer.mixer.d_inner
            device = input_ids.device
            states.append(
                (torch.zeros(b, d_inner, D_CONV, device=device), torch.zeros(b, d_inner, D_STATE, device=device))
            )
        out = []
        for t in range(input_ids.shape[1]):
            x = self.embedding(input_ids[:, t])
            for layer, (conv_state, ssm_state) in zip(self.layers, states, strict=True):
                x = x + layer.mixer.step(layer.norm(x), conv_state, ssm_state)
            out.append(self.lm_head(self.norm_f(x)))
        return torch.stack(out, dim=1)


def batch_of(rng, batch=3):
    """Counting sequences modulo VOCAB with a random start and step 1 or 2."""
    start = rng.integers(0, VOCAB, size=(batch, 1))
    stride = rng.integers(1, 3, size=(batch, 1))
    seq = (start + stride * np.arange(SEQ + 1)) % VOCAB
    return seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)


def build():
    torch.manual_seed(0)
    return Model()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    rng = np.random.default_rng(0)
    record = {"losses": [], "grad_norms": [], "tied": model.lm_head.weight is model.embedding.weight}
    for _ in range(steps):
        x, y = batch_of(rng)
        x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        record["grad_norms"].append(nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        optimizer.step()
        record["losses"].append(loss.item())
    model.eval()
    with torch.no_grad():
        logits = model(x)
        record["accuracy"] = (logits.argmax(-1) == y).float().mean().item()
        record["last_logits"] = logits[:, -1].flatten().tolist()
    if MIXER == "mamba":
        stepped = model.recurrent_logits(x)
        record["step_matches"] = bool(torch.allclose(stepped, logits, atol=1e-4))
    return record


if __name__ == "__main__":
    print(train(build()))
