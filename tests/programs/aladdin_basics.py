"""The Basics tutorials of Aladdin Persson's Machine-Learning-Collection (ML/Pytorch/Basics), at tiny sizes on
synthetic MNIST-like images. ``PART`` picks: ``"fullynet"`` (pytorch_simple_fullynet with
pytorch_loadsave, pytorch_lr_ratescheduler, pytorch_init_weights and custom_dataset), ``"rnn"`` (pytorch_rnn_gru_lstm
and pytorch_bidirectional_lstm, ``RNN_TYPE`` "rnn", "gru", "lstm" or "blstm") or ``"tensor_basics"``
(pytorch_tensorbasics, then the fully connected net).

Idioms: ``class NN(nn.Module)`` with ``F.relu(self.fc1(x))``; ``data.reshape(data.shape[0], -1)``; the
``check_accuracy`` loop (``model.eval()``, ``with torch.no_grad()``, ``_, predictions = scores.max(1)``,
``num_correct += (predictions == y).sum()``, ``num_samples += predictions.size(0)``, ``model.train()``, ``return
num_correct / num_samples`` printed by ``{...*100:.2f}``); ``save_checkpoint``/``load_checkpoint`` of
``{"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}`` every few epochs and
``load_checkpoint(torch.load("my_checkpoint.pth.tar"), model, optimizer)``; ``ReduceLROnPlateau(optimizer,
factor=0.1, patience=...)`` stepped with ``mean_loss = sum(losses) / len(losses)``; ``initialize_weights``
over ``self.modules()`` by ``nn.init.kaiming_uniform_`` and ``nn.init.constant_``; a custom ``Dataset`` reading
a CSV of file names and labels with ``y_label = torch.tensor(int(...))`` and ``torch.utils.data.random_split(
dataset, [n, m])``; ``torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)``; RNN/GRU/LSTM over
image rows (``data.squeeze(1)``, ``h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)``,
``out.reshape(out.shape[0], -1)`` into ``nn.Linear(hidden_size * sequence_length, ...)``, ``self.lstm(x, (h0,
c0))``) and the BiLSTM's ``self.fc(out[:, -1, :])``; the tensor basics: dtype/device/shape/requires_grad
prints, ``torch.empty(size=(1, 5)).normal_(mean=0, std=1)``, ``uniform_(0, 1)``, ``torch.diag``, ``.bool()``/
``.short()``/``.long()``/``.half()``/``.float()``/``.double()`` printed, ``torch.add(x, y, out=z1)`` into a float
``torch.empty(3)``, ``torch.true_divide``, ``t.add_(x)``/``t += x``, ``matrix_power(3)``, ``torch.dot``,
``torch.bmm``, broadcasting ``x1 ** x2``, ``torch.max(x, dim=0)``, ``torch.sort(y, dim=0, descending=False)``,
``torch.clamp(x, min=0)``, ``torch.any``/``torch.all``, ``x[0, 0] = 100``, ``x[indices]``, ``x[rows, cols]``,
``x[(x < 2) | (x > 8)]``, ``x[x.remainder(2) == 0]``, ``torch.where(x > 5, x, x * 2)``, ``.unique()``,
``ndimension()``, ``numel()``, ``x_3x3.t()`` with ``is_contiguous()`` and ``contiguous().view(9)``,
``torch.cat``, ``torch.chunk(x, chunks=2, dim=1)``, ``unsqueeze``/``squeeze``.
"""

from __future__ import annotations

import builtins
import csv
import os
import tempfile

import numpy as np
from shim import DataLoader, F, nn, optim, torch

PART = "fullynet"  # or "rnn", "tensor_basics"
RNN_TYPE = "rnn"  # or "gru", "lstm", "blstm"
SHUFFLE = True
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Hyperparameters (MNIST's 28x28 shrunk to 6x6)
side = 6
input_size = side * side
num_classes = 4
learning_rate = 1e-3
batch_size = 4
num_epochs = 3
# the RNN's: the image's rows are the sequence
sequence_length = side
hidden_size = 5
num_layers = 2


class NN(nn.Module):
    def __init__(self, input_size, num_classes):
        super(NN, self).__init__()  # noqa: UP008
        self.fc1 = nn.Linear(input_size, 10)
        self.fc2 = nn.Linear(10, num_classes)
        self.initialize_weights()

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return x

    def initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(m.weight)
                nn.init.constant_(m.bias, 0)


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN, self).__init__()  # noqa: UP008
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        if RNN_TYPE == "gru":
            self.rnn = nn.GRU(input_size, hidden_size, num_layers, batch_first=True)
        else:
            self.rnn = nn.RNN(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size * sequence_length, num_classes)

    def forward(self, x):
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.rnn(x, h0)
        out = out.reshape(out.shape[0], -1)

        # Decode the hidden state of the last time step
        out = self.fc(out)
        return out


class RNN_LSTM(nn.Module):  # noqa: N801
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN_LSTM, self).__init__()  # noqa: UP008
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size * sequence_length, num_classes)

    def forward(self, x):
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size)
        out = out.reshape(out.shape[0], -1)

        # Decode the hidden state of the last time step
        out = self.fc(out)
        return out


class BRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BRNN, self).__init__()  # noqa: UP008
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, num_classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)

        out, _ = self.lstm(x, (h0, c0))
        out = self.fc(out[:, -1, :])

        return out


class MnistLikeDataset(torch.utils.data.Dataset):
    """custom_dataset.py's ``CatsAndDogsDataset``: a CSV of image file names and labels, images read per item."""

    def __init__(self, csv_file, root_dir, transform=None):
        with open(csv_file) as f:
            self.annotations = list(csv.reader(f))
        self.root_dir = root_dir
        self.transform = transform

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        img_path = os.path.join(self.root_dir, self.annotations[index][0])
        image = torch.tensor(np.load(img_path))
        y_label = torch.tensor(int(self.annotations[index][1]))

        if self.transform:
            image = self.transform(image)

        return (image, y_label)


def write_dataset(folder, n=24):
    rng = np.random.RandomState(0)
    rows = []
    for i in range(n):
        label = i % num_classes
        image = rng.standard_normal((1, side, side)).astype(np.float32)
        image[0, label] += 2.0  # the class is a brighter row
        np.save(os.path.join(folder, f"img{i}.npy"), image)
        rows.append([f"img{i}.npy", str(label)])
    with open(os.path.join(folder, "labels.csv"), "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return os.path.join(folder, "labels.csv")


def build():
    torch.manual_seed(0)
    if PART != "rnn":
        return NN(input_size=input_size, num_classes=num_classes).to(device)
    if RNN_TYPE == "lstm":
        return RNN_LSTM(side, hidden_size, num_layers, num_classes).to(device)
    if RNN_TYPE == "blstm":
        return BRNN(side, hidden_size, num_layers, num_classes).to(device)
    return RNN(side, hidden_size, num_layers, num_classes).to(device)


def save_checkpoint(state, filename="my_checkpoint.pth.tar"):
    print("=> Saving checkpoint")
    torch.save(state, filename)


def load_checkpoint(checkpoint, model, optimizer):
    print("=> Loading checkpoint")
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])


def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device)
            y = y.to(device=device)
            x = x.squeeze(1) if PART == "rnn" else x.reshape(x.shape[0], -1)

            scores = model(x)
            _, predictions = scores.max(1)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)

    model.train()
    return num_correct / num_samples


def tensor_basics():
    """The tutorial's prints, kept as strings with the library's name taken out (``torch.float32`` and
    ``torch.Size`` are spelt ``vkml.float32`` and ``vkml.Size`` under vkml)."""

    def str(value):  # noqa: A001
        return builtins.str(value).replace(torch.__name__ + ".", "")

    seen = {}
    # Initializing Tensor
    my_tensor = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.float32, device=device, requires_grad=True)
    seen["init"] = [str(my_tensor), str(my_tensor.dtype), str(my_tensor.device), str(my_tensor.shape)]
    seen["requires_grad"] = my_tensor.requires_grad

    # Other common initialization methods
    x = torch.empty(size=(3, 3))
    seen["empty"] = list(x.shape)
    seen["zeros"] = torch.zeros((3, 3)).tolist()
    torch.manual_seed(3)
    seen["rand"] = torch.rand((3, 3)).tolist()
    seen["eye"] = torch.eye(5, 5).tolist()
    seen["arange"] = torch.arange(start=0, end=5, step=1).tolist()
    seen["linspace"] = torch.linspace(start=0.1, end=1, steps=10).tolist()
    seen["normal"] = torch.empty(size=(1, 5)).normal_(mean=0, std=1).tolist()
    seen["uniform"] = torch.empty(size=(1, 5)).uniform_(0, 1).tolist()
    seen["diag"] = torch.diag(torch.ones(3)).tolist()

    # How to make initialized tensors to other types (int, float, double)
    tensor = torch.arange(4)  # [0, 1, 2, 3] Initialized as int64 by default
    converted = [
        f"Converted Boolean: {tensor.bool()}",  # Converted to Boolean: 1 if nonzero
        f"Converted int16 {tensor.short()}",  # Converted to int16
        f"Converted int64 {tensor.long()}",  # Converted to int64 (This one is very important, used super often)
        f"Converted float16 {tensor.half()}",  # Converted to float16
        f"Converted float32 {tensor.float()}",  # Converted to float32 (This one is very important, used super often)
        f"Converted float64 {tensor.double()}",  # Converted to float64
    ]
    seen["converted"] = [str(line) for line in converted]

    # Array to Tensor conversion and vice-versa
    np_array = np.zeros((5, 5))
    tensor = torch.from_numpy(np_array)
    np_array_again = tensor.numpy()  # noqa: F841
    seen["numpy"] = str(tensor.dtype)

    # Tensor Math & Comparison Operations
    x = torch.tensor([1, 2, 3])
    y = torch.tensor([9, 8, 7])
    # -- Addition --
    z1 = torch.empty(3)
    torch.add(x, y, out=z1)
    z2 = torch.add(x, y)
    z = x + y
    seen["add"] = [str(z1), str(z2), str(z)]
    z = x - y
    # -- Division (A bit clunky) --
    z = torch.true_divide(x, y)  # Will do element wise division if of equal shape
    seen["true_divide"] = str(z)
    # -- Inplace Operations --
    t = torch.zeros(3)
    t.add_(x)  # Whenever we have operation followed by _ it will mutate the tensor in place
    t += x  # Also inplace: t = t + x is not inplace, bit confusing.
    seen["inplace"] = str(t)
    # -- Exponentiation (Element wise if of equal shape) --
    z = x.pow(2)  # z = [1, 4, 9]
    z = x**2  # z = [1, 4, 9]
    seen["pow"] = str(z)
    # -- Simple Comparison --
    seen["compare"] = [str(x > 0), str(x < 0)]
    # -- Matrix Multiplication --
    x1 = torch.rand((2, 5))
    x2 = torch.rand((5, 3))
    x3 = torch.mm(x1, x2)  # Matrix multiplication of x1 and x2, out shape: 2x3
    x3 = x1.mm(x2)  # Similar as line above
    seen["mm"] = x3.tolist()
    # -- Matrix Exponentiation --
    matrix_exp = torch.rand(5, 5)
    seen["matrix_power"] = matrix_exp.matrix_power(3).tolist()  # is same as matrix_exp (mm) matrix_exp (mm) matrix_exp
    # -- Element wise Multiplication --
    z = x * y  # z = [9, 16, 21] = [1*9, 2*8, 3*7]
    # -- Dot product --
    z = torch.dot(x, y)  # Dot product, in this case z = 1*9 + 2*8 + 3*7
    seen["dot"] = str(z)
    # -- Batch Matrix Multiplication --
    batch = 4
    n, m, p = 3, 5, 2
    tensor1 = torch.rand((batch, n, m))
    tensor2 = torch.rand((batch, m, p))
    out_bmm = torch.bmm(tensor1, tensor2)  # Will be shape: (b x n x p)
    seen["bmm"] = out_bmm.sum().item()
    # -- Example of broadcasting --
    x1 = torch.rand((5, 5))
    x2 = torch.ones((1, 5))
    z = x1 - x2  # Shape of z is 5x5: How? The 1x5 vector (x2) is subtracted for each row in the 5x5 (x1)
    z = x1**x2  # Shape of z is 5x5: How? Broadcasting! Element wise exponentiation for every row
    seen["broadcast"] = z.tolist()
    # Other useful tensor operations
    sum_x = torch.sum(x, dim=0)  # Sum of x across dim=0 (which would be each column if it's 2D)
    values, indices = torch.max(x, dim=0)  # Can also do x.max(dim=0)
    values, indices = torch.min(x, dim=0)  # Can also do x.min(dim=0)
    abs_x = torch.abs(x)  # Returns x where abs function has been applied to every element
    z = torch.argmax(x, dim=0)  # Gets index of the maximum value
    z = torch.argmin(x, dim=0)  # Gets index of the minimum value
    mean_x = torch.mean(x.float(), dim=0)  # mean requires x to be float
    z = torch.eq(x, y)  # Element wise comparison, in this case z = [False, False, False]
    sorted_y, indices = torch.sort(y, dim=0, descending=False)
    z = torch.clamp(x, min=0)
    seen["reductions"] = [str(v) for v in (sum_x, values, indices, abs_x, mean_x, z, sorted_y)]
    x = torch.tensor([1, 0, 1, 1, 1], dtype=torch.bool)  # True/False values
    z = torch.any(x)  # will return True, can also do x.any() instead of torch.any(x)
    z2 = torch.all(x)  # will return False (since not all are True), can also do x.all() instead of torch.all()
    seen["any_all"] = [str(z), str(z2)]

    # Tensor Indexing
    batch_size = 10
    features = 25
    x = torch.rand((batch_size, features))
    seen["index_shapes"] = [str(x[0].shape), str(x[:, 0].shape), str(x[2, 0:10].shape)]
    x[0, 0] = 100
    seen["assigned"] = x[0, :3].tolist()
    # Fancy Indexing
    x = torch.arange(10)
    indices = [2, 5, 8]
    seen["fancy"] = str(x[indices])  # x[indices] = [2, 5, 8]
    x = torch.rand((3, 5))
    rows = torch.tensor([1, 0])
    cols = torch.tensor([4, 0])
    seen["rows_cols"] = x[rows, cols].tolist()  # Gets second row fifth column and first row first column
    # More advanced indexing
    x = torch.arange(10)
    seen["advanced"] = [
        str(x[(x < 2) | (x > 8)]),  # will be [0, 1, 9]
        str(x[x.remainder(2) == 0]),  # will be [0, 2, 4, 6, 8]
        str(torch.where(x > 5, x, x * 2)),  # gives [0, 2, 4, 6, 8, 10, 6, 7, 8, 9], all values x > 5 yield x, else x*2
    ]
    x = torch.tensor([0, 0, 1, 2, 2, 3, 4]).unique()  # x = [0, 1, 2, 3, 4]
    seen["unique"] = str(x)
    seen["ndimension"] = x.ndimension()
    x = torch.arange(10)
    seen["numel"] = x.numel()

    # Tensor Reshaping
    x = torch.arange(9)
    x_3x3 = x.view(3, 3)
    x_3x3 = x.reshape(3, 3)
    y = x_3x3.t()
    seen["contiguous"] = [y.is_contiguous(), str(y.contiguous().view(9))]
    x1 = torch.rand(2, 5)
    x2 = torch.rand(2, 5)
    seen["cat"] = [str(torch.cat((x1, x2), dim=0).shape), str(torch.cat((x1, x2), dim=1).shape)]
    z = x1.view(-1)
    batch = 6
    x = torch.rand((batch, 2, 5))
    z = x.view(batch, -1)
    z = x.permute(0, 2, 1)
    seen["permute"] = str(z.shape)
    z = torch.chunk(x, chunks=2, dim=1)
    seen["chunk"] = [str(z[0].shape), str(z[1].shape)]
    x = torch.arange(10)  # Shape is [10], let's say we want to add an additional so we have [1, 10]
    seen["unsqueeze"] = [str(x.unsqueeze(0).shape), str(x.unsqueeze(1).shape)]
    x = torch.arange(10).unsqueeze(0).unsqueeze(1)  # Shape is 1x1x10
    z = x.squeeze(1)  # can also do .squeeze(0) both returns 1x10
    seen["squeeze"] = str(z.shape)
    return seen


def train(model, steps=3):
    record = {"losses": []}
    if PART == "tensor_basics":
        record["basics"] = tensor_basics()
    with tempfile.TemporaryDirectory() as folder:
        dataset = MnistLikeDataset(csv_file=write_dataset(folder), root_dir=folder)
        train_set, test_set = torch.utils.data.random_split(
            dataset, [8, 16], generator=torch.Generator().manual_seed(0)
        )
        record["split"] = [train_set.indices, test_set.indices]
        train_loader = DataLoader(dataset=train_set, batch_size=batch_size, shuffle=SHUFFLE)
        test_loader = DataLoader(dataset=test_set, batch_size=batch_size, shuffle=SHUFFLE)

        # Loss and optimizer
        criterion = nn.CrossEntropyLoss()
        optimizer = optim.Adam(model.parameters(), lr=learning_rate)
        # Define Scheduler
        scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.1, patience=0)
        path = os.path.join(folder, "my_checkpoint.pth.tar")

        # Train Network
        step = 0
        for epoch in range(num_epochs):
            losses = []
            if epoch % 2 == 0:
                checkpoint = {"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}
                # Try save checkpoint
                save_checkpoint(checkpoint, filename=path)
            if epoch == 1:
                load_checkpoint(torch.load(path), model, optimizer)  # back to epoch 0's weights
            for batch_idx, (data, targets) in enumerate(train_loader):  # noqa: B007
                if step == steps:
                    break
                step += 1
                # Get data to cuda if possible
                data = data.to(device=device)
                targets = targets.to(device=device)

                # Get to correct shape
                data = data.squeeze(1) if PART == "rnn" else data.reshape(data.shape[0], -1)

                # forward
                scores = model(data)
                loss = criterion(scores, targets)
                losses.append(loss.item())

                # backward
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)

                # gradient descent or adam step
                optimizer.step()
                record["losses"].append(loss.item())

            if losses:
                mean_loss = sum(losses) / len(losses)
                # After each epoch do scheduler.step, note in this scheduler we need to send
                # in loss for that epoch!
                scheduler.step(mean_loss)
                record.setdefault("lr", []).append(optimizer.param_groups[0]["lr"])

        record["accuracy"] = [
            f"Accuracy on training set: {check_accuracy(train_loader, model) * 100:.2f}",
            f"Accuracy on test set: {check_accuracy(test_loader, model) * 100:.2f}",
        ]
    return record


if __name__ == "__main__":
    print(train(build()))
