"""Graph classification with message passing written by hand: GIN, EdgeConv (DGCNN), GraphSAGE with a
chosen ``scatter_reduce`` aggregation, and a GCN over a sparse adjacency matrix.

Written as PyTorch Geometric's layers and the papers' reference code write them, without the library:
a mini-batch of small graphs concatenated with their ``edge_index`` shifted by ``cumsum`` node counts and
a ``batch`` vector built by ``torch.repeat_interleave``; GIN's ``(1 + eps) * x + sum of neighbours`` with a
learnable ``eps`` and the sum by ``index_add_``, an MLP with ``BatchNorm1d``, a sum readout per graph
by ``scatter_add_`` over ``batch`` expanded with ``unsqueeze(-1).expand_as``; EdgeConv's k-NN graph in
feature space by ``torch.cdist`` and ``topk(k + 1, largest=False)`` (dropping the node itself),
messages ``cat([x_i, x_j - x_i])`` max-aggregated by ``scatter_reduce(0, index, msg, reduce="amax",
include_self=False)``; GraphSAGE's aggregation ``reduce=AGGR`` ("sum", "mean", "amax", "amin" or "prod",
``include_self=False``) into ``x.new_zeros``; the GCN's normalised adjacency ``torch.sparse_coo_tensor``
of ``deg[row].pow(-0.5) * deg[col].pow(-0.5)`` with the degrees by ``torch.bincount`` and the infinities
zeroed by ``masked_fill_(torch.isinf(...), 0)``, propagated with ``torch.sparse.mm``; a mean readout by
``index_add_`` over ``batch`` divided by ``bincount``; PageRank by power iteration with ``torch.mv`` over a
sparse transition matrix; ``F.cross_entropy``, Adam with a ``StepLR``,
``clip_grad_norm_``, accuracy under ``torch.no_grad()``."""

from __future__ import annotations

import numpy as np
from shim import F, lr_scheduler, nn, optim, torch

MODEL = "gin"  # or "edgeconv", "sage", "gcn"
AGGR = "mean"  # GraphSAGE's reduce: "sum", "mean", "amax", "amin", "prod"
DEVICE = "cpu"
NUM_FEATURES = 5
HIDDEN = 8
NUM_CLASSES = 2


def make_dataset(num_graphs=6, seed=0):
    """Small random graphs; a graph's class is whether its first feature's mean is positive."""
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(num_graphs):
        n = int(rng.integers(4, 8))
        src = rng.integers(0, n, 2 * n)
        dst = (src + rng.integers(1, n, 2 * n)) % n
        edge_index = torch.tensor(np.stack([src, dst]), dtype=torch.long)
        edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
        x = torch.tensor(rng.standard_normal((n, NUM_FEATURES)), dtype=torch.float32)
        y = int(x[:, 0].mean() > 0)
        graphs.append((x, edge_index, y))
    return graphs


def collate(graphs):
    """PyG's Batch.from_data_list by hand: node features stacked, edge indices shifted per graph."""
    xs, edges, ys = zip(*graphs, strict=True)
    sizes = torch.tensor([x.size(0) for x in xs])
    offsets = torch.cumsum(sizes, 0) - sizes
    edge_index = torch.cat([e + int(off) for e, off in zip(edges, offsets, strict=True)], dim=1)
    batch = torch.repeat_interleave(torch.arange(len(xs)), sizes)
    return torch.cat(xs, dim=0), edge_index, batch, torch.tensor(ys)


def pagerank(edge_index, num_nodes, alpha=0.85, iters=20):
    """Power iteration over the column-stochastic transition matrix, a sparse COO tensor, by ``torch.mv``."""
    row, col = edge_index
    out_degree = torch.bincount(row, minlength=num_nodes).float().clamp(min=1)
    transition = torch.sparse_coo_tensor(torch.stack([col, row]), 1.0 / out_degree[row], (num_nodes, num_nodes))
    rank = torch.full((num_nodes,), 1.0 / num_nodes)
    for _ in range(iters):
        rank = (1 - alpha) / num_nodes + alpha * torch.mv(transition, rank)
    return rank


def global_add_pool(x, batch, num_graphs):
    out = torch.zeros(num_graphs, x.size(-1), device=x.device, dtype=x.dtype)
    return out.scatter_add_(0, batch.unsqueeze(-1).expand_as(x), x)


def global_mean_pool(x, batch, num_graphs):
    out = torch.zeros(num_graphs, x.size(-1), device=x.device).index_add_(0, batch, x)
    count = torch.bincount(batch, minlength=num_graphs).clamp(min=1).to(x.dtype)
    return out / count.unsqueeze(-1)


class GINConv(nn.Module):
    def __init__(self, in_channels, out_channels, train_eps=True):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(in_channels, out_channels),
            nn.BatchNorm1d(out_channels),
            nn.ReLU(),
            nn.Linear(out_channels, out_channels),
        )
        self.eps = nn.Parameter(torch.zeros(1)) if train_eps else 0.0

    def forward(self, x, edge_index):
        row, col = edge_index
        aggr = torch.zeros_like(x).index_add_(0, col, x[row])
        return self.mlp((1 + self.eps) * x + aggr)


def knn_graph(x, k, batch):
    """k nearest neighbours in feature space, within each graph (PyG's knn_graph, flow source_to_target)."""
    dist = torch.cdist(x, x)
    same_graph = batch.unsqueeze(0) == batch.unsqueeze(1)
    dist = dist.masked_fill(~same_graph, float("inf"))
    _, nbr = dist.topk(k + 1, dim=-1, largest=False)
    nbr = nbr[:, 1:]  # the nearest is the node itself
    col = torch.arange(x.size(0), device=x.device).view(-1, 1).repeat(1, k)
    return torch.stack([nbr.reshape(-1), col.reshape(-1)], dim=0)


class EdgeConv(nn.Module):
    def __init__(self, in_channels, out_channels, k=3):
        super().__init__()
        self.k = k
        self.nn = nn.Sequential(
            nn.Linear(2 * in_channels, out_channels), nn.ReLU(), nn.Linear(out_channels, out_channels)
        )

    def forward(self, x, batch):
        row, col = knn_graph(x.detach(), self.k, batch)  # the graph is rebuilt from the current features
        x_i, x_j = x[col], x[row]
        msg = self.nn(torch.cat([x_i, x_j - x_i], dim=-1))
        index = col.unsqueeze(-1).expand_as(msg)
        out = x.new_zeros(x.size(0), msg.size(-1))
        return out.scatter_reduce(0, index, msg, reduce="amax", include_self=False)


class SAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, aggr="mean"):
        super().__init__()
        self.aggr = aggr
        self.lin_l = nn.Linear(in_channels, out_channels)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index):
        row, col = edge_index
        msg = x[row]
        index = col.view(-1, 1).expand(-1, x.size(1))
        aggr = x.new_zeros(x.shape).scatter_reduce(0, index, msg, reduce=self.aggr, include_self=False)
        return self.lin_l(aggr) + self.lin_r(x)


def normalized_adjacency(edge_index, num_nodes):
    """D^-1/2 (A + I) D^-1/2 as a sparse COO matrix."""
    loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
    edge_index = torch.cat([edge_index, loops], dim=1)
    row, col = edge_index
    deg = torch.bincount(row, minlength=num_nodes).float()
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt.masked_fill_(torch.isinf(deg_inv_sqrt), 0)
    values = deg_inv_sqrt[row] * deg_inv_sqrt[col]
    return torch.sparse_coo_tensor(edge_index, values, (num_nodes, num_nodes)).coalesce()


class SparseGCNLayer(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = nn.Parameter(torch.FloatTensor(out_features))
        stdv = 1.0 / np.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, x, adj):
        support = torch.mm(x, self.weight)
        return torch.sparse.mm(adj, support) + self.bias


class GraphClassifier(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        if model == "gin":
            self.convs = nn.ModuleList([GINConv(NUM_FEATURES, HIDDEN), GINConv(HIDDEN, HIDDEN)])
        elif model == "edgeconv":
            self.convs = nn.ModuleList([EdgeConv(NUM_FEATURES, HIDDEN), EdgeConv(HIDDEN, HIDDEN)])
        elif model == "sage":
            self.convs = nn.ModuleList([SAGEConv(NUM_FEATURES, HIDDEN, AGGR), SAGEConv(HIDDEN, HIDDEN, AGGR)])
        else:
            self.convs = nn.ModuleList([SparseGCNLayer(NUM_FEATURES, HIDDEN), SparseGCNLayer(HIDDEN, HIDDEN)])
        self.classifier = nn.Linear(HIDDEN, NUM_CLASSES)

    def forward(self, x, edge_index, batch, num_graphs):
        adj = normalized_adjacency(edge_index, x.size(0)) if self.model == "gcn" else None
        for conv in self.convs:
            if self.model == "edgeconv":
                x = conv(x, batch)
            elif self.model == "gcn":
                x = conv(x, adj)
            else:
                x = conv(x, edge_index)
            x = F.relu(x)
        pool = global_add_pool if self.model == "gin" else global_mean_pool
        return self.classifier(pool(x, batch, num_graphs))


def build():
    torch.manual_seed(0)
    return GraphClassifier(MODEL)


def train(model, steps=3):
    device = torch.device(DEVICE)
    x, edge_index, batch, y = collate(make_dataset())
    x, edge_index, batch, y = x.to(device), edge_index.to(device), batch.to(device), y.to(device)
    num_graphs = int(batch.max()) + 1
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    record = {"losses": [], "acc": []}
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index, batch, num_graphs)
        loss = F.cross_entropy(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(x, edge_index, batch, num_graphs).argmax(dim=-1)
            record["acc"].append((pred == y).sum().item() / y.size(0))
    record["grad_norms"] = [p.grad.norm().item() for p in model.parameters()]
    top = pagerank(edge_index, x.size(0)).topk(3)
    record["pagerank_top"] = [top.values.tolist(), top.indices.tolist()]
    return record


if __name__ == "__main__":
    print(train(build()))
