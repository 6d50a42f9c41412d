"""A language model whose MLP is a sparse mixture of experts, routed as Mixtral (Hugging Face's
MixtralSparseMoeBlock), the Switch Transformer (top-1 with an expert capacity) and gpt-fast (expert
weights gathered per token) write it, at tiny sizes.

Its idioms: a router ``nn.Linear`` whose ``F.softmax(router_logits, dim=1, dtype=torch.float)`` is cut
to ``torch.topk`` and renormalised in place (``routing_weights /= ...sum(dim=-1, keepdim=True)``);
``F.one_hot(selected_experts, num_classes=E).permute(2, 1, 0)`` as the expert mask, the experts hit
found by ``torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()`` and looked up in an
``nn.ModuleList`` by a 0-d tensor, each expert's tokens by ``idx, top_x = torch.where(mask)``,
``hidden[None, top_x].reshape(-1, D)`` and its weighted output added back with
``final.index_add_(0, top_x, ...)`` (``ROUTER = "mixtral"``); the Switch router's ``argmax``,
capacity by ``torch.cumsum(expert_mask, dim=-2)`` of the one-hot mask and ``torch.lt``, a boolean
row mask read and written as ``next_states[token_indices] = expert(hidden[token_indices])`` over a
``clone()`` (tokens over capacity pass through), scaled by ``router_probs.max(dim=-1).values``
(``"switch"``); gpt-fast's ``nn.Parameter`` of all experts' weights indexed by the ``(T, k)``
expert ids, ``torch.einsum("ti,taoi -> tao", x, w1[expert_indices])`` and a ``torch.einsum("tai,ta
-> ti")`` mix (``"gptfast"``); the load-balancing loss ``E * sum(mean(one_hot) * mean(probs))``, the
router z-loss ``logsumexp(logits) ** 2``; ``torch.bincount(..., minlength=E)`` and
``F.one_hot(...).sum(0)`` for expert usage; SwiGLU experts (``F.silu(w1(x)) * w3(x)``)."""

from __future__ import annotations

import numpy as np
from shim import F, nn, torch

ROUTER = "mixtral"  # or "switch", "gptfast"
DEVICE = "cpu"
VOCAB, DIM, HIDDEN, EXPERTS, TOP_K, SEQ = 13, 16, 24, 4, 2, 6
AUX_COEF, Z_COEF = 0.02, 1e-3
CAPACITY_FACTOR = 1.0


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    """Top-k routing: each token goes to k experts, mixed by the renormalised router weights."""

    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch, seq, dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final = torch.zeros((batch * seq, dim), dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert = self.experts[expert_idx]
            slot, token = torch.where(expert_mask[expert_idx].squeeze(0))
            current = hidden_states[None, token].reshape(-1, dim)
            current = expert(current) * routing_weights[token, slot, None]
            final.index_add_(0, token, current.to(hidden_states.dtype))
        return final.reshape(batch, seq, dim), router_logits, selected_experts


class SwitchMoeBlock(nn.Module):
    """Top-1 routing with an expert capacity: a token past its expert's capacity skips the experts."""

    def __init__(self, dim, hidden, num_experts, capacity_factor):
        super().__init__()
        self.num_experts, self.capacity_factor = num_experts, capacity_factor
        self.classifier = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch, seq, dim = hidden_states.shape
        tokens = hidden_states.reshape(-1, dim)
        router_logits = self.classifier(tokens)
        router_probs = F.softmax(router_logits, dim=-1)
        expert_index = torch.argmax(router_probs, dim=-1)
        expert_mask = F.one_hot(expert_index, num_classes=self.num_experts)
        capacity = int(self.capacity_factor * tokens.shape[0] / self.num_experts)
        token_priority = torch.cumsum(expert_mask, dim=-2)
        expert_mask = expert_mask * torch.lt(token_priority, capacity + 1)
        router_probs_max = router_probs.max(dim=-1).values
        next_states = tokens.clone()
        for idx, expert in enumerate(self.experts):
            token_indices = expert_mask[:, idx].bool()
            if token_indices.any():
                next_states[token_indices] = expert(tokens[token_indices]).to(next_states.dtype)
        out = router_probs_max.unsqueeze(-1) * next_states
        return out.reshape(batch, seq, dim), router_logits, expert_index.unsqueeze(-1)


class ConditionalFeedForward(nn.Module):
    """Every expert's SwiGLU weights in one Parameter each, gathered by the tokens' expert ids."""

    def __init__(self, dim, hidden, num_experts):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(num_experts, hidden, dim))
        self.w2 = nn.Parameter(torch.empty(num_experts, dim, hidden))
        self.w3 = nn.Parameter(torch.empty(num_experts, hidden, dim))
        for w in (self.w1, self.w2, self.w3):
            nn.init.normal_(w, std=0.1)

    def forward(self, x, expert_indices):
        w1_weights = self.w1[expert_indices]  # (T, k, hidden, dim)
        w3_weights = self.w3[expert_indices]
        w2_weights = self.w2[expert_indices]
        x1 = F.silu(torch.einsum("ti,taoi -> tao", x, w1_weights))
        x3 = torch.einsum("ti, taoi -> tao", x, w3_weights)
        return torch.einsum("tao, taio -> tai", (x1 * x3), w2_weights)


class GatherMoeBlock(nn.Module):
    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.cond_ffn = ConditionalFeedForward(dim, hidden, num_experts)

    def forward(self, x):
        batch, seq, dim = x.shape
        x = x.view(-1, dim)
        scores = self.gate(x)
        expert_weights = F.softmax(scores, dim=-1)
        expert_weights, expert_indices = torch.topk(expert_weights, self.top_k, dim=-1)
        expert_weights /= expert_weights.sum(dim=-1, keepdim=True)
        expert_outs = self.cond_ffn(x, expert_indices)
        out = torch.einsum("tai,ta -> ti", expert_outs, expert_weights)
        return out.view(batch, seq, dim), scores, expert_indices


def load_balancing_loss(router_logits, selected, num_experts):
    """Switch's auxiliary loss: E times the dot product of each expert's share of the tokens and of
    the router's probability mass (1 when both are uniform)."""
    probs = F.softmax(router_logits, dim=-1)
    expert_mask = F.one_hot(selected, num_experts).float()
    tokens_per_expert = torch.mean(expert_mask, dim=0)  # (k, E): the share routed at each of the k slots
    prob_per_expert = torch.mean(probs, dim=0)
    return torch.sum(tokens_per_expert * prob_per_expert.unsqueeze(0)) * num_experts


def router_z_loss(router_logits):
    log_z = torch.logsumexp(router_logits, dim=-1)
    return torch.sum(log_z**2) / router_logits.shape[0]


class MoeLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(1, SEQ, DIM))
        self.norm1 = nn.LayerNorm(DIM)
        if ROUTER == "mixtral":
            self.moe = SparseMoeBlock(DIM, HIDDEN, EXPERTS, TOP_K)
        elif ROUTER == "switch":
            self.moe = SwitchMoeBlock(DIM, HIDDEN, EXPERTS, CAPACITY_FACTOR)
        else:
            self.moe = GatherMoeBlock(DIM, HIDDEN, EXPERTS, TOP_K)
        self.norm2 = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        h = self.embed(idx) + self.pos[:, : idx.size(1)]
        moe_out, router_logits, selected = self.moe(self.norm1(h))
        h = h + moe_out
        return self.head(self.norm2(h)), router_logits, selected


def batch_of(rng, batch=4):
    """Each next token is the current one plus 3, mod VOCAB."""
    start = rng.integers(0, VOCAB, size=(batch, 1))
    seq = (start + 3 * np.arange(SEQ + 1)) % VOCAB
    return seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)


def build():
    torch.manual_seed(0)
    return MoeLM()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    rng = np.random.default_rng(0)
    record = {"losses": [], "aux": [], "z": [], "usage": [], "grad_norms": []}
    for _ in range(steps):
        x, y = batch_of(rng)
        x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
        logits, router_logits, selected = model(x)
        ce = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        aux = load_balancing_loss(router_logits, selected, EXPERTS)
        z = router_z_loss(router_logits)
        loss = ce + AUX_COEF * aux + Z_COEF * z
        optimizer.zero_grad()
        loss.backward()
        record["grad_norms"].append(nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0).item())
        optimizer.step()
        record["losses"].append(loss.item())
        record["aux"].append(aux.item())
        record["z"].append(z.item())
        record["usage"].append(torch.bincount(selected.flatten(), minlength=EXPERTS).tolist())
    model.eval()
    with torch.no_grad():
        logits, _, selected = model(x)
        record["accuracy"] = (logits.argmax(-1) == y).float().mean().item()
        record["top1_share"] = F.one_hot(selected[:, 0], EXPERTS).sum(0).tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
