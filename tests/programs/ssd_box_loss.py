"""An SSD-style detector head trained with the MultiBox loss, as single-shot detection code (ssd.pytorch
and its descendants) writes it, on synthetic images with one or two boxes each.

Its idioms: ``intersect`` of two box sets by ``torch.min(box_a[:, 2:].unsqueeze(1).expand(A, B, 2),
box_b[:, 2:].unsqueeze(0).expand(A, B, 2))`` and ``torch.max`` of the corners, ``torch.clamp(max_xy -
min_xy, min=0)``; ``jaccard`` as ``inter / union`` of broadcast areas; ``point_form`` by ``torch.cat``
of centre -/+ half size; ``match``: ``overlaps.max(1, keepdim=True)``, ``best_truth_overlap.index_fill_(0,
best_prior_idx, 2)``, a Python loop ``best_truth_idx[best_prior_idx[j]] = j``, ``conf[best_truth_overlap <
threshold] = 0``; ``encode`` with ``torch.log`` of the size ratio; the location loss
``F.smooth_l1_loss(loc_p, loc_t, reduction="sum")`` over ``pos.unsqueeze(pos.dim()).expand_as(loc_data)``
masked rows; ``log_sum_exp`` with ``x.data.max()``; hard negative mining by ``loss_c[pos] = 0``,
``loss_c.sort(1, descending=True)``, ``loss_idx.sort(1)``, ``num_neg = torch.clamp(negpos_ratio *
num_pos, max=pos.size(1) - 1)``, ``neg = idx_rank < num_neg.expand_as(idx_rank)``, ``(pos_idx +
neg_idx).gt(0)`` and ``F.cross_entropy(..., reduction="sum")`` divided by ``num_pos.data.sum()``;
and a YOLO-style IoU metric of the decoded boxes."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

NUM_CLASSES = 3  # background + 2
DEVICE = "cpu"


def point_form(boxes):
    return torch.cat((boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2), 1)


def intersect(box_a, box_b):
    A = box_a.size(0)
    B = box_b.size(0)
    max_xy = torch.min(box_a[:, 2:].unsqueeze(1).expand(A, B, 2), box_b[:, 2:].unsqueeze(0).expand(A, B, 2))
    min_xy = torch.max(box_a[:, :2].unsqueeze(1).expand(A, B, 2), box_b[:, :2].unsqueeze(0).expand(A, B, 2))
    inter = torch.clamp((max_xy - min_xy), min=0)
    return inter[:, :, 0] * inter[:, :, 1]


def jaccard(box_a, box_b):
    inter = intersect(box_a, box_b)
    area_a = ((box_a[:, 2] - box_a[:, 0]) * (box_a[:, 3] - box_a[:, 1])).unsqueeze(1).expand_as(inter)
    area_b = ((box_b[:, 2] - box_b[:, 0]) * (box_b[:, 3] - box_b[:, 1])).unsqueeze(0).expand_as(inter)
    union = area_a + area_b - inter
    return inter / union


def encode(matched, priors, variances):
    g_cxcy = (matched[:, :2] + matched[:, 2:]) / 2 - priors[:, :2]
    g_cxcy /= variances[0] * priors[:, 2:]
    g_wh = (matched[:, 2:] - matched[:, :2]) / priors[:, 2:]
    g_wh = torch.log(g_wh) / variances[1]
    return torch.cat([g_cxcy, g_wh], 1)


def decode(loc, priors, variances):
    boxes = torch.cat(
        (
            priors[:, :2] + loc[:, :2] * variances[0] * priors[:, 2:],
            priors[:, 2:] * torch.exp(loc[:, 2:] * variances[1]),
        ),
        1,
    )
    boxes[:, :2] -= boxes[:, 2:] / 2
    boxes[:, 2:] += boxes[:, :2]
    return boxes


def match(threshold, truths, priors, variances, labels, loc_t, conf_t, idx):
    overlaps = jaccard(truths, point_form(priors))
    best_prior_overlap, best_prior_idx = overlaps.max(1, keepdim=True)
    best_truth_overlap, best_truth_idx = overlaps.max(0, keepdim=True)
    best_truth_idx.squeeze_(0)
    best_truth_overlap.squeeze_(0)
    best_prior_idx.squeeze_(1)
    best_prior_overlap.squeeze_(1)
    best_truth_overlap.index_fill_(0, best_prior_idx, 2)
    for j in range(best_prior_idx.size(0)):
        best_truth_idx[best_prior_idx[j]] = j
    matches = truths[best_truth_idx]
    conf = labels[best_truth_idx] + 1
    conf[best_truth_overlap < threshold] = 0
    loc = encode(matches, priors, variances)
    loc_t[idx] = loc
    conf_t[idx] = conf


def log_sum_exp(x):
    x_max = x.data.max()
    return torch.log(torch.sum(torch.exp(x - x_max), 1, keepdim=True)) + x_max


class MultiBoxLoss(nn.Module):
    def __init__(self, num_classes, overlap_thresh, neg_pos, variances=(0.1, 0.2)):
        super().__init__()
        self.num_classes = num_classes
        self.threshold = overlap_thresh
        self.negpos_ratio = neg_pos
        self.variance = variances

    def forward(self, predictions, targets):
        loc_data, conf_data, priors = predictions
        num = loc_data.size(0)
        priors = priors[: loc_data.size(1), :]
        num_priors = priors.size(0)

        loc_t = torch.zeros(num, num_priors, 4, device=loc_data.device)
        conf_t = torch.zeros(num, num_priors, dtype=torch.long, device=loc_data.device)
        for idx in range(num):
            truths = targets[idx][:, :-1].data
            labels = targets[idx][:, -1].data.long()
            defaults = priors.data
            match(self.threshold, truths, defaults, self.variance, labels, loc_t, conf_t, idx)
        loc_t.requires_grad_(False)
        conf_t.requires_grad_(False)

        pos = conf_t > 0
        num_pos = pos.sum(dim=1, keepdim=True)

        pos_idx = pos.unsqueeze(pos.dim()).expand_as(loc_data)
        loc_p = loc_data[pos_idx].view(-1, 4)
        loc_t = loc_t[pos_idx].view(-1, 4)
        loss_l = F.smooth_l1_loss(loc_p, loc_t, reduction="sum")

        batch_conf = conf_data.view(-1, self.num_classes)
        loss_c = log_sum_exp(batch_conf) - batch_conf.gather(1, conf_t.view(-1, 1))

        loss_c = loss_c.view(num, -1)
        loss_c[pos] = 0
        _, loss_idx = loss_c.sort(1, descending=True)
        _, idx_rank = loss_idx.sort(1)
        num_pos = pos.long().sum(1, keepdim=True)
        num_neg = torch.clamp(self.negpos_ratio * num_pos, max=pos.size(1) - 1)
        neg = idx_rank < num_neg.expand_as(idx_rank)

        pos_idx = pos.unsqueeze(2).expand_as(conf_data)
        neg_idx = neg.unsqueeze(2).expand_as(conf_data)
        conf_p = conf_data[(pos_idx + neg_idx).gt(0)].view(-1, self.num_classes)
        targets_weighted = conf_t[(pos + neg).gt(0)]
        loss_c = F.cross_entropy(conf_p, targets_weighted, reduction="sum")

        N = num_pos.data.sum()
        loss_l /= N
        loss_c /= N
        return loss_l, loss_c


def make_priors(size=4, scales=(0.3, 0.6)):
    """Default boxes (cx, cy, w, h) on a size x size grid, two scales per cell."""
    mean = []
    for i in range(size):
        for j in range(size):
            cx, cy = (j + 0.5) / size, (i + 0.5) / size
            for s in scales:
                mean += [cx, cy, s, s]
    return torch.tensor(mean).view(-1, 4).clamp_(max=1, min=0)


class TinySSD(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES, boxes_per_cell=2):
        super().__init__()
        self.num_classes = num_classes
        self.base = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.loc = nn.Conv2d(8, boxes_per_cell * 4, kernel_size=3, padding=1)
        self.conf = nn.Conv2d(8, boxes_per_cell * num_classes, kernel_size=3, padding=1)
        self.register_buffer("priors", make_priors())

    def forward(self, x):
        x = self.base(x)
        loc = self.loc(x).permute(0, 2, 3, 1).contiguous()
        conf = self.conf(x).permute(0, 2, 3, 1).contiguous()
        return loc.view(loc.size(0), -1, 4), conf.view(conf.size(0), -1, self.num_classes), self.priors


def box_iou(pred, truth):
    """IoU of paired (x1, y1, x2, y2) boxes, as YOLO-style metrics write it."""
    x1 = torch.max(pred[..., 0], truth[..., 0])
    y1 = torch.max(pred[..., 1], truth[..., 1])
    x2 = torch.min(pred[..., 2], truth[..., 2])
    y2 = torch.min(pred[..., 3], truth[..., 3])
    inter = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    area_p = (pred[..., 2] - pred[..., 0]) * (pred[..., 3] - pred[..., 1])
    area_t = (truth[..., 2] - truth[..., 0]) * (truth[..., 3] - truth[..., 1])
    return inter / (area_p + area_t - inter + 1e-6)


def synthetic_batch(rng, n=3):
    images = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
    targets = []
    for k in range(n):
        rows = []
        for _ in range(1 + k % 2):
            cx, cy = rng.uniform(0.25, 0.75, 2)
            w, h = rng.uniform(0.2, 0.5, 2)
            rows.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, float(rng.integers(0, 2))])
        targets.append(np.array(rows, dtype=np.float32))
    return images, targets


def build():
    torch.manual_seed(0)
    return TinySSD()


def train(model, steps=3):
    device = torch.device(DEVICE)
    net = model.to(device)
    criterion = MultiBoxLoss(NUM_CLASSES, 0.5, 3)
    optimizer = optim.SGD(net.parameters(), lr=1e-2, momentum=0.9, weight_decay=5e-4)
    rng = np.random.default_rng(0)
    record = {"losses": [], "loss_l": [], "loss_c": []}
    net.train()
    for _ in range(steps):
        images, targets = synthetic_batch(rng)
        images = torch.tensor(images, device=device)
        targets = [torch.tensor(t, device=device) for t in targets]
        out = net(images)
        optimizer.zero_grad()
        loss_l, loss_c = criterion(out, targets)
        loss = loss_l + loss_c
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["loss_l"].append(loss_l.item())
        record["loss_c"].append(loss_c.item())
    net.eval()
    with torch.no_grad():
        loc, conf, priors = net(images)
        scores = F.softmax(conf, dim=-1)[0, :, 1:].max(1).values
        best = scores.argmax()
        box = decode(loc[0], priors, (0.1, 0.2))[best]
        record["best_prior"] = int(best)
        record["iou"] = box_iou(box.unsqueeze(0), targets[0][:1, :4]).item()
    return record


if __name__ == "__main__":
    print(train(build()))
