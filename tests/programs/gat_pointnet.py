"""A graph attention network over an edge list and a PointNet classifier with T-Nets, written as their
reference implementations (pyGAT, PyTorch Geometric's GATConv, fxia22/pointnet.pytorch) write them,
without any library, on synthetic graphs and point clouds.

GAT's idioms (``MODEL = "gat"``): per-head projections ``(x @ W).view(-1, heads, out)``, attention
logits from ``(h * att_src).sum(-1)`` gathered per edge with ``index_select``, ``nn.LeakyReLU(0.2)``, a
segment softmax over each node's incoming edges: the max by ``scatter_reduce(0, index, src, reduce="amax",
include_self=False)``, ``exp`` of the shifted logits, the denominator by ``scatter_add`` and the weighted
messages summed with ``index_add_``; ``F.dropout`` on the attention coefficients and the features,
``F.elu`` between layers, heads concatenated then averaged (``mean(dim=1)``); Adam with weight decay,
``F.nll_loss`` on ``log_softmax``.

PointNet's (``MODEL = "pointnet"``): ``Conv1d`` with kernel 1 over (B, 3, N) points, BatchNorm1d, the
global feature as ``torch.max(x, 2, keepdim=True)[0]`` then ``view(-1, 1024)``-style flattening; T-Nets
predicting a k x k matrix added to ``torch.eye(k).view(1, k * k).repeat(batchsize, 1)``, applied with
``torch.bmm(x.transpose(2, 1), trans).transpose(2, 1)``; the feature-transform regulariser
``torch.mean(torch.linalg.norm(torch.bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)))``;
``F.log_softmax`` + ``F.nll_loss``; ``pred.data.max(1)[1]`` and ``correct = pred_choice.eq(target.data)
.cpu().sum()``; Adam with ``betas=(0.9, 0.999)`` and a ``StepLR``."""

from __future__ import annotations

import numpy as np
from shim import F, lr_scheduler, nn, optim, torch

MODEL = "gat"  # or "pointnet"
DROPOUT = 0.6
DEVICE = "cpu"


# ---------------------------------------------------------------- GAT
class GATLayer(nn.Module):
    def __init__(self, in_features, out_features, heads, concat=True, dropout=0.6, alpha=0.2):
        super().__init__()
        self.heads, self.out_features, self.concat, self.dropout = heads, out_features, concat, dropout
        self.W = nn.Parameter(torch.empty(in_features, heads * out_features))
        self.att_src = nn.Parameter(torch.empty(1, heads, out_features))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_features))
        self.bias = nn.Parameter(torch.zeros(heads * out_features if concat else out_features))
        nn.init.xavier_uniform_(self.W.data, gain=1.414)
        nn.init.xavier_uniform_(self.att_src.data, gain=1.414)
        nn.init.xavier_uniform_(self.att_dst.data, gain=1.414)
        self.leakyrelu = nn.LeakyReLU(alpha)

    def forward(self, x, edge_index):
        src, dst = edge_index
        n = x.size(0)
        h = (x @ self.W).view(-1, self.heads, self.out_features)
        alpha_src = (h * self.att_src).sum(-1)
        alpha_dst = (h * self.att_dst).sum(-1)
        e = self.leakyrelu(alpha_src.index_select(0, src) + alpha_dst.index_select(0, dst))
        # softmax over the edges that end at each node
        index = dst.view(-1, 1).expand_as(e)
        e_max = torch.zeros(n, self.heads, device=x.device).scatter_reduce(
            0, index, e, reduce="amax", include_self=False
        )
        e = (e - e_max.index_select(0, dst)).exp()
        denom = torch.zeros(n, self.heads, device=x.device).scatter_add(0, index, e)
        attention = e / (denom.index_select(0, dst) + 1e-16)
        attention = F.dropout(attention, self.dropout, training=self.training)
        messages = h.index_select(0, src) * attention.unsqueeze(-1)
        out = torch.zeros_like(h).index_add_(0, dst, messages)
        if self.concat:
            out = out.view(n, self.heads * self.out_features)
        else:
            out = out.mean(dim=1)
        return out + self.bias


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, nheads):
        super().__init__()
        self.conv1 = GATLayer(nfeat, nhid, nheads, dropout=DROPOUT)
        self.conv2 = GATLayer(nhid * nheads, nclass, 1, concat=False, dropout=DROPOUT)

    def forward(self, x, edge_index):
        x = F.dropout(x, DROPOUT, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, DROPOUT, training=self.training)
        x = self.conv2(x, edge_index)
        return F.log_softmax(x, dim=1)


def make_graph(num_nodes=12, num_edges=26, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = (src + rng.integers(1, num_nodes, num_edges)) % num_nodes
    loops = np.arange(num_nodes)
    edge_index = torch.tensor(np.stack([np.concatenate([src, loops]), np.concatenate([dst, loops])]))
    x = torch.tensor(rng.standard_normal((num_nodes, 5)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 3, num_nodes))
    return x, edge_index, y


# ---------------------------------------------------------------- PointNet
class STNkd(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.conv1 = nn.Conv1d(k, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, k * k)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(16)
        self.k = k

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 32)
        x = F.relu(self.bn3(self.fc1(x)))
        x = self.fc2(x)
        iden = torch.eye(self.k, device=x.device).view(1, self.k * self.k).repeat(batchsize, 1)
        x = x + iden
        return x.view(-1, self.k, self.k)


class PointNetCls(nn.Module):
    def __init__(self, k=3, feature_transform=True):
        super().__init__()
        self.stn = STNkd(3)
        self.conv1 = nn.Conv1d(3, 8, 1)
        self.conv2 = nn.Conv1d(8, 16, 1)
        self.bn1 = nn.BatchNorm1d(8)
        self.bn2 = nn.BatchNorm1d(16)
        self.feature_transform = feature_transform
        if feature_transform:
            self.fstn = STNkd(k=8)
        self.fc1 = nn.Linear(16, 8)
        self.fc2 = nn.Linear(8, k)
        self.dropout = nn.Dropout(p=DROPOUT)
        self.bn3 = nn.BatchNorm1d(8)

    def forward(self, x):
        n_pts = x.size()[2]
        trans = self.stn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans)
        x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        trans_feat = None
        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = torch.bmm(x.transpose(2, 1), trans_feat).transpose(2, 1)
        x = self.bn2(self.conv2(x))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 16)
        assert n_pts > 1
        x = F.relu(self.bn3(self.dropout(self.fc1(x))))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1), trans, trans_feat


def feature_transform_regularizer(trans):
    d = trans.size()[1]
    I = torch.eye(d, device=trans.device)[None, :, :]  # noqa: E741  (the reference's name)
    return torch.mean(torch.linalg.norm(torch.bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)))


def make_points(seed=0, batch=6, n_pts=10):
    """Three classes of clouds: points on a line, on a plane, in a ball."""
    rng = np.random.default_rng(seed)
    clouds, labels = [], []
    for i in range(batch):
        c = i % 3
        p = rng.standard_normal((n_pts, 3))
        if c == 0:
            p[:, 1:] *= 0.05
        elif c == 1:
            p[:, 2] *= 0.05
        clouds.append(p.T)
        labels.append(c)
    return torch.tensor(np.stack(clouds).astype(np.float32)), torch.tensor(labels)


def build():
    torch.manual_seed(5)
    if MODEL == "pointnet":
        return PointNetCls(k=3, feature_transform=True)
    return GAT(5, 4, 3, nheads=2)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    record = {"losses": []}
    if MODEL == "pointnet":
        points, target = make_points()
        points, target = points.to(device), target.to(device)
        # SGD, not the reference's Adam: the conv biases ahead of BatchNorm get gradients of pure
        # rounding noise, which Adam's first step would turn into full-size updates of either sign
        optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        record["correct"] = []
        for _ in range(steps):
            optimizer.zero_grad()
            model = model.train()
            pred, trans, trans_feat = model(points)
            loss = F.nll_loss(pred, target)
            loss = loss + feature_transform_regularizer(trans_feat) * 0.001
            loss.backward()
            optimizer.step()
            scheduler.step()
            pred_choice = pred.data.max(1)[1]
            correct = pred_choice.eq(target.data).cpu().sum()
            record["losses"].append(loss.item())
            record["correct"].append(correct.item())
        model = model.eval()
        with torch.no_grad():
            pred, trans, _ = model(points)
        record["eval_logp"] = pred.sum().item()
        record["trans"] = trans.sum().item()
        record["stn_grad"] = model.stn.fc2.weight.grad.abs().sum().item()
        return record
    x, edge_index, y = make_graph()
    x, edge_index, y = x.to(device), edge_index.to(device), y.to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    record["acc"] = []
    for _ in range(steps):
        model.train()
        optimizer.zero_grad()
        output = model(x, edge_index)
        loss = F.nll_loss(output, y)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        model.eval()
        with torch.no_grad():
            preds = model(x, edge_index).max(1)[1].type_as(y)
            record["acc"].append(preds.eq(y).double().sum().item() / len(y))
    record["att_grad"] = model.conv1.att_src.grad.abs().sum().item()
    return record


if __name__ == "__main__":
    print(train(build()))
