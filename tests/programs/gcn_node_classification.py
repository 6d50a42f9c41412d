"""Semi-supervised node classification with a two-layer GCN (or GraphSAGE), message passing by hand.

Written as Kipf & Welling's reference code and PyTorch Geometric's tutorials write it, without the
library: a random graph's ``edge_index`` (2 x E, long) made undirected with ``edge_index.flip(0)``,
deduplicated with ``torch.unique(edge_index, dim=1)``, self-loops from ``torch.arange(n).repeat(2, 1)``;
the degree by ``scatter_add_`` of ones, ``deg.pow(-0.5)`` with its infinities zeroed by a boolean
``masked_fill_``; messages ``x.index_select(0, row) * norm.view(-1, 1)`` summed into the target nodes
with ``index_add_`` (GCN) or with ``scatter_add_`` over an expanded index and divided by a clamped
``torch.bincount`` (GraphSAGE's mean); ``F.dropout(..., training=self.training)``; a log-softmax head
with ``F.nll_loss`` over the boolean training mask ``out[train_mask]``; Adam with weight decay on the
first layer only (two parameter groups); accuracy as ``int(correct) / int(mask.sum())`` under
``model.eval()`` and ``torch.no_grad()``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

DROPOUT = 0.5
LAYER = "gcn"  # or "sage"
DEVICE = "cpu"


def make_graph(num_nodes=14, num_edges=24, num_features=6, num_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = (src + rng.integers(1, num_nodes, num_edges)) % num_nodes  # no self-loops yet
    edge_index = torch.tensor(np.stack([src, dst]), dtype=torch.long)
    edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    edge_index = torch.unique(edge_index, dim=1)
    x = torch.tensor(rng.standard_normal((num_nodes, num_features)), dtype=torch.float)
    y = torch.tensor(rng.integers(0, num_classes, num_nodes))
    perm = torch.tensor(rng.permutation(num_nodes))
    train_mask = torch.zeros(num_nodes, dtype=torch.bool)
    train_mask[perm[: num_nodes // 2]] = True
    test_mask = ~train_mask
    return x, edge_index, y, train_mask, test_mask


def add_self_loops(edge_index, num_nodes):
    loop_index = torch.arange(num_nodes, dtype=torch.long, device=edge_index.device)
    loop_index = loop_index.unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop_index], dim=1)


def gcn_norm(edge_index, num_nodes):
    row, col = edge_index[0], edge_index[1]
    deg = torch.zeros(num_nodes, device=edge_index.device)
    deg.scatter_add_(0, col, torch.ones(col.size(0), device=edge_index.device))
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float("inf"), 0)
    return deg_inv_sqrt[row] * deg_inv_sqrt[col]


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.empty(out_channels))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, norm):
        x = self.lin(x)
        row, col = edge_index
        messages = x.index_select(0, row) * norm.view(-1, 1)
        out = torch.zeros_like(x).index_add_(0, col, messages)
        return out + self.bias


class SAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin_l = nn.Linear(in_channels, out_channels)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, norm=None):
        row, col = edge_index
        messages = x[row]
        index = col.unsqueeze(-1).expand_as(messages)
        summed = torch.zeros(x.size(0), x.size(1), device=x.device).scatter_add_(0, index, messages)
        count = torch.bincount(col, minlength=x.size(0)).clamp(min=1).unsqueeze(-1)
        return self.lin_l(summed / count) + self.lin_r(x)


class GNN(nn.Module):
    def __init__(self, num_features, hidden, num_classes):
        super().__init__()
        conv = GCNConv if LAYER == "gcn" else SAGEConv
        self.conv1 = conv(num_features, hidden)
        self.conv2 = conv(hidden, num_classes)

    def forward(self, x, edge_index, norm):
        x = F.dropout(x, p=DROPOUT, training=self.training)
        x = F.relu(self.conv1(x, edge_index, norm))
        x = F.dropout(x, p=DROPOUT, training=self.training)
        x = self.conv2(x, edge_index, norm)
        return F.log_softmax(x, dim=1)


def build():
    torch.manual_seed(12345)
    return GNN(6, 8, 3)


def train(model, steps=3):
    device = torch.device(DEVICE)
    x, edge_index, y, train_mask, test_mask = make_graph()
    x, y = x.to(device), y.to(device)
    train_mask, test_mask = train_mask.to(device), test_mask.to(device)
    edge_index = add_self_loops(edge_index, x.size(0)).to(device)
    norm = gcn_norm(edge_index, x.size(0))
    model = model.to(device)
    optimizer = optim.Adam(
        [
            dict(params=model.conv1.parameters(), weight_decay=5e-4),
            dict(params=model.conv2.parameters(), weight_decay=0),
        ],
        lr=0.01,
    )
    record = {"losses": [], "train_acc": [], "test_acc": []}
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index, norm)
        loss = F.nll_loss(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        record["losses"].append(float(loss))
        model.eval()
        with torch.no_grad():
            pred = model(x, edge_index, norm).argmax(dim=1)
            for name, mask in (("train_acc", train_mask), ("test_acc", test_mask)):
                correct = (pred[mask] == y[mask]).sum()
                record[name].append(int(correct) / int(mask.sum()))
    record["num_edges"] = int(edge_index.size(1))
    record["norm_sum"] = norm.sum().item()
    record["conv1_grad"] = [p.grad.abs().sum().item() for p in model.conv1.parameters()]
    return record


if __name__ == "__main__":
    print(train(build()))
