"""YOLOv1 from scratch as Aladdin Persson's Machine-Learning-Collection writes it (ML/Pytorch/object_detection/
YOLO: model.py, loss.py, utils.py, train.py), at a tiny size (a 2x2 grid over 32x32 synthetic images, the 20
VOC classes kept so the loss's index arithmetic is the original's).

Idioms: ``architecture_config`` of tuples, ``"M"`` and ``[(1, 8, 1, 0), (3, 16, 1, 1), 2]`` repeat lists walked
by ``type(x) == tuple`` / ``str`` / ``list``; ``CNNBlock(**kwargs)`` with ``nn.LeakyReLU(0.1)``;
``torch.flatten(x, start_dim=1)`` into ``nn.Sequential(nn.Flatten(), ...)``; the loss's ``predictions.reshape(-1,
self.S, self.S, self.C + self.B * 5)``, ``intersection_over_union`` on midpoint boxes (``boxes_preds[..., 0:1] -
boxes_preds[..., 2:3] / 2``, ``torch.max``/``torch.min`` of corners, ``(x2 - x1).clamp(0)``, the builtin ``abs``
of a tensor), ``torch.cat([iou_b1.unsqueeze(0), iou_b2.unsqueeze(0)], dim=0)``, ``iou_maxes, bestbox =
torch.max(ious, dim=0)`` (an integer tensor multiplied into float boxes), ``exists_box = target[...,
20].unsqueeze(3)``, the in-place write ``box_predictions[..., 2:4] = torch.sign(box_predictions[..., 2:4]) *
torch.sqrt(torch.abs(box_predictions[..., 2:4] + 1e-6))`` on a tensor with history, ``torch.flatten(...,
end_dim=-2)`` and ``start_dim=1``, ``nn.MSELoss(reduction="sum")``; utils' ``convert_cellboxes`` (``scores.argmax(0)
.unsqueeze(-1)``, ``torch.arange(7).repeat(batch_size, 7, 1).unsqueeze(-1)``, ``cell_indices.permute(0, 2, 1, 3)``,
``torch.max(a, b)`` of two tensors), ``cellboxes_to_boxes`` with ``converted_pred[..., 0] =
converted_pred[..., 0].long()`` and ``[x.item() for x in ...]``, ``non_max_suppression`` over lists with
``torch.tensor(chosen_box[2:])``; train.py's ``mean_loss = []``, ``print(f"Mean loss was
{sum(mean_loss)/len(mean_loss)}")`` and ``Adam(weight_decay=...)``.
"""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

S, B, C = 2, 2, 20
DROPOUT = 0.0
BATCH_SIZE = 3
LEARNING_RATE = 2e-4
WEIGHT_DECAY = 1e-4
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

""" 
Information about architecture config:
Tuple is structured by (kernel_size, filters, stride, padding) 
"M" is simply maxpooling with stride 2x2 and kernel 2x2
List is structured by tuples and lastly int with number of repeats
"""  # noqa: W291

architecture_config = [
    (7, 8, 2, 3),
    "M",
    (3, 12, 1, 1),
    "M",
    [(1, 8, 1, 0), (3, 16, 1, 1), 2],
    "M",
    (3, 16, 1, 1),
]


class CNNBlock(nn.Module):
    def __init__(self, in_channels, out_channels, **kwargs):
        super(CNNBlock, self).__init__()  # noqa: UP008
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.batchnorm = nn.BatchNorm2d(out_channels)
        self.leakyrelu = nn.LeakyReLU(0.1)

    def forward(self, x):
        return self.leakyrelu(self.batchnorm(self.conv(x)))


class Yolov1(nn.Module):
    def __init__(self, in_channels=3, **kwargs):
        super(Yolov1, self).__init__()  # noqa: UP008
        self.architecture = architecture_config
        self.in_channels = in_channels
        self.darknet = self._create_conv_layers(self.architecture)
        self.fcs = self._create_fcs(**kwargs)

    def forward(self, x):
        x = self.darknet(x)
        return self.fcs(torch.flatten(x, start_dim=1))

    def _create_conv_layers(self, architecture):
        layers = []
        in_channels = self.in_channels

        for x in architecture:
            if type(x) == tuple:  # noqa: E721
                layers += [CNNBlock(in_channels, x[1], kernel_size=x[0], stride=x[2], padding=x[3])]
                in_channels = x[1]

            elif type(x) == str:  # noqa: E721
                layers += [nn.MaxPool2d(kernel_size=(2, 2), stride=(2, 2))]

            elif type(x) == list:  # noqa: E721
                conv1 = x[0]
                conv2 = x[1]
                num_repeats = x[2]

                for _ in range(num_repeats):
                    layers += [CNNBlock(in_channels, conv1[1], kernel_size=conv1[0], stride=conv1[2], padding=conv1[3])]
                    layers += [CNNBlock(conv1[1], conv2[1], kernel_size=conv2[0], stride=conv2[2], padding=conv2[3])]
                    in_channels = conv2[1]

        return nn.Sequential(*layers)

    def _create_fcs(self, split_size, num_boxes, num_classes):
        S, B, C = split_size, num_boxes, num_classes

        # In original paper this should be
        # nn.Linear(1024*S*S, 4096),
        # nn.LeakyReLU(0.1),
        # nn.Linear(4096, S*S*(B*5+C))

        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(16 * S * S, 24),
            nn.Dropout(DROPOUT),
            nn.LeakyReLU(0.1),
            nn.Linear(24, S * S * (C + B * 5)),
        )


def intersection_over_union(boxes_preds, boxes_labels, box_format="midpoint"):
    """
    Calculates intersection over union

    Parameters:
        boxes_preds (tensor): Predictions of Bounding Boxes (BATCH_SIZE, 4)
        boxes_labels (tensor): Correct labels of Boxes (BATCH_SIZE, 4)
        box_format (str): midpoint/corners, if boxes (x,y,w,h) or (x1,y1,x2,y2)

    Returns:
        tensor: Intersection over union for all examples
    """

    if box_format == "midpoint":
        box1_x1 = boxes_preds[..., 0:1] - boxes_preds[..., 2:3] / 2
        box1_y1 = boxes_preds[..., 1:2] - boxes_preds[..., 3:4] / 2
        box1_x2 = boxes_preds[..., 0:1] + boxes_preds[..., 2:3] / 2
        box1_y2 = boxes_preds[..., 1:2] + boxes_preds[..., 3:4] / 2
        box2_x1 = boxes_labels[..., 0:1] - boxes_labels[..., 2:3] / 2
        box2_y1 = boxes_labels[..., 1:2] - boxes_labels[..., 3:4] / 2
        box2_x2 = boxes_labels[..., 0:1] + boxes_labels[..., 2:3] / 2
        box2_y2 = boxes_labels[..., 1:2] + boxes_labels[..., 3:4] / 2

    if box_format == "corners":
        box1_x1 = boxes_preds[..., 0:1]
        box1_y1 = boxes_preds[..., 1:2]
        box1_x2 = boxes_preds[..., 2:3]
        box1_y2 = boxes_preds[..., 3:4]  # (N, 1)
        box2_x1 = boxes_labels[..., 0:1]
        box2_y1 = boxes_labels[..., 1:2]
        box2_x2 = boxes_labels[..., 2:3]
        box2_y2 = boxes_labels[..., 3:4]

    x1 = torch.max(box1_x1, box2_x1)
    y1 = torch.max(box1_y1, box2_y1)
    x2 = torch.min(box1_x2, box2_x2)
    y2 = torch.min(box1_y2, box2_y2)

    # .clamp(0) is for the case when they do not intersect
    intersection = (x2 - x1).clamp(0) * (y2 - y1).clamp(0)

    box1_area = abs((box1_x2 - box1_x1) * (box1_y2 - box1_y1))
    box2_area = abs((box2_x2 - box2_x1) * (box2_y2 - box2_y1))

    return intersection / (box1_area + box2_area - intersection + 1e-6)


class YoloLoss(nn.Module):
    """
    Calculate the loss for yolo (v1) model
    """

    def __init__(self, S=7, B=2, C=20):
        super(YoloLoss, self).__init__()  # noqa: UP008
        self.mse = nn.MSELoss(reduction="sum")

        """
        S is split size of image (in paper 7),
        B is number of boxes (in paper 2),
        C is number of classes (in paper and VOC dataset is 20),
        """
        self.S = S
        self.B = B
        self.C = C

        # These are from Yolo paper, signifying how much we should
        # pay loss for no object (noobj) and the box coordinates (coord)
        self.lambda_noobj = 0.5
        self.lambda_coord = 5

    def forward(self, predictions, target):
        # predictions are shaped (BATCH_SIZE, S*S(C+B*5) when inputted
        predictions = predictions.reshape(-1, self.S, self.S, self.C + self.B * 5)

        # Calculate IoU for the two predicted bounding boxes with target bbox
        iou_b1 = intersection_over_union(predictions[..., 21:25], target[..., 21:25])
        iou_b2 = intersection_over_union(predictions[..., 26:30], target[..., 21:25])
        ious = torch.cat([iou_b1.unsqueeze(0), iou_b2.unsqueeze(0)], dim=0)

        # Take the box with highest IoU out of the two prediction
        # Note that bestbox will be indices of 0, 1 for which bbox was best
        iou_maxes, bestbox = torch.max(ious, dim=0)
        exists_box = target[..., 20].unsqueeze(3)  # in paper this is Iobj_i

        # ======================== #
        #   FOR BOX COORDINATES    #
        # ======================== #

        # Set boxes with no object in them to 0. We only take out one of the two
        # predictions, which is the one with highest Iou calculated previously.
        box_predictions = exists_box * (bestbox * predictions[..., 26:30] + (1 - bestbox) * predictions[..., 21:25])

        box_targets = exists_box * target[..., 21:25]

        # Take sqrt of width, height of boxes to ensure that
        box_predictions[..., 2:4] = torch.sign(box_predictions[..., 2:4]) * torch.sqrt(
            torch.abs(box_predictions[..., 2:4] + 1e-6)
        )
        box_targets[..., 2:4] = torch.sqrt(box_targets[..., 2:4])

        box_loss = self.mse(
            torch.flatten(box_predictions, end_dim=-2),
            torch.flatten(box_targets, end_dim=-2),
        )

        # ==================== #
        #   FOR OBJECT LOSS    #
        # ==================== #

        # pred_box is the confidence score for the bbox with highest IoU
        pred_box = bestbox * predictions[..., 25:26] + (1 - bestbox) * predictions[..., 20:21]

        object_loss = self.mse(
            torch.flatten(exists_box * pred_box),
            torch.flatten(exists_box * target[..., 20:21]),
        )

        # ======================= #
        #   FOR NO OBJECT LOSS    #
        # ======================= #

        no_object_loss = self.mse(
            torch.flatten((1 - exists_box) * predictions[..., 20:21], start_dim=1),
            torch.flatten((1 - exists_box) * target[..., 20:21], start_dim=1),
        )

        no_object_loss += self.mse(
            torch.flatten((1 - exists_box) * predictions[..., 25:26], start_dim=1),
            torch.flatten((1 - exists_box) * target[..., 20:21], start_dim=1),
        )

        # ================== #
        #   FOR CLASS LOSS   #
        # ================== #

        class_loss = self.mse(
            torch.flatten(exists_box * predictions[..., :20], end_dim=-2),
            torch.flatten(exists_box * target[..., :20], end_dim=-2),
        )

        loss = (
            self.lambda_coord * box_loss  # first two rows in paper
            + object_loss  # third row in paper
            + self.lambda_noobj * no_object_loss  # forth row
            + class_loss  # fifth row
        )

        return loss


def convert_cellboxes(predictions, S=7):
    """
    Converts bounding boxes output from Yolo with
    an image split size of S into entire image ratios
    rather than relative to cell ratios.
    """

    predictions = predictions.to("cpu")
    batch_size = predictions.shape[0]
    predictions = predictions.reshape(batch_size, S, S, 30)
    bboxes1 = predictions[..., 21:25]
    bboxes2 = predictions[..., 26:30]
    scores = torch.cat((predictions[..., 20].unsqueeze(0), predictions[..., 25].unsqueeze(0)), dim=0)
    best_box = scores.argmax(0).unsqueeze(-1)
    best_boxes = bboxes1 * (1 - best_box) + best_box * bboxes2
    cell_indices = torch.arange(S).repeat(batch_size, S, 1).unsqueeze(-1)
    x = 1 / S * (best_boxes[..., :1] + cell_indices)
    y = 1 / S * (best_boxes[..., 1:2] + cell_indices.permute(0, 2, 1, 3))
    w_y = 1 / S * best_boxes[..., 2:4]
    converted_bboxes = torch.cat((x, y, w_y), dim=-1)
    predicted_class = predictions[..., :20].argmax(-1).unsqueeze(-1)
    best_confidence = torch.max(predictions[..., 20], predictions[..., 25]).unsqueeze(-1)
    converted_preds = torch.cat((predicted_class, best_confidence, converted_bboxes), dim=-1)

    return converted_preds


def cellboxes_to_boxes(out, S=7):
    converted_pred = convert_cellboxes(out, S).reshape(out.shape[0], S * S, -1)
    converted_pred[..., 0] = converted_pred[..., 0].long()
    all_bboxes = []

    for ex_idx in range(out.shape[0]):
        bboxes = []

        for bbox_idx in range(S * S):
            bboxes.append([x.item() for x in converted_pred[ex_idx, bbox_idx, :]])
        all_bboxes.append(bboxes)

    return all_bboxes


def non_max_suppression(bboxes, iou_threshold, threshold, box_format="corners"):
    assert type(bboxes) == list  # noqa: E721

    bboxes = [box for box in bboxes if box[1] > threshold]
    bboxes = sorted(bboxes, key=lambda x: x[1], reverse=True)
    bboxes_after_nms = []

    while bboxes:
        chosen_box = bboxes.pop(0)

        bboxes = [
            box
            for box in bboxes
            if box[0] != chosen_box[0]
            or intersection_over_union(
                torch.tensor(chosen_box[2:]),
                torch.tensor(box[2:]),
                box_format=box_format,
            )
            < iou_threshold
        ]

        bboxes_after_nms.append(chosen_box)

    return bboxes_after_nms


def voc_like_batches():
    """Images and VOCDataset-style label matrices: a class one-hot, a 1 at index 20 and a cell-relative box
    (x, y, w, h) at 21:25 for cells holding an object."""
    rng = np.random.RandomState(0)
    for _ in range(6):
        images = rng.standard_normal((BATCH_SIZE, 3, 32, 32)).astype(np.float32)
        label_matrix = np.zeros((BATCH_SIZE, S, S, C + 5 * B), np.float32)
        for n in range(BATCH_SIZE):
            for i in range(S):
                for j in range(S):
                    if rng.rand() < 0.5:
                        label_matrix[n, i, j, rng.randint(C)] = 1
                        label_matrix[n, i, j, 20] = 1
                        label_matrix[n, i, j, 21:25] = [rng.rand(), rng.rand(), rng.rand() * S, rng.rand() * S]
        yield torch.tensor(images), torch.tensor(label_matrix)


def build():
    torch.manual_seed(0)
    return Yolov1(split_size=S, num_boxes=B, num_classes=C).to(DEVICE)


def train(model, steps=3):
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    loss_fn = YoloLoss(S=S, B=B, C=C)
    record = {"losses": []}
    mean_loss = []
    for batch_idx, (x, y) in enumerate(voc_like_batches()):
        x, y = x.to(DEVICE), y.to(DEVICE)
        if batch_idx == steps:
            break
        out = model(x)
        loss = loss_fn(out, y)
        mean_loss.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    line = f"Mean loss was {sum(mean_loss) / len(mean_loss)}"
    record["mean_loss"] = float(line.split()[-1])  # all its digits printed: compared as a number

    model.eval()
    with torch.no_grad():
        out = model(x)
    model.train()
    bboxes = cellboxes_to_boxes(out, S=S)
    record["boxes"] = bboxes[0]
    # a low threshold: the untrained confidences are small
    record["nms"] = non_max_suppression(bboxes[0], iou_threshold=0.5, threshold=-1.0, box_format="midpoint")
    record["iou_corners"] = intersection_over_union(
        torch.tensor([[0.0, 0.0, 2.0, 2.0]]), torch.tensor([[1.0, 1.0, 3.0, 3.0]]), box_format="corners"
    ).tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
