"""The official tutorial "Adversarial Example Generation" (beginner_source/fgsm_tutorial.py) on synthetic
12x12 digits, its LeNet first trained with the quickstart's loops (beginner_source/basics/quickstart_tutorial.py):
``size = len(dataloader.dataset)``, ``num_batches = len(dataloader)``, ``loss, current = loss.item(),
(batch + 1) * len(X)``, ``correct += (pred.argmax(1) == y).type(torch.float).sum().item()``. The attack
runs the model in ``eval()`` one image at a time: ``data.requires_grad = True``, ``init_pred =
output.max(1, keepdim=True)[1]`` compared with ``.item()``, ``model.zero_grad()``,
``loss.backward()``, ``data.grad.data``; the FGSM step ``image + epsilon * data_grad.sign()`` kept in
range by ``torch.clamp(perturbed_image, 0, 1)``, between a ``denorm`` (``torch.tensor(mean).to(device)``,
``std.view(1, -1, 1, 1)``) and a re-normalisation; accuracy before and after for several epsilons,
and adversarial examples kept as ``squeeze().detach().cpu().numpy()``."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, torch

DROPOUT = 0.25
SHUFFLE = True
SIDE = 12
MEAN, STD = (0.1307,), (0.3081,)
epsilons = [0, 0.05, 0.2]
device = "cpu"


def make_data(n=40, seed=11):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n)
    x = rng.random((n, 1, SIDE, SIDE), dtype=np.float32) * 0.3
    for i, label in enumerate(y):
        x[i, 0, label, 2 : SIDE - 2] = 1.0  # a bright row says the label
    x = (x - MEAN[0]) / STD[0]  # transforms.Normalize((0.1307,), (0.3081,))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


# LeNet Model definition
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(DROPOUT)
        self.dropout2 = nn.Dropout(DROPOUT)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def build():
    torch.manual_seed(0)
    return Net().to(device)


def train_loop(dataloader, model, loss_fn, optimizer, losses, steps):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)

        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        losses.append(loss.item())
        if batch % 2 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            assert current <= size, f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]"
        if len(losses) == steps:
            return


def test_loop(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    return test_loss, correct


# FGSM attack code
def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon * sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    # Return the perturbed image
    return perturbed_image


# restores the tensors to their original scale
def denorm(batch, mean=MEAN, std=STD):
    if isinstance(mean, list | tuple):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list | tuple):
        std = torch.tensor(std).to(device)
    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def normalize(batch, mean=MEAN, std=STD):
    mean = torch.tensor(mean).to(device).view(1, -1, 1, 1)
    std = torch.tensor(std).to(device).view(1, -1, 1, 1)
    return (batch - mean) / std


def test(model, device, test_loader, epsilon):
    # Accuracy counter
    correct = 0
    adv_examples = []

    # Loop over all examples in test set
    for data, target in test_loader:
        # Send the data and label to the device
        data, target = data.to(device), target.to(device)

        # Set requires_grad attribute of tensor. Important for Attack
        data.requires_grad = True

        # Forward pass the data through the model
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability

        # If the initial prediction is wrong, don't bother attacking, just move on
        if init_pred.item() != target.item():
            continue

        # Calculate the loss
        loss = F.nll_loss(output, target)

        # Zero all existing gradients
        model.zero_grad()

        # Calculate gradients of model in backward pass
        loss.backward()

        # Collect ``datagrad``
        data_grad = data.grad.data

        # Restore the data to its original scale
        data_denorm = denorm(data)

        # Call FGSM Attack
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)

        # Reapply normalization
        perturbed_data_normalized = normalize(perturbed_data)

        # Re-classify the perturbed image
        output = model(perturbed_data_normalized)

        # Check for success
        final_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability
        if final_pred.item() == target.item():
            correct += 1
            # Special case for saving 0 epsilon examples
            if epsilon == 0 and len(adv_examples) < 3:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
        else:
            # Save some adv examples for visualization later
            if len(adv_examples) < 3:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))

    # Calculate final accuracy for this epsilon
    final_acc = correct / float(len(test_loader))
    return final_acc, adv_examples


def train(model, steps=5):
    x, y = make_data()
    train_dataloader = DataLoader(TensorDataset(x[:32], y[:32]), batch_size=8, shuffle=SHUFFLE)
    test_dataloader = DataLoader(TensorDataset(x[32:], y[32:]), batch_size=8)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    while len(losses) < steps:
        train_loop(train_dataloader, model, loss_fn, optimizer, losses, steps)
    test_loss, correct = test_loop(test_dataloader, model, loss_fn)

    # the attack: one image at a time, the model in evaluation mode
    attack_loader = DataLoader(TensorDataset(x[32:], y[32:]), batch_size=1, shuffle=SHUFFLE)
    model.eval()
    accuracies, examples = [], []
    for eps in epsilons:
        torch.manual_seed(1)  # the same order of test images for every epsilon
        acc, ex = test(model, device, attack_loader, eps)
        accuracies.append(acc)
        examples.append([(init, final, float(np.abs(adv).sum())) for init, final, adv in ex])
    return {
        "losses": losses,
        "test_loss": test_loss,
        "accuracy": correct,
        "adversarial_accuracy": accuracies,
        "examples": examples,
    }


if __name__ == "__main__":
    print(train(build(), steps=12))
