"""The official "Introduction to PyTorch - YouTube Series" (beginner_source/introyt/): tensors, autograd,
building models and training, at a tiny size on synthetic 12x12 "garments" in place of FashionMNIST. ``PART``
picks one page (training by default); each keeps what the page prints, compared as text where PyTorch's
printing is exact.

The tensors page: ``torch.empty(3, 4)`` (its shape), ``torch.manual_seed(1729)`` repeated for equal draws,
``torch.empty_like`` / ``zeros_like`` / ``ones_like`` / ``rand_like``, ``torch.tensor`` of tuples, ``dtype=torch.int16``,
``torch.rand((2, 3), dtype=torch.float64) * 20.`` then ``.to(torch.int32)``, ``twos ** torch.tensor([[1, 2], [3,
4]])``, broadcasting over ``torch.rand(3, 1)`` and ``torch.rand(1, 2)``, ``abs``/``ceil``/``floor``/``clamp``,
``torch.asin(torch.sin(angles))``, ``torch.bitwise_xor``, ``torch.eq``, ``torch.max(d).item()``, ``std``,
``prod``, ``torch.unique``, ``torch.linalg.cross``, ``torch.linalg.matmul``, ``torch.linalg.svd``, ``a.sin_()``,
``b.mul_(b)``, ``torch.matmul(a, b, out=c)`` returning ``c`` itself, ``torch.rand(2, 2, out=c)``, ``clone`` and
``a[0][1] = 561``, ``a.detach().clone()``, ``unsqueeze_(0)``, ``squeeze(0)``, ``torch.reshape(output3d, (6 * 20 *
20,))``. The autograd page: ``torch.linspace(0., 2. * math.pi, steps=25, requires_grad=True)``, ``d.grad_fn`` and
``d.grad_fn.next_functions`` walked to the leaf's ``AccumulateGrad``, ``a.grad`` after ``out.backward()``; the
``TinyModel`` with ``(ideal_output - prediction).pow(2).sum()``, ``model.layer2.weight.grad[0][0:10]``,
``optimizer.zero_grad(set_to_none=False)``; ``@torch.no_grad()`` on a function; ``torch.sin_(a)`` on a leaf
refused with PyTorch's RuntimeError; ``while y.data.norm() < 1000: y = y * 2`` then ``y.backward(v)``;
``torch.autograd.functional.jacobian(exp_adder, inputs)`` and ``torch.autograd.functional.vjp``. The models
page: ``print(tinymodel)``, ``print(tinymodel.linear2)``, a parameter list, ``torch.nn.MaxPool2d(3)`` on
``torch.rand(1, 6, 6)``, ``torch.nn.BatchNorm1d(4)`` of ``torch.rand(1, 4, 4) * 20 + 5`` and its ``mean()``,
``torch.nn.Dropout(p=0.4)`` in eval, the LSTMTagger. The training page: ``GarmentClassifier``'s
``x.view(-1, 16 * 4 * 4)``; the loss on ``dummy_outputs`` and ``dummy_labels``; ``train_one_epoch`` with
``running_loss``, ``last_loss`` every few batches and ``tb_x = epoch_index * len(training_loader) + i + 1``;
``model.train(True)``; validation by ``running_vloss += vloss`` (a tensor) and ``avg_vloss = running_vloss / (i +
1)`` printed by ``'LOSS train {} valid {}'.format(avg_loss, avg_vloss)``; ``best_vloss = 1_000_000.`` compared
with a tensor; ``model_path = 'model_{}_{}'.format(timestamp, epoch_number)``.
"""

from __future__ import annotations

import math
import os
import re
import tempfile

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, torch

PART = "training"
SHUFFLE = True
DROPOUT = 0.4


def shown(*values):
    """What ``print(*values)`` writes, with PyTorch's library name and without object addresses."""
    text = " ".join(str(value) for value in values).replace("vkml", "torch")
    return re.sub(r" at 0x[0-9a-f]+", "", text)


class TinyModel(torch.nn.Module):
    def __init__(self):
        super(TinyModel, self).__init__()  # noqa: UP008

        self.linear1 = torch.nn.Linear(100, 20)
        self.activation = torch.nn.ReLU()
        self.linear2 = torch.nn.Linear(20, 10)
        self.softmax = torch.nn.Softmax(dim=1)

    def forward(self, x):
        x = self.linear1(x)
        x = self.activation(x)
        x = self.linear2(x)
        x = self.softmax(x)
        return x


class AutogradTinyModel(torch.nn.Module):
    """The autograd page's TinyModel (no softmax)."""

    def __init__(self):
        super().__init__()
        self.layer1 = torch.nn.Linear(100, 20)
        self.relu = torch.nn.ReLU()
        self.layer2 = torch.nn.Linear(20, 10)

    def forward(self, x):
        x = self.layer1(x)
        x = self.relu(x)
        x = self.layer2(x)
        return x


class GarmentClassifier(nn.Module):
    def __init__(self):
        super(GarmentClassifier, self).__init__()  # noqa: UP008
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 1 * 1, 32)
        self.fc2 = nn.Linear(32, 24)
        self.fc3 = nn.Linear(24, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 1 * 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


class LSTMTagger(torch.nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()  # noqa: UP008
        self.hidden_dim = hidden_dim

        self.word_embeddings = torch.nn.Embedding(vocab_size, embedding_dim)

        # The LSTM takes word embeddings as inputs, and outputs hidden states
        # with dimensionality hidden_dim.
        self.lstm = torch.nn.LSTM(embedding_dim, hidden_dim)

        # The linear layer that maps from hidden state space to tag space
        self.hidden2tag = torch.nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space, dim=1)
        return tag_scores


class Models(nn.Module):
    def __init__(self):
        super().__init__()
        self.garments = GarmentClassifier()
        self.tiny = TinyModel()
        self.autograd_tiny = AutogradTinyModel()
        self.tagger = LSTMTagger(6, 6, 8, 3)


def build():
    torch.manual_seed(0)
    return Models()


def tensors_page():
    printed = []
    x = torch.empty(3, 4)
    printed.append(shown(type(x).__name__, x.shape))
    zeros = torch.zeros(2, 3)
    ones = torch.ones(2, 3)
    torch.manual_seed(1729)
    random = torch.rand(2, 3)
    printed += [shown(zeros), shown(ones), shown(random)]
    torch.manual_seed(1729)
    random1 = torch.rand(2, 3)
    random2 = torch.rand(2, 3)
    torch.manual_seed(1729)
    random3 = torch.rand(2, 3)
    random4 = torch.rand(2, 3)
    printed.append(shown(torch.equal(random1, random3), torch.equal(random2, random4), random2))
    x = torch.empty(2, 2, 3)
    empty_like_x = torch.empty_like(x)
    zeros_like_x = torch.zeros_like(x)
    ones_like_x = torch.ones_like(x)
    rand_like_x = torch.rand_like(x)
    printed.append(shown(empty_like_x.shape, zeros_like_x, ones_like_x, rand_like_x))
    some_constants = torch.tensor([[3.1415926, 2.71828], [1.61803, 0.0072897]])
    some_integers = torch.tensor((2, 3, 5, 7, 11, 13, 17, 19))
    more_integers = torch.tensor(((2, 4, 6), [3, 6, 9]))
    printed += [shown(some_constants), shown(some_integers), shown(more_integers)]
    a = torch.ones((2, 3), dtype=torch.int16)
    b = torch.rand((2, 3), dtype=torch.float64) * 20.0
    c = b.to(torch.int32)
    printed += [shown(a), shown(b), shown(c)]
    ones = torch.zeros(2, 2) + 1
    twos = torch.ones(2, 2) * 2
    threes = (torch.ones(2, 2) * 7 - 1) / 2
    fours = twos**2
    sqrt2s = twos**0.5
    printed += [shown(ones), shown(twos), shown(threes), shown(fours), shown(sqrt2s)]
    powers2 = twos ** torch.tensor([[1, 2], [3, 4]])
    fives = ones + fours
    dozens = threes * fours
    printed += [shown(powers2), shown(fives), shown(dozens)]
    rand = torch.rand(2, 4)
    doubled = rand * (torch.ones(1, 4) * 2)
    printed += [shown(rand), shown(doubled)]
    a = torch.ones(4, 3, 2)
    b = a * torch.rand(3, 2)  # 3rd & 2nd dims identical to a, dim 1 absent
    c = a * torch.rand(3, 1)  # 3rd dim = 1, 2nd dim identical to a
    d = a * torch.rand(1, 2)  # 3rd dim identical to a, 2nd dim = 1
    printed += [shown(b), shown(c), shown(d)]
    a = torch.rand(2, 4) * 2 - 1
    printed += [shown(torch.abs(a)), shown(torch.ceil(a)), shown(torch.floor(a)), shown(torch.clamp(a, -0.5, 0.5))]
    angles = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
    sines = torch.sin(angles)
    inverses = torch.asin(sines)
    numbers = [sines.tolist(), inverses.tolist()]
    b = torch.tensor([1, 5, 11])
    c = torch.tensor([2, 7, 10])
    printed.append(shown(torch.bitwise_xor(b, c)))
    d = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = torch.ones(1, 2)  # many comparison ops support broadcasting!
    printed.append(shown(torch.eq(d, e)))  # returns a tensor of type bool
    printed += [shown(torch.max(d)), shown(torch.max(d).item()), shown(torch.mean(d)), shown(torch.std(d))]
    printed += [shown(torch.prod(d)), shown(torch.unique(torch.tensor([1, 2, 1, 2, 1, 2])))]
    v1 = torch.tensor([1.0, 0.0, 0.0])  # x unit vector
    v2 = torch.tensor([0.0, 1.0, 0.0])  # y unit vector
    m1 = torch.rand(2, 2)  # random matrix
    m2 = torch.tensor([[3.0, 0.0], [0.0, 3.0]])  # three times identity matrix
    printed.append(shown(torch.linalg.cross(v2, v1)))  # negative of z unit vector (v1 x v2 == -v2 x v1)
    m3 = torch.linalg.matmul(m1, m2)
    printed.append(shown(m3))  # 3 times m1
    u, s, vh = torch.linalg.svd(m3)
    numbers.append([s.tolist(), (u @ torch.diag(s) @ vh).tolist()])
    a = torch.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
    numbers.append([torch.sin(a).tolist(), a.tolist()])
    a.sin_()
    numbers.append(a.tolist())
    a = torch.ones(2, 2)
    b = torch.rand(2, 2)
    a.add_(b)
    b.mul_(b)
    printed += [shown(a), shown(b)]
    a = torch.rand(2, 2)
    b = torch.rand(2, 2)
    c = torch.zeros(2, 2)
    old_id = id(c)
    d = torch.matmul(a, b, out=c)
    printed.append(shown(c, c is d, id(c) == old_id))
    torch.rand(2, 2, out=c)
    printed.append(shown(c, id(c) == old_id))
    a = torch.ones(2, 2)
    b = a.clone()
    printed.append(shown(b is not a, torch.eq(a, b)))
    a[0][1] = 561  # we change a...
    printed.append(shown(a, b))
    a = torch.rand(2, 2, requires_grad=True)
    b = a.clone()
    c = a.detach().clone()
    printed += [shown(b), shown(c)]
    a = torch.rand(3, 22, 22)
    b = a.unsqueeze(0)
    c = torch.rand(1, 1, 1, 1, 1)
    d = torch.rand(1, 20)
    e = d.squeeze(0)
    printed.append(shown(b.shape, c, d.shape, e.shape))
    batch_me = torch.rand(3, 22, 22)
    batch_me.unsqueeze_(0)
    output3d = torch.rand(6, 20, 20)
    input1d = output3d.reshape(6 * 20 * 20)
    printed.append(shown(batch_me.shape, input1d.shape, torch.reshape(output3d, (6 * 20 * 20,)).shape))
    numpy_array = np.ones((2, 3))
    pytorch_tensor = torch.from_numpy(numpy_array)
    printed.append(shown(pytorch_tensor))
    pytorch_rand = torch.rand(2, 3)
    numpy_rand = pytorch_rand.numpy()
    numbers.append(numpy_rand.tolist())
    return printed, numbers


def autograd_page(model):
    printed = []
    a = torch.linspace(0.0, 2.0 * math.pi, steps=25, requires_grad=True)
    b = torch.sin(a)
    c = 2 * b
    d = c + 1
    out = d.sum()
    printed.append(shown("d:", d.grad_fn))
    printed.append(shown(d.grad_fn.next_functions))
    printed.append(shown(d.grad_fn.next_functions[0][0].next_functions))
    printed.append(shown(d.grad_fn.next_functions[0][0].next_functions[0][0].next_functions))
    printed.append(shown("c:", c.grad_fn, "b:", b.grad_fn, "a:", a.grad_fn))
    out.backward()
    numbers = [a.grad.tolist()]

    BATCH_SIZE = 4
    some_input = torch.randn(BATCH_SIZE, 100, requires_grad=False)
    ideal_output = torch.randn(BATCH_SIZE, 10, requires_grad=False)
    printed.append(shown(model.layer2.weight.grad))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    prediction = model(some_input)
    loss = (ideal_output - prediction).pow(2).sum()
    numbers.append(loss.item())
    loss.backward()
    numbers.append(model.layer2.weight[0][0:10].tolist())
    numbers.append(model.layer2.weight.grad[0][0:10].tolist())
    optimizer.step()
    numbers.append(model.layer2.weight[0][0:10].tolist())
    optimizer.zero_grad(set_to_none=False)
    printed.append(shown(model.layer2.weight.grad[0][0:10]))

    a = torch.ones(2, 3, requires_grad=True) * 2
    b = torch.ones(2, 3, requires_grad=True) * 3
    c1 = a + b
    with torch.no_grad():
        c2 = a + b

    def add_tensors1(x, y):
        return x + y

    @torch.no_grad()
    def add_tensors2(x, y):
        return x + y

    c3 = a * b
    printed.append(shown(c1.requires_grad, c2.requires_grad, c3.requires_grad))
    printed.append(shown(add_tensors1(a, b).requires_grad, add_tensors2(a, b).requires_grad))
    x = torch.rand(5, requires_grad=True)
    y = x.detach()
    printed.append(shown(x.requires_grad, y.requires_grad))
    a = torch.linspace(0.0, 2.0 * math.pi, steps=25, requires_grad=True)
    try:
        torch.sin_(a)
        printed.append("no error")
    except RuntimeError as error:
        printed.append(shown(error))

    x = torch.randn(3, requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)  # stand-in for gradients
    y.backward(v)
    numbers.append([y.tolist(), x.grad.tolist()])

    def exp_adder(x, y):
        return 2 * x.exp() + 3 * y

    inputs = (torch.rand(1), torch.rand(1))  # arguments for the function
    jacobians = torch.autograd.functional.jacobian(exp_adder, inputs)
    numbers.append([j.tolist() for j in jacobians])
    inputs = (torch.rand(3), torch.rand(3))  # arguments for the function
    jacobians = torch.autograd.functional.jacobian(exp_adder, inputs)
    numbers.append([j.tolist() for j in jacobians])

    def do_some_doubling(x):
        y = x * 2
        while y.data.norm() < 1000:
            y = y * 2
        return y

    inputs = torch.randn(3)
    my_gradients = torch.tensor([0.1, 1.0, 0.0001])
    output, vjp = torch.autograd.functional.vjp(do_some_doubling, inputs, v=my_gradients)
    numbers.append([output.tolist(), vjp.tolist()])
    return printed, numbers


def models_page(tinymodel, tagger):
    printed = ["The model:", shown(tinymodel), "\n\nJust one layer:", shown(tinymodel.linear2)]
    numbers = [[list(param.shape) for param in tinymodel.parameters()]]
    for param in tinymodel.linear2.parameters():
        numbers.append(param.tolist())
    lin = torch.nn.Linear(3, 2)
    x = torch.rand(1, 3)
    y = lin(x)
    numbers.append([x.tolist(), y.tolist()])
    printed.append(shown(next(iter(lin.parameters())).shape))
    numbers.append(tinymodel(torch.rand(2, 100)).tolist())
    my_tensor = torch.rand(1, 6, 6)
    maxpool_layer = torch.nn.MaxPool2d(3)
    numbers.append([my_tensor.tolist(), maxpool_layer(my_tensor).tolist()])
    my_tensor = torch.rand(1, 4, 4) * 20 + 5
    norm_layer = torch.nn.BatchNorm1d(4)
    normed_tensor = norm_layer(my_tensor)
    numbers.append([normed_tensor.tolist(), normed_tensor.mean().item()])
    my_tensor = torch.rand(1, 4, 4)
    dropout = torch.nn.Dropout(p=DROPOUT)
    dropout.eval()
    printed.append(shown(torch.equal(dropout(my_tensor), my_tensor)))
    sentence = torch.tensor([0, 3, 5, 7], dtype=torch.long)
    with torch.no_grad():
        numbers.append(tagger(sentence).tolist())
    return printed, numbers


def garments(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0.0, 0.3, size=(n, 1, 12, 12)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, 0, label : label + 3, 2:10] += 1.0
    return TensorDataset(torch.tensor(images), torch.tensor(labels))


def training_page(model, steps):
    training_loader = DataLoader(garments(4 * steps, 0), batch_size=4, shuffle=SHUFFLE)
    validation_loader = DataLoader(garments(8, 1), batch_size=4, shuffle=False)
    loss_fn = torch.nn.CrossEntropyLoss()
    # NB: Loss functions expect data in batches, so we're creating batches of 4
    # Represents the model's confidence in each of the 10 classes for a given input
    dummy_outputs = torch.rand(4, 10)
    # Represents the correct class among the 10 being tested
    dummy_labels = torch.tensor([1, 5, 3, 7])
    loss = loss_fn(dummy_outputs, dummy_labels)
    printed = [shown("Total loss for this batch: {}".format(loss.item()))]  # noqa: UP032
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses, reports = [], []

    def train_one_epoch(epoch_index):
        running_loss = 0.0
        last_loss = 0.0

        # Here, we use enumerate(training_loader) instead of
        # iter(training_loader) so that we can track the batch
        # index and do some intra-epoch reporting
        for i, data in enumerate(training_loader):
            # Every data instance is an input + label pair
            inputs, labels = data

            # Zero your gradients for every batch!
            optimizer.zero_grad()

            # Make predictions for this batch
            outputs = model(inputs)

            # Compute the loss and its gradients
            loss = loss_fn(outputs, labels)
            loss.backward()

            # Adjust learning weights
            optimizer.step()

            # Gather data and report
            running_loss += loss.item()
            losses.append(loss.item())
            if i % 2 == 1:
                last_loss = running_loss / 2  # loss per batch
                tb_x = epoch_index * len(training_loader) + i + 1
                reports.append([i + 1, last_loss, tb_x])  # "  batch {} loss: {}": the text of a float's last bits
                running_loss = 0.0

        return last_loss

    timestamp = "20240101_000000"
    folder = tempfile.mkdtemp()
    epoch_number = 0
    EPOCHS = 2
    best_vloss = 1_000_000.0
    saved = []
    for _epoch in range(EPOCHS):
        # Make sure gradient tracking is on, and do a pass over the data
        model.train(True)
        avg_loss = train_one_epoch(epoch_number)

        running_vloss = 0.0
        # Set the model to evaluation mode, disabling dropout and using population
        # statistics for batch normalization.
        model.eval()

        # Disable gradient computation and reduce memory consumption.
        with torch.no_grad():
            for i, vdata in enumerate(validation_loader):  # noqa: B007
                vinputs, vlabels = vdata
                voutputs = model(vinputs)
                vloss = loss_fn(voutputs, vlabels)
                running_vloss += vloss

        avg_vloss = running_vloss / (i + 1)
        line = "LOSS train {} valid {}".format(avg_loss, avg_vloss)  # noqa: UP032
        printed.append(shown(line.split(" valid ")[1][:14]))  # the tensor's text, to four decimals
        reports.append([avg_loss, avg_vloss.item()])

        # Track best performance, and save the model's state
        if avg_vloss < best_vloss:
            best_vloss = avg_vloss
            model_path = os.path.join(folder, "model_{}_{}".format(timestamp, epoch_number))  # noqa: UP032
            torch.save(model.state_dict(), model_path)
            saved.append(model_path)

        epoch_number += 1
    saved_model = GarmentClassifier()
    saved_model.load_state_dict(torch.load(saved[-1]))
    with torch.no_grad():
        reloaded = saved_model(next(iter(validation_loader))[0]).tolist()
    return losses[:steps], printed, [reports, best_vloss.item(), len(saved), reloaded]


def train(model, steps=3):
    torch.manual_seed(1)
    if PART == "training":
        losses, printed, numbers = training_page(model.garments, steps)
        return {"losses": losses, "printed": printed, "numbers": numbers}
    if PART == "tensors":
        printed, numbers = tensors_page()
    elif PART == "autograd":
        printed, numbers = autograd_page(model.autograd_tiny)
    else:
        printed, numbers = models_page(model.tiny, model.tagger)
    losses, _, _ = training_page(model.garments, steps)
    return {"losses": losses, "printed": printed, "numbers": numbers}


if __name__ == "__main__":
    for PART in ("tensors", "autograd", "models", "training"):
        print(PART, *train(build())["printed"], sep="\n")
