"""Dive into Deep Learning's recommender systems (the book's MXNet code, written with PyTorch's names as
its readers port it) and generative adversarial networks (PyTorch edition) at tiny sizes on synthetic data:
matrix factorization, AutoRec, NeuMF with the BPR and hinge losses and hit rate / AUC evaluation, a
factorization machine, the two-dimensional GAN and a DCGAN.

Its idioms: ``MF``'s ``nn.Embedding`` factors and biases, ``(P_u * Q_i).sum(axis=1) + torch.squeeze(b_u) +
torch.squeeze(b_i)`` and ``outputs.flatten()``, trained with ``nn.MSELoss()`` and evaluated by
``torch.sqrt(...)`` RMSE; ``AutoRec``'s ``pred * torch.sign(input)`` in training only; ``NeuMF``'s
``torch.cat([p_mlp, q_mlp], axis=1)``, ``self.prediction_layer(torch.cat([gmf, mlp], axis=1))``; the BPR loss
``-torch.sum(torch.log(torch.sigmoid(positive - negative)))`` and the hinge ``torch.sum(torch.clamp(margin -
positive + negative, min=0))``; ``hit_and_auc`` over ``sorted`` scores; the factorization machine's
``square_of_sum = torch.sum(input_x, dim=1) ** 2`` and ``0.5 * (square_of_sum - sum_of_square).sum(1,
keepdims=True)``; the GAN's ``torch.matmul(X, A) + b`` data, ``nn.BCEWithLogitsLoss(reduction='sum')``,
``update_D``'s ``fake_Y = net_D(fake_X.detach())`` and ``ones.reshape(real_Y.shape)``, ``update_G``, ``for w in
net_D.parameters(): nn.init.normal_(w, 0, 0.02)``, ``torch.normal(0, 1, size=(batch_size, latent_dim))`` and
``net_G(Z).detach().numpy()``; DCGAN's ``G_block`` (``nn.ConvTranspose2d``, ``nn.BatchNorm2d``, ``nn.ReLU``)
and ``D_block`` (``nn.LeakyReLU(alpha, inplace=True)``), ``torch.normal(0, 1, size=(batch_size, latent_dim, 1,
1))`` and Adam with ``'betas': [beta1, 0.999]``."""

from __future__ import annotations

import random

from shim import nn, torch

data = torch.utils.data  # from torch.utils import data

MODEL = "mf"  # or "autorec", "neumf", "fm", "gan", "dcgan"
SHUFFLE = True
DROPOUT = 0.05
num_users, num_items = 12, 10


def read_data_ml100k():
    """A synthetic MovieLens: users and items with two latent tastes, ratings 1-5, by Python's random."""
    rng = random.Random(0)
    taste_u = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(num_users)]
    taste_i = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(num_items)]
    rows = []
    for u in range(num_users):
        for i in rng.sample(range(num_items), 6):
            score = 3 + 2 * (taste_u[u][0] * taste_i[i][0] + taste_u[u][1] * taste_i[i][1])
            rows.append((u, i, min(5, max(1, round(score))), rng.randrange(1000)))
    return rows


def split_and_load_ml100k(batch_size=16):
    rows = read_data_ml100k()
    train_rows = [r for k, r in enumerate(rows) if k % 4]
    test_rows = [r for k, r in enumerate(rows) if not k % 4]

    def arrays(rs):
        users = torch.tensor([r[0] for r in rs])
        items = torch.tensor([r[1] for r in rs])
        ratings = torch.tensor([r[2] for r in rs], dtype=torch.float32)
        return users, items, ratings

    train_set = data.TensorDataset(*arrays(train_rows))
    test_set = data.TensorDataset(*arrays(test_rows))
    inter = torch.zeros((num_items, num_users))
    for u, i, r, _ in train_rows:
        inter[i, u] = r
    return (data.DataLoader(train_set, batch_size, shuffle=SHUFFLE), data.DataLoader(test_set, batch_size),
            inter, train_rows, test_rows)  # fmt: skip


class MF(nn.Module):
    def __init__(self, num_factors, num_users, num_items, **kwargs):
        super().__init__(**kwargs)
        self.P = nn.Embedding(num_embeddings=num_users, embedding_dim=num_factors)
        self.Q = nn.Embedding(num_embeddings=num_items, embedding_dim=num_factors)
        self.user_bias = nn.Embedding(num_users, 1)
        self.item_bias = nn.Embedding(num_items, 1)

    def forward(self, user_id, item_id):
        P_u = self.P(user_id)
        Q_i = self.Q(item_id)
        b_u = self.user_bias(user_id)
        b_i = self.item_bias(item_id)
        outputs = (P_u * Q_i).sum(axis=1) + torch.squeeze(b_u) + torch.squeeze(b_i)
        return outputs.flatten()


class AutoRec(nn.Module):
    def __init__(self, num_hidden, num_users, dropout=0.05):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(num_users, num_hidden), nn.Sigmoid())
        self.decoder = nn.Linear(num_hidden, num_users)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input):
        hidden = self.dropout(self.encoder(input))
        pred = self.decoder(hidden)
        if self.training:  # Mask the gradient during training
            return pred * torch.sign(input)
        else:
            return pred


class NeuMF(nn.Module):
    def __init__(self, num_factors, num_users, num_items, nums_hiddens, **kwargs):
        super().__init__(**kwargs)
        self.P = nn.Embedding(num_users, num_factors)
        self.Q = nn.Embedding(num_items, num_factors)
        self.U = nn.Embedding(num_users, num_factors)
        self.V = nn.Embedding(num_items, num_factors)
        layers = []
        in_features = 2 * num_factors
        for num_hiddens in nums_hiddens:
            layers += [nn.Linear(in_features, num_hiddens, bias=True), nn.ReLU()]
            in_features = num_hiddens
        self.mlp = nn.Sequential(*layers)
        self.prediction_layer = nn.Linear(num_factors + in_features, 1, bias=False)

    def forward(self, user_id, item_id):
        p_mf = self.P(user_id)
        q_mf = self.Q(item_id)
        gmf = p_mf * q_mf
        p_mlp = self.U(user_id)
        q_mlp = self.V(item_id)
        mlp = self.mlp(torch.cat([p_mlp, q_mlp], axis=1))
        con_res = torch.cat([gmf, mlp], axis=1)
        return torch.sigmoid(self.prediction_layer(con_res))


class BPRLoss(nn.Module):
    def forward(self, positive, negative):
        distances = positive - negative
        loss = -torch.sum(torch.log(torch.sigmoid(distances)))
        return loss


class HingeLossbRec(nn.Module):
    def forward(self, positive, negative, margin=1):
        distances = positive - negative
        loss = torch.sum(torch.clamp(margin - distances, min=0))
        return loss


class FM(nn.Module):
    def __init__(self, field_dims, num_factors):
        super().__init__()
        num_inputs = int(sum(field_dims))
        self.embedding = nn.Embedding(num_inputs, num_factors)
        self.fc = nn.Embedding(num_inputs, 1)
        self.linear_layer = nn.Linear(1, 1, bias=True)

    def forward(self, x):
        square_of_sum = torch.sum(self.embedding(x), dim=1) ** 2
        sum_of_square = torch.sum(self.embedding(x) ** 2, dim=1)
        x = self.linear_layer(self.fc(x).sum(1)) + 0.5 * (square_of_sum - sum_of_square).sum(1, keepdims=True)
        x = torch.sigmoid(x)
        return x


def hit_and_auc(rankedlist, test_matrix, k):
    hits_k = [(idx, val) for idx, val in enumerate(rankedlist[:k]) if val in set(test_matrix)]
    hits_all = [(idx, val) for idx, val in enumerate(rankedlist) if val in set(test_matrix)]
    max = len(rankedlist) - 1  # noqa: A001  (the book's name)
    auc = 1.0 * (max - hits_all[0][0]) / max if len(hits_all) > 0 else 0
    return len(hits_k), auc


def evaluate_ranking(net, test_input, candidates, num_users, num_items):
    ranked_list, ranked_items, hit_rate, auc = {}, {}, [], []
    all_items = set(range(num_items))
    for u in range(num_users):
        neg_items = list(all_items - set(candidates[int(u)]))
        user_ids, item_ids, scores = [], [], []
        [item_ids.append(i) for i in neg_items]
        [user_ids.append(u) for _ in neg_items]
        x = [torch.tensor(user_ids), torch.tensor(item_ids)]
        scores = net(*x).reshape(-1)
        item_scores = list(zip(item_ids, [float(s) for s in scores], strict=False))
        ranked_list[u] = sorted(item_scores, key=lambda t: t[1], reverse=True)
        ranked_items[u] = [r[0] for r in ranked_list[u]]
        temp = hit_and_auc(ranked_items[u], test_input[u], 3)
        hit_rate.append(temp[0])
        auc.append(temp[1])
    return sum(hit_rate) / len(hit_rate), sum(auc) / len(auc)


# ---- GANs ----

latent_dim = 2


def update_D(X, Z, net_D, net_G, loss, trainer_D):
    """Update discriminator."""
    batch_size = X.shape[0]
    ones = torch.ones((batch_size,), device=X.device)
    zeros = torch.zeros((batch_size,), device=X.device)
    trainer_D.zero_grad()
    real_Y = net_D(X)
    fake_X = net_G(Z)
    # Do not need to compute gradient for `net_G`, detach it from computing gradients.
    fake_Y = net_D(fake_X.detach())
    loss_D = (loss(real_Y, ones.reshape(real_Y.shape)) + loss(fake_Y, zeros.reshape(fake_Y.shape))) / 2
    loss_D.backward()
    trainer_D.step()
    return loss_D


def update_G(Z, net_D, net_G, loss, trainer_G):
    """Update generator."""
    batch_size = Z.shape[0]
    ones = torch.ones((batch_size,), device=Z.device)
    trainer_G.zero_grad()
    # We could reuse `fake_X` from `update_D` to save computation
    fake_X = net_G(Z)
    # Recomputing `fake_Y` is needed since `net_D` is changed
    fake_Y = net_D(fake_X)
    loss_G = loss(fake_Y, ones.reshape(fake_Y.shape))
    loss_G.backward()
    trainer_G.step()
    return loss_G


class G_block(nn.Module):
    def __init__(self, out_channels, in_channels=3, kernel_size=4, strides=2, padding=1, **kwargs):
        super().__init__(**kwargs)
        self.conv2d_trans = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, strides, padding, bias=False)
        self.batch_norm = nn.BatchNorm2d(out_channels)
        self.activation = nn.ReLU()

    def forward(self, X):
        return self.activation(self.batch_norm(self.conv2d_trans(X)))


class D_block(nn.Module):
    def __init__(self, out_channels, in_channels=3, kernel_size=4, strides=2, padding=1, alpha=0.2, **kwargs):
        super().__init__(**kwargs)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, strides, padding, bias=False)
        self.batch_norm = nn.BatchNorm2d(out_channels)
        self.activation = nn.LeakyReLU(alpha, inplace=True)

    def forward(self, X):
        return self.activation(self.batch_norm(self.conv2d(X)))


def build_gan():
    if MODEL == "gan":
        net_G = nn.Sequential(nn.Linear(2, 2))
        net_D = nn.Sequential(nn.Linear(2, 5), nn.Tanh(), nn.Linear(5, 3), nn.Tanh(), nn.Linear(3, 1))
        return nn.ModuleDict({"G": net_G, "D": net_D})
    n_G, n_D = 8, 8
    net_G = nn.Sequential(
        G_block(in_channels=latent_dim * 8, out_channels=n_G * 2, strides=1, padding=0),  # Output: (16, 4, 4)
        G_block(in_channels=n_G * 2, out_channels=n_G),  # Output: (8, 8, 8)
        nn.ConvTranspose2d(in_channels=n_G, out_channels=3, kernel_size=4, stride=2, padding=1, bias=False),
        nn.Tanh(),
    )  # Output: (3, 16, 16)
    net_D = nn.Sequential(
        D_block(n_D),  # Output: (8, 8, 8)
        D_block(in_channels=n_D, out_channels=n_D * 2),  # Output: (16, 4, 4)
        nn.Conv2d(in_channels=n_D * 2, out_channels=1, kernel_size=4, bias=False),
    )  # Output: (1, 1, 1)
    return nn.ModuleDict({"G": net_G, "D": net_D})


def train_gan(nets, steps, record):
    net_D, net_G = nets["D"], nets["G"]
    loss = nn.BCEWithLogitsLoss(reduction="sum")
    for w in net_D.parameters():
        nn.init.normal_(w, 0, 0.02)
    for w in net_G.parameters():
        nn.init.normal_(w, 0, 0.02)
    if MODEL == "gan":
        X = torch.normal(0.0, 1, (64, 2))
        A = torch.tensor([[1, 2], [-0.1, 0.5]])
        b = torch.tensor([1, 2])
        data_set = torch.matmul(X, A) + b
        batch_size, lr_D, lr_G, dim = 8, 0.05, 0.005, 2
        data_iter = data.DataLoader(data.TensorDataset(data_set), batch_size, shuffle=SHUFFLE)
        trainer_D = torch.optim.Adam(net_D.parameters(), lr=lr_D)
        trainer_G = torch.optim.Adam(net_G.parameters(), lr=lr_G)
        record["data"] = [float(data_set.mean()), A.T.tolist()]
    else:
        images = torch.rand((32, 3, 16, 16), generator=torch.Generator().manual_seed(5)) * 2 - 1
        batch_size, lr, beta1, dim = 8, 0.005, 0.5, latent_dim * 8
        data_iter = data.DataLoader(data.TensorDataset(images), batch_size, shuffle=SHUFFLE)
        trainer_hp = {"lr": lr, "betas": [beta1, 0.999]}
        trainer_D = torch.optim.Adam(net_D.parameters(), **trainer_hp)
        trainer_G = torch.optim.Adam(net_G.parameters(), **trainer_hp)
    record["losses"], record["loss_G"] = [], []
    for _ in range(steps):
        # Train one epoch
        metric = [0.0, 0.0, 0]  # loss_D, loss_G, num_examples
        for (X,) in data_iter:
            batch_size = X.shape[0]
            Z = torch.normal(0, 1, size=(batch_size, dim) if MODEL == "gan" else (batch_size, dim, 1, 1))
            metric[0] += float(update_D(X, Z, net_D, net_G, loss, trainer_D))
            metric[1] += float(update_G(Z, net_D, net_G, loss, trainer_G))
            metric[2] += batch_size
        record["losses"].append(metric[0] / metric[2])
        record["loss_G"].append(metric[1] / metric[2])
    Z = torch.normal(0, 1, size=(4, dim) if MODEL == "gan" else (2, dim, 1, 1))
    fake_X = net_G(Z).detach().numpy()
    record["fake"] = fake_X.reshape(-1)[:12].tolist()
    if MODEL == "dcgan":
        record["block"] = [list(G_block(20)(torch.zeros((2, 3, 16, 16))).shape),
                           list(D_block(20)(torch.zeros((2, 3, 16, 16))).shape)]  # fmt: skip
    return record


def build():
    torch.manual_seed(0)
    if MODEL in ("gan", "dcgan"):
        return build_gan()
    if MODEL == "mf":
        return MF(4, num_users, num_items)
    if MODEL == "autorec":
        return AutoRec(8, num_users, dropout=DROPOUT)
    if MODEL == "neumf":
        return NeuMF(4, num_users, num_items, nums_hiddens=[8, 8])
    return FM([num_users, num_items], 4)


def train(net, steps=3):
    torch.manual_seed(1)
    record = {}
    if MODEL in ("gan", "dcgan"):
        return train_gan(net, steps, record)
    train_iter, test_iter, inter, train_rows, test_rows = split_and_load_ml100k()
    record["losses"], record["metric"] = [], []
    if MODEL in ("mf", "fm"):
        loss = nn.MSELoss() if MODEL == "mf" else nn.BCELoss()
        trainer = torch.optim.Adam(net.parameters(), lr=0.02, weight_decay=1e-5)
        for _ in range(steps):
            net.train()
            total = 0.0
            for users, items, ratings in train_iter:
                trainer.zero_grad()
                if MODEL == "mf":
                    preds = net(users, items)
                    l = loss(preds, ratings)  # noqa: E741  (the book's name)
                else:  # click-through: a rating of 4 or more is a click; the fields are user and item offsets
                    x = torch.stack([users, items + num_users], dim=1)
                    l = loss(net(x).reshape(-1), (ratings >= 4).float())  # noqa: E741
                l.backward()
                trainer.step()
                total += l.item()
            record["losses"].append(total)
            net.eval()
            with torch.no_grad():
                if MODEL == "mf":
                    rmse = [torch.sqrt(((net(u, i) - r) ** 2).mean()).item() for u, i, r in test_iter]
                    record["metric"].append(rmse)
                else:
                    accs = [float(((net(torch.stack([u, i + num_users], 1)).reshape(-1) > 0.5) == (r >= 4)).float().mean())
                            for u, i, r in test_iter]  # fmt: skip
                    record["metric"].append(accs)
        return record
    if MODEL == "autorec":
        loss = nn.MSELoss()
        trainer = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=1e-5)
        rows = data.DataLoader(data.TensorDataset(inter), 4, shuffle=SHUFFLE)
        for _ in range(steps):
            net.train()
            total = 0.0
            for (X,) in rows:
                trainer.zero_grad()
                l = loss(net(X), X)  # noqa: E741  (the book's name)
                l.backward()
                trainer.step()
                total += l.item()
            record["losses"].append(total)
            net.eval()
            with torch.no_grad():
                scores = net(inter)
                test_u = torch.tensor([r[0] for r in test_rows])
                test_i = torch.tensor([r[1] for r in test_rows])
                test_r = torch.tensor([r[2] for r in test_rows], dtype=torch.float32)
                pred = torch.clamp(scores[test_i, test_u], 1, 5)
                record["metric"].append(torch.sqrt(torch.mean(torch.square(test_r - pred))).item())
        return record
    # NeuMF: implicit feedback with negative sampling, BPR or hinge loss
    candidates = {u: [r[1] for r in train_rows if r[0] == u] for u in range(num_users)}
    test_input = {u: [r[1] for r in test_rows if r[0] == u] for u in range(num_users)}
    bpr, hinge = BPRLoss(), HingeLossbRec()
    trainer = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=1e-5)
    rng = random.Random(2)
    for step in range(steps):
        net.train()
        users, pos, neg = [], [], []
        for u, i, _, _ in train_rows:
            users.append(u)
            pos.append(i)
            neg.append(rng.choice([j for j in range(num_items) if j not in candidates[u]]))
        users, pos, neg = torch.tensor(users), torch.tensor(pos), torch.tensor(neg)
        total = 0.0
        for k in range(0, len(users), 16):
            trainer.zero_grad()
            p_pos = net(users[k : k + 16], pos[k : k + 16])
            p_neg = net(users[k : k + 16], neg[k : k + 16])
            l = bpr(p_pos, p_neg) if step % 2 == 0 else hinge(p_pos, p_neg)  # noqa: E741
            l.backward()
            trainer.step()
            total += l.item()
        record["losses"].append(total)
        net.eval()
        with torch.no_grad():
            record["metric"].append(list(evaluate_ranking(net, test_input, candidates, num_users, num_items)))
    return record


if __name__ == "__main__":
    print(train(build()))
