"""pytorch/examples' siamese_network at a tiny size on synthetic pairs: one CNN branch run on both
images (forward_once), the two embeddings joined by torch.cat((output1, output2), 1) into a Linear
and nn.Sigmoid, nn.BCELoss against float targets, a second head on F.pairwise_distance with a
contrastive loss written out (torch.clamp(margin - d, min=0.0)), weights initialised by
self.apply(self.init_weights) with torch.nn.init.xavier_uniform_ and bias.data.fill_(0.01),
Adadelta with StepLR(step_size=1, gamma=0.7), and a test loop counting
torch.where(output > 0.5, 1, 0).eq(targets.view_as(pred)).sum().item()."""

from __future__ import annotations

import numpy as np
from shim import F, lr_scheduler, nn, optim, torch

USE_CUDA = True


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(4, 8, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.fc_in_features = 8
        # add linear layers to compare between the features of the two images
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 16),
            nn.ReLU(inplace=True),
            nn.Linear(16, 1),
        )
        self.sigmoid = nn.Sigmoid()
        # initialize the weights
        self.cnn.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.cnn(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        # get two images' features
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        # concatenate both images' features
        output = torch.cat((output1, output2), 1)
        # pass the concatenation to the linear layers
        output = self.fc(output)
        # pass the out of the linear layers to sigmoid layer
        output = self.sigmoid(output)
        return output, F.pairwise_distance(output1, output2, keepdim=True)


def contrastive_loss(distance, target, margin=1.0):
    same = target * distance.pow(2)
    different = (1 - target) * torch.clamp(margin - distance, min=0.0).pow(2)
    return torch.mean(same + different) / 2


def make_pairs(n=8, seed=3):
    """Pairs of 8x8 images of a noisy bar; the target is 1 where both bars lie the same way."""
    rng = np.random.default_rng(seed)
    bars = rng.integers(0, 2, size=(2, n))
    images = rng.normal(0, 0.3, size=(2, n, 1, 8, 8)).astype(np.float32)
    for side in range(2):
        for k in range(n):
            if bars[side, k]:
                images[side, k, 0, :, 3:5] += 1.0
            else:
                images[side, k, 0, 3:5, :] += 1.0
    targets = (bars[0] == bars[1]).astype(np.float32)
    return torch.tensor(images[0]), torch.tensor(images[1]), torch.tensor(targets)


def build():
    torch.manual_seed(1)
    return SiameseNetwork()


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    model = model.to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()
    images_1, images_2, targets = make_pairs()
    losses, lrs = [], []
    for _epoch in range(steps):
        model.train()
        for batch_idx in range(2):
            batch = slice(4 * batch_idx, 4 * batch_idx + 4)
            x1, x2, t = images_1[batch].to(device), images_2[batch].to(device), targets[batch].to(device)
            optimizer.zero_grad()
            outputs, distance = model(x1, x2)
            outputs = outputs.squeeze()
            loss = criterion(outputs, t) + 0.1 * contrastive_loss(distance.squeeze(1), t)
            loss.backward()
            optimizer.step()
            if batch_idx == 0:
                losses.append(loss.item())
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        x1, x2, t = images_1.to(device), images_2.to(device), targets.to(device)
        outputs = model(x1, x2)[0].squeeze()
        test_loss += criterion(outputs, t).sum().item()  # sum up batch loss
        pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
        correct += pred.eq(t.view_as(pred)).sum().item()
    return {"losses": losses, "lrs": lrs, "test_loss": test_loss, "correct": correct}


if __name__ == "__main__":
    print(train(build()))
