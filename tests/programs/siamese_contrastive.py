"""A Siamese network with the contrastive loss over random pairs, and a triplet network with online
semi-hard mining, as the popular Siamese / triplet GitHub repositories and notebooks write them, at tiny
sizes on synthetic images.

Its idioms: a pair ``Dataset`` that draws with Python's ``random`` (``random.choice``, ``random.randint(0,
1)`` for "same class?"), returning ``torch.from_numpy(np.array([int(label0 != label1)], dtype=np.float32))``;
one embedding net applied to both inputs (``forward_once``); ``ContrastiveLoss`` by
``F.pairwise_distance(output1, output2, keepdim=True)`` and ``torch.mean((1 - label) * torch.pow(d, 2) +
label * torch.pow(torch.clamp(self.margin - d, min=0.0), 2))``; triplets mined in the batch by masks
(``labels.unsqueeze(0) == labels.unsqueeze(1)``, ``~torch.eye(n, dtype=torch.bool)``, ``torch.cdist`` of
the embeddings, ``F.normalize``-d as FaceNet's, semi-hard negatives where ``(d_an > d_ap) & (d_an < d_ap + margin)``, chosen
by ``masked_fill(~mask, float("inf")).min(dim=1)`` with a hardest-negative fallback by ``torch.where``,
``nonzero(as_tuple=True)``) into ``nn.TripletMarginLoss(margin=..., p=2, swap=True)``, or
``F.triplet_margin_loss``; a verification threshold swept over ``torch.linspace`` of the pair distances,
with accuracy by ``((d < t) == same).float().mean()``; all pairs of a batch by ``torch.triu_indices``; and
Adam with ``StepLR``."""

from __future__ import annotations

import random

import numpy as np
from shim import F, nn, optim, torch

LOSS = "contrastive"  # or "triplet", "functional_triplet"
MARGIN = 1.0
N_CLASSES = 4
BATCH = 8


def make_images(seed, per_class=6):
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for label in range(N_CLASSES):
        for _ in range(per_class):
            img = rng.normal(0, 0.3, size=(1, 8, 8)).astype(np.float32)
            img[0, label * 2 : label * 2 + 2, :] += 1.0
            images.append(img)
            labels.append(label)
    return np.stack(images), np.array(labels)


class SiameseNetworkDataset(torch.utils.data.Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __getitem__(self, index):
        idx0 = random.choice(range(len(self.labels)))
        # we need to make sure approx 50% of images are in the same class
        should_get_same_class = random.randint(0, 1)
        if should_get_same_class:
            while True:
                # keep looping till the same class image is found
                idx1 = random.choice(range(len(self.labels)))
                if self.labels[idx0] == self.labels[idx1]:
                    break
        else:
            while True:
                # keep looping till a different class image is found
                idx1 = random.choice(range(len(self.labels)))
                if self.labels[idx0] != self.labels[idx1]:
                    break
        img0, img1 = torch.from_numpy(self.images[idx0]), torch.from_numpy(self.images[idx1])
        return img0, img1, torch.from_numpy(np.array([int(self.labels[idx1] != self.labels[idx0])], dtype=np.float32))

    def __len__(self):
        return len(self.labels)


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn1 = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(1, 4, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(4),
            nn.ReflectionPad2d(1),
            nn.Conv2d(4, 4, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(4),
        )
        self.fc1 = nn.Sequential(
            nn.Linear(4 * 8 * 8, 32), nn.ReLU(inplace=True), nn.Linear(32, 16), nn.ReLU(inplace=True), nn.Linear(16, 4)
        )

    def forward_once(self, x):
        output = self.cnn1(x)
        output = output.view(output.size()[0], -1)
        output = self.fc1(output)
        if LOSS != "contrastive":  # FaceNet's embeddings on the unit sphere for the triplet losses
            output = F.normalize(output, p=2, dim=1)
        return output

    def forward(self, input1, input2=None):
        output1 = self.forward_once(input1)
        if input2 is None:
            return output1
        output2 = self.forward_once(input2)
        return output1, output2


class ContrastiveLoss(torch.nn.Module):
    """
    Contrastive loss function.
    Based on: http://yann.lecun.com/exdb/publis/pdf/hadsell-chopra-lecun-06.pdf
    """

    def __init__(self, margin=2.0):
        super().__init__()
        self.margin = margin

    def forward(self, output1, output2, label):
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss_contrastive = torch.mean(
            (1 - label) * torch.pow(euclidean_distance, 2)
            + (label) * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2)
        )
        return loss_contrastive


def semi_hard_triplets(embeddings, labels, margin):
    """(anchor, positive, negative) indices: every positive pair with a semi-hard negative, else the hardest."""
    dist = torch.cdist(embeddings, embeddings)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    not_self = ~torch.eye(labels.size(0), dtype=torch.bool)
    anchors, positives = (same & not_self).nonzero(as_tuple=True)
    d_ap = dist[anchors, positives].unsqueeze(1)
    d_an = dist[anchors]
    negative = ~same[anchors]
    semi_hard = negative & (d_an > d_ap) & (d_an < d_ap + margin)
    semi_d, semi_idx = d_an.masked_fill(~semi_hard, float("inf")).min(dim=1)
    hard_idx = d_an.masked_fill(~negative, float("inf")).argmin(dim=1)
    negatives = torch.where(torch.isinf(semi_d), hard_idx, semi_idx)
    return anchors, positives, negatives, semi_hard.any(dim=1).sum().item()


def build():
    torch.manual_seed(0)
    return SiameseNetwork()


def train(model, steps=3):
    random.seed(0)
    images, labels = make_images(0)
    optimizer = optim.Adam(model.parameters(), lr=0.005)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    record = {"losses": [], "mined": []}
    if LOSS == "contrastive":
        dataset = SiameseNetworkDataset(images, labels)
        loader = torch.utils.data.DataLoader(dataset, shuffle=False, batch_size=BATCH)
        criterion = ContrastiveLoss(margin=MARGIN)
        batches = iter(loader)
        for _ in range(steps):
            img0, img1, label = next(batches)
            optimizer.zero_grad()
            output1, output2 = model(img0, img1)
            loss_contrastive = criterion(output1, output2, label)
            loss_contrastive.backward()
            optimizer.step()
            scheduler.step()
            record["losses"].append(loss_contrastive.item())
            record["mined"].append(label.sum().item())
    else:
        criterion = nn.TripletMarginLoss(margin=0.2, p=2, swap=True)
        rng = np.random.default_rng(1)
        for _ in range(steps):
            # P classes x K samples: two of each class
            index = np.concatenate(
                [rng.choice(np.flatnonzero(labels == c), 2, replace=False) for c in range(N_CLASSES)]
            )
            x, y = torch.from_numpy(images[index]), torch.from_numpy(labels[index])
            optimizer.zero_grad()
            embeddings = model(x)
            with torch.no_grad():
                a, p, n, n_semi = semi_hard_triplets(embeddings, y, 0.2)
            if LOSS == "triplet":
                loss = criterion(embeddings[a], embeddings[p], embeddings[n])
            else:
                loss = F.triplet_margin_loss(embeddings[a], embeddings[p], embeddings[n], margin=0.2, reduction="sum")
            loss.backward()
            optimizer.step()
            scheduler.step()
            record["losses"].append(loss.item())
            record["mined"].append([len(a), n_semi, n.tolist()])
    # verification: every pair of a held-out batch, the best distance threshold
    model.eval()
    test_images, test_labels = make_images(1, per_class=3)
    with torch.no_grad():
        embeddings = model(torch.from_numpy(test_images))
    test_labels = torch.from_numpy(test_labels)
    i, j = torch.triu_indices(len(test_labels), len(test_labels), offset=1)
    d = F.pairwise_distance(embeddings[i], embeddings[j])
    same = test_labels[i] == test_labels[j]
    thresholds = torch.linspace(d.min().item(), d.max().item(), steps=20)
    accuracies = torch.stack([((d < t) == same).float().mean() for t in thresholds])
    best = accuracies.argmax()
    record["verification"] = [accuracies[best].item(), thresholds[best].item()]
    record["lr"] = scheduler.get_last_lr()
    return record


if __name__ == "__main__":
    print(train(build()))
