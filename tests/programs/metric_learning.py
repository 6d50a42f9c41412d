"""Deep metric learning as face-recognition and re-identification repositories write it (omoindrot's
batch-hard triplet loss ported to PyTorch, ronghuaiyang/arcface-pytorch's ArcMarginProduct, the
pytorch-metric-learning losses by hand), at a tiny size on synthetic identities.

Its idioms: ``_pairwise_distances`` by ``dot_product = embeddings @ embeddings.t()``, ``torch.diag``,
``distances[distances < 0] = 0``, ``mask = distances.eq(0).float()`` and ``(1.0 - mask) *
torch.sqrt(distances + mask * 1e-16)``; masks from ``labels.unsqueeze(0) == labels.unsqueeze(1)`` and
``~torch.eye(n, dtype=torch.bool)``; batch-hard mining by ``max(1, keepdim=True)`` of masked distances
and ``min`` after ``+ max_anchor_negative_dist * (1.0 - mask)``; ``nn.TripletMarginLoss(margin, p=2)``
over mined triplets picked by ``argmax``/``argmin`` and advanced indexing, or
``nn.TripletMarginWithDistanceLoss(distance_function=lambda x, y: 1.0 - F.cosine_similarity(x, y))``;
``F.normalize`` embeddings; ArcFace's ``F.linear(F.normalize(input), F.normalize(self.weight))``,
``torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))``, ``torch.where(cosine > self.th, phi, cosine -
self.mm)``, a one-hot by ``torch.zeros(cosine.size()).scatter_(1, label.view(-1, 1).long(), 1)`` and
``(one_hot * phi) + ((1.0 - one_hot) * cosine)`` scaled by ``s``; a contrastive pair loss with
``nn.CosineEmbeddingLoss`` and ``nn.MarginRankingLoss``; an ``nn.Bilinear`` verification head;
``nn.PReLU``; SGD with ``weight_decay`` over two parameter groups; and retrieval recall@1 by
``torch.cdist`` with the diagonal set to ``float("inf")`` by ``fill_diagonal_``.
"""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

LOSS = "batch_hard"  # or "arcface", "cosine_triplet"
N_IDS, PER_ID, DIM = 4, 3, 6


def _pairwise_distances(embeddings, squared=False):
    """Compute the 2D matrix of distances between all the embeddings."""
    dot_product = torch.matmul(embeddings, embeddings.t())
    square_norm = torch.diag(dot_product)
    distances = square_norm.unsqueeze(0) - 2.0 * dot_product + square_norm.unsqueeze(1)
    distances[distances < 0] = 0
    if not squared:
        # Because the gradient of sqrt is infinite when distances == 0.0 (ex: on the diagonal)
        # we need to add a small epsilon where distances == 0.0
        mask = distances.eq(0).float()
        distances = distances + mask * 1e-16
        distances = (1.0 - mask) * torch.sqrt(distances)
    return distances


def _get_anchor_positive_triplet_mask(labels):
    indices_equal = torch.eye(labels.size(0), dtype=torch.bool, device=labels.device)
    indices_not_equal = ~indices_equal
    labels_equal = labels.unsqueeze(0) == labels.unsqueeze(1)
    return labels_equal & indices_not_equal


def _get_anchor_negative_triplet_mask(labels):
    return ~(labels.unsqueeze(0) == labels.unsqueeze(1))


def batch_hard_triplet_loss(labels, embeddings, margin, squared=False):
    pairwise_dist = _pairwise_distances(embeddings, squared=squared)
    mask_anchor_positive = _get_anchor_positive_triplet_mask(labels).float()
    anchor_positive_dist = mask_anchor_positive * pairwise_dist
    hardest_positive_dist, _ = anchor_positive_dist.max(1, keepdim=True)
    mask_anchor_negative = _get_anchor_negative_triplet_mask(labels).float()
    max_anchor_negative_dist, _ = pairwise_dist.max(1, keepdim=True)
    anchor_negative_dist = pairwise_dist + max_anchor_negative_dist * (1.0 - mask_anchor_negative)
    hardest_negative_dist, _ = anchor_negative_dist.min(1, keepdim=True)
    tl = hardest_positive_dist - hardest_negative_dist + margin
    tl[tl < 0] = 0
    triplet_loss = tl.mean()
    return triplet_loss


class ArcMarginProduct(nn.Module):
    r"""Implement of large margin arc distance: :
    Args:
        in_features: size of each input sample
        out_features: size of each output sample
        s: norm of input feature
        m: margin
        cos(theta + m)
    """

    def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False):
        super(ArcMarginProduct, self).__init__()  # noqa: UP008 (as the repository writes it)
        self.in_features = in_features
        self.out_features = out_features
        self.s = s
        self.m = m
        self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)

        self.easy_margin = easy_margin
        self.cos_m = math.cos(m)
        self.sin_m = math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, input, label):
        # --------------------------- cos(theta) & phi(theta) ---------------------------
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        # --------------------------- convert label to one-hot ---------------------------
        one_hot = torch.zeros(cosine.size(), device=input.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        # -------------torch.where(out_i = {x_i if condition_i else y_i) -------------
        output = (one_hot * phi) + (
            (1.0 - one_hot) * cosine
        )  # you can use torch.where if your torch.__version__ is 0.4
        output *= self.s
        return output


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.convnet = nn.Sequential(
            nn.Conv2d(1, 4, 3),
            nn.PReLU(),
            nn.MaxPool2d(2, stride=2),
            nn.Conv2d(4, 8, 3),
            nn.PReLU(),
        )
        self.fc = nn.Sequential(nn.Linear(8 * 2 * 2, 16), nn.PReLU(), nn.Linear(16, DIM))

    def forward(self, x):
        output = self.convnet(x)
        output = output.view(output.size()[0], -1)
        output = self.fc(output)
        return output


class MetricModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding_net = EmbeddingNet()
        self.metric_fc = ArcMarginProduct(DIM, N_IDS, s=8.0, m=0.3)
        self.verifier = nn.Bilinear(DIM, DIM, 1)

    def forward(self, x):
        return self.embedding_net(x)


def identities(rng, per_id=PER_ID):
    """10x10 images: an identity is a fixed pattern, each view adds noise and a shift."""
    patterns = np.cos(np.arange(N_IDS * 100, dtype=np.float32).reshape(N_IDS, 10, 10) * 0.37)
    labels = np.repeat(np.arange(N_IDS), per_id)
    images = np.stack([np.roll(patterns[k], int(rng.integers(-1, 2)), axis=1) for k in labels])[:, None]
    images = images + rng.normal(0, 0.3, size=images.shape).astype(np.float32)
    return torch.tensor(images.astype(np.float32)), torch.tensor(labels)


def build():
    torch.manual_seed(0)
    return MetricModel()


def train(model, steps=3):
    params_backbone = [p for n, p in model.named_parameters() if not n.startswith("metric_fc")]
    optimizer = optim.SGD(
        [{"params": params_backbone}, {"params": model.metric_fc.parameters(), "weight_decay": 0.0}],
        lr=0.05,
        momentum=0.9,
        weight_decay=5e-4,
    )
    triplet = nn.TripletMarginLoss(margin=0.5, p=2)
    cosine_triplet = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1.0 - F.cosine_similarity(x, y), margin=0.3
    )
    cosine_pairs = nn.CosineEmbeddingLoss(margin=0.2)
    ranking = nn.MarginRankingLoss(margin=0.1)
    criterion = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    record = {"losses": [], "mined": [], "verify": []}
    model.train()
    for _ in range(steps):
        images, labels = identities(rng)
        embeddings = model(images)
        if LOSS == "batch_hard":
            loss = batch_hard_triplet_loss(labels, embeddings, margin=0.5)
            # the mined triplets again, through the module loss
            dist = _pairwise_distances(embeddings.detach())
            pos = _get_anchor_positive_triplet_mask(labels)
            neg = _get_anchor_negative_triplet_mask(labels)
            hardest_pos = torch.where(pos, dist, torch.zeros_like(dist)).argmax(1)
            hardest_neg = torch.where(neg, dist, torch.full_like(dist, float("inf"))).argmin(1)
            loss = loss + triplet(embeddings, embeddings[hardest_pos], embeddings[hardest_neg])
            record["mined"].append(hardest_neg.tolist())
        elif LOSS == "cosine_triplet":
            normed = F.normalize(embeddings, dim=1)
            anchors = torch.arange(0, len(labels), PER_ID)
            loss = cosine_triplet(normed[anchors], normed[anchors + 1], normed[(anchors + PER_ID) % len(labels)])
        else:
            logits = model.metric_fc(embeddings, labels)
            loss = criterion(logits, labels)
        # verification pairs: (view 0, view 1) of one identity, (view 0 of k, view 0 of k + 1)
        first = torch.arange(0, len(labels), PER_ID)
        same, other = first + 1, (first + PER_ID) % len(labels)
        a = torch.cat([embeddings[first], embeddings[first]])
        b = torch.cat([embeddings[same], embeddings[other]])
        target = torch.cat([torch.ones(N_IDS), -torch.ones(N_IDS)])
        loss = loss + 0.5 * cosine_pairs(a, b, target)
        scores = model.verifier(a, b).squeeze(1)
        loss = loss + ranking(scores[:N_IDS], scores[N_IDS:], torch.ones(N_IDS))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["verify"].append(scores.detach().sum().item())
    model.eval()
    with torch.no_grad():
        gallery, labels = identities(np.random.default_rng(1), per_id=2)
        emb = F.normalize(model(gallery), dim=1)
        d = torch.cdist(emb, emb)
        d.fill_diagonal_(float("inf"))
        nearest = d.argmin(1)
        record["recall_at_1"] = (labels[nearest] == labels).float().mean().item()
        record["nearest"] = nearest.tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
