"""The official tutorials "Learn the Basics" (beginner_source/basics/): the quickstart, tensors, datasets,
build-the-model, autograd, optimization and save-load pages, at a tiny size on synthetic 8x8 "clothes"
images in place of FashionMNIST. ``PART`` picks one page (the quickstart by default).

The quickstart's idioms: ``device = torch.accelerator.current_accelerator().type if
torch.accelerator.is_available() else "cpu"``; ``NeuralNetwork`` with ``nn.Flatten()`` and
``nn.Sequential`` of Linear/ReLU, ``.to(device)``; ``train(dataloader, model, loss_fn, optimizer)`` with
``size = len(dataloader.dataset)``, ``model.train()``, ``loss.backward(); optimizer.step();
optimizer.zero_grad()`` and ``loss, current = loss.item(), (batch + 1) * len(X)``; ``test`` with
``num_batches = len(dataloader)``, ``model.eval()``, ``test_loss += loss_fn(pred, y).item()`` and
``correct += (pred.argmax(1) == y).type(torch.float).sum().item()``; ``torch.save(model.state_dict(),
"model.pth")`` and ``model.load_state_dict(torch.load("model.pth", weights_only=True))``; a prediction
named by ``classes[pred[0].argmax(0)]`` (a list indexed by a 0-d tensor).
The tensors page: ``torch.tensor(data)``, ``torch.from_numpy``, ``torch.ones_like``, ``torch.rand_like(x_data,
dtype=torch.float)``, ``torch.rand(shape)`` of a tuple, ``tensor[..., -1]``, ``tensor[:, 1] = 0``, ``torch.cat(...,
dim=1)``, ``@`` / ``.matmul`` / ``torch.matmul(..., out=y3)``, ``torch.mul(..., out=z3)``, ``agg.item()``,
``tensor.add_(5)``, ``t.numpy()`` (vkml's copy, not a shared buffer: docs/interop.md, so it is read again after
``t.add_(1)``). The datasets page: a ``Dataset`` with ``transform`` / ``target_transform`` (the one-hot
``torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)``), ``torch.randint(len(data),
size=(1,)).item()``, ``next(iter(train_dataloader))``. The build-model page: ``nn.Softmax(dim=1)(logits)``,
``nn.Flatten()`` of a ``torch.rand(3, 8, 8)``, layers called alone, ``model.named_parameters()`` with
``param[:2]``. The autograd page: ``binary_cross_entropy_with_logits``, ``z.grad_fn``, ``w.grad``, ``z.requires_grad``
under ``torch.no_grad()``, ``z.detach()``, and the Jacobian-vector product ``out.backward(torch.ones_like(out),
retain_graph=True)`` twice (accumulating) then after ``inp.grad.zero_()``. The optimization page: ``train_loop`` /
``test_loop`` with hyperparameters and ``optim.SGD``; the save-load page: ``torch.save(model, "model.pth")`` and
``torch.load("model.pth", weights_only=False)``.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
from shim import DataLoader, nn, torch

PART = "quickstart"
SHUFFLE = True
BATCH_SIZE = 8
classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def make_images(n, seed):
    """Synthetic 8x8 'clothes': a class template (a bar at a class-dependent place) plus noise, in [0, 1]."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.uniform(0.0, 0.3, size=(n, 1, 8, 8)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, 0, label % 8, :] += 0.6
        images[i, 0, :, (label * 3) % 8] += 0.1 * (1 + label // 8)
    return np.clip(images, 0, 1), labels


class ClothesDataset(torch.utils.data.Dataset):
    """The datasets page's custom dataset: ``__len__``, ``__getitem__`` with ``transform`` and ``target_transform``."""

    def __init__(self, n, seed, transform=None, target_transform=None):
        self.images, self.img_labels = make_images(n, seed)
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.img_labels)

    def __getitem__(self, idx):
        image = torch.tensor(self.images[idx])
        label = int(self.img_labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
if device != "cpu":  # the comparison runs on the CPU in both libraries
    device = "cpu"


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def build():
    torch.manual_seed(0)
    return NeuralNetwork().to(device)


def loaders():
    training_data = ClothesDataset(48, seed=0)
    test_data = ClothesDataset(16, seed=1)
    train_dataloader = DataLoader(training_data, batch_size=BATCH_SIZE, shuffle=SHUFFLE)
    test_dataloader = DataLoader(test_data, batch_size=BATCH_SIZE)
    return train_dataloader, test_dataloader


def test(dataloader, model, loss_fn):
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


def quickstart(model, steps):
    train_dataloader, test_dataloader = loaders()
    for X, y in test_dataloader:
        shapes = [list(X.shape), str(y.dtype).split(".")[-1]]
        break
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)
    losses, logged = [], []

    def train(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            if len(losses) == steps:
                return
            X, y = X.to(device), y.to(device)
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss, current = loss.item(), (batch + 1) * len(X)
            losses.append(loss)
            logged.append(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")

    epochs = 0
    while len(losses) < steps:
        train(train_dataloader, model, loss_fn, optimizer)
        epochs += 1
    test_loss, correct = test(test_dataloader, model, loss_fn)

    folder = tempfile.mkdtemp()
    torch.save(model.state_dict(), os.path.join(folder, "model.pth"))
    model = NeuralNetwork().to(device)
    model.load_state_dict(torch.load(os.path.join(folder, "model.pth"), weights_only=True))
    model.eval()
    x, y = test_dataloader.dataset[0][0], test_dataloader.dataset[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
    return {
        "losses": losses,
        "logged": [line.split("[")[1] for line in logged],
        "shapes": shapes,
        "test": [test_loss, correct, epochs],
        "predicted": [predicted, actual],
    }


def tensors_page():
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    shape = (2, 3)
    rand_tensor = torch.rand(shape)
    ones_tensor = torch.ones(shape)
    zeros_tensor = torch.zeros(shape)
    tensor = torch.rand(3, 4)
    attributes = [list(tensor.shape), str(tensor.dtype).split(".")[-1], str(tensor.device)]
    if torch.accelerator.is_available() and device != "cpu":
        tensor = tensor.to(torch.accelerator.current_accelerator())
    tensor = torch.ones(4, 4)
    rows = [tensor[0].tolist(), tensor[:, 0].tolist(), tensor[..., -1].tolist()]
    tensor[:, 1] = 0
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    agg = tensor.sum()
    agg_item = agg.item()
    added = tensor.add_(5)
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    n_after = t.numpy()
    n2 = np.ones(5)
    t2 = torch.from_numpy(n2)
    np.add(n2, 1, out=n2)
    t2 = torch.from_numpy(n2)  # PyTorch's t2 sees the add through the shared buffer; vkml's copy is taken again
    return {
        "made": [x_data.tolist(), x_np.tolist(), x_ones.tolist(), x_rand.tolist(), rand_tensor.tolist()],
        "ones_zeros": [ones_tensor.tolist(), zeros_tensor.tolist()],
        "attributes": attributes,
        "rows": rows,
        "cat": [list(t1.shape), t1.tolist()],
        "products": [y1.tolist(), y2.tolist(), y3.tolist(), z1.tolist(), z2.tolist(), z3.tolist()],
        "agg": [agg_item, type(agg_item).__name__],
        "add_": [added is tensor, tensor.tolist()],
        "bridge": [len(n), list(n_after), t2.tolist()],
    }


def datasets_page():
    one_hot = lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)  # noqa: E731
    training_data = ClothesDataset(12, seed=2, transform=lambda x: x * 2 - 1, target_transform=one_hot)
    sample_idx = torch.randint(len(training_data), size=(1,)).item()
    img, label = training_data[sample_idx]
    train_dataloader = DataLoader(training_data, batch_size=4, shuffle=SHUFFLE)
    train_features, train_labels = next(iter(train_dataloader))
    first = train_features[0].squeeze()
    return {
        "sample": [sample_idx, img.sum().item(), label.tolist()],
        "batch": [list(train_features.size()), list(train_labels.size()), first.sum().item(), train_labels.tolist()],
    }


def build_model_page(model):
    X = torch.rand(1, 8, 8, device=device)
    logits = model(X)
    pred_probab = nn.Softmax(dim=1)(logits)
    y_pred = pred_probab.argmax(1)
    input_image = torch.rand(3, 8, 8)
    flatten = nn.Flatten()
    flat_image = flatten(input_image)
    layer1 = nn.Linear(in_features=8 * 8, out_features=20)
    hidden1 = layer1(flat_image)
    hidden1 = nn.ReLU()(hidden1)
    seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))
    logits2 = seq_modules(input_image)
    softmax = nn.Softmax(dim=1)
    pred_probab2 = softmax(logits2)
    structure = [f"Layer: {name} | Size: {param.size()}" for name, param in model.named_parameters()]
    firsts = [param[:2].tolist() for name, param in model.named_parameters()]
    return {
        "predicted": [y_pred.item(), pred_probab.tolist()],
        "flat": [list(flat_image.size()), list(hidden1.size()), hidden1.sum().item()],
        "sequential": pred_probab2.tolist(),
        "structure": [line.replace("vkml", "torch") for line in structure],
        "params": firsts,
    }


def autograd_page():
    x = torch.ones(5)
    y = torch.zeros(3)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    names = [type(z.grad_fn).__name__]
    loss.backward()
    grads = [w.grad.tolist(), b.grad.tolist()]
    flags = [z.requires_grad]
    with torch.no_grad():
        z = torch.matmul(x, w) + b
    flags.append(z.requires_grad)
    z = torch.matmul(x, w) + b
    z_det = z.detach()
    flags.append(z_det.requires_grad)
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    first = inp.grad.tolist()
    out.backward(torch.ones_like(out), retain_graph=True)
    second = inp.grad.tolist()
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    third = inp.grad.tolist()
    return {"loss": loss.item(), "names": names, "grads": grads, "flags": flags, "jvp": [first, second, third]}


def optimization_page(model, steps):
    learning_rate = 1e-1
    batch_size = 8
    epochs = 2
    train_dataloader, test_dataloader = loaders()
    train_dataloader = DataLoader(train_dataloader.dataset, batch_size=batch_size, shuffle=SHUFFLE)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    losses = []

    def train_loop(dataloader, model, loss_fn, optimizer):
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            if batch == steps:
                break
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())

    def test_loop(dataloader, model, loss_fn):
        return test(dataloader, model, loss_fn)

    results = []
    for _epoch in range(epochs):
        train_loop(train_dataloader, model, loss_fn, optimizer)
        results.append(test_loop(test_dataloader, model, loss_fn))
    folder = tempfile.mkdtemp()
    torch.save(model, os.path.join(folder, "model.pth"))
    loaded = torch.load(os.path.join(folder, "model.pth"), weights_only=False)
    X = test_dataloader.dataset[3][0]
    with torch.no_grad():
        same = torch.equal(loaded(X), model(X))
    return {"losses": losses[:steps], "results": results, "reloaded": [type(loaded).__name__, same]}


def train(model, steps=3):
    if PART == "quickstart":
        return quickstart(model, steps)
    torch.manual_seed(1)
    if PART == "tensors":
        result = tensors_page()
    elif PART == "datasets":
        result = datasets_page()
    elif PART == "build_model":
        result = build_model_page(model)
    elif PART == "autograd":
        result = autograd_page()
    else:
        return optimization_page(model, steps)
    result["losses"] = quickstart(model, steps)["losses"]
    return result


if __name__ == "__main__":
    for PART in ("quickstart", "tensors", "datasets", "build_model", "autograd", "optimization"):
        print(PART, train(build(), steps=4))
