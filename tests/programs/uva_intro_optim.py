"""Phillip Lippe's UvA deep learning tutorials 2 to 4 (introduction to PyTorch, activation functions,
initialization and optimization) at tiny sizes on synthetic data in place of FashionMNIST. ``PART`` picks
one.

Tutorial 2's idioms: ``torch.manual_seed(42)``, ``torch.arange(6).view(2, 3)``, ``x.permute(1, 0)``,
``torch.matmul``, the graph ``a = x + 2; b = a ** 2; c = b + 3; y = c.mean()`` on ``torch.arange(3,
dtype=torch.float32, requires_grad=True)``; an ``XORDataset(data.Dataset)`` drawing ``torch.randint(low=0,
high=2, size=(self.size, 2), dtype=torch.float32)``, labels ``(data.sum(dim=1) == 1).to(torch.long)`` and
``data += self.std * torch.randn(data.shape)``; ``data.DataLoader(train_dataset, batch_size=8,
shuffle=True)``; ``SimpleClassifier`` with ``nn.BCEWithLogitsLoss()`` over ``preds.squeeze(dim=1)`` and
``data_labels.float()``; ``torch.save(state_dict, "our_model.tar")``; ``eval_model`` accumulating
``true_preds += (pred_labels == data_labels).sum()`` from ``(torch.sigmoid(preds) >= 0.5).long()`` and
printing ``f"Accuracy of the model: {100.0*acc:4.2f}%"`` of a 0-d tensor. Tutorial 3's: activation functions
as ``nn.Module`` classes with ``self.name = self.__class__.__name__`` and a ``self.config`` dict (Sigmoid
by ``1 / (1 + torch.exp(-x))``, Tanh by exponentials, ReLU by ``x * (x > 0).float()``, LeakyReLU by
``torch.where(x > 0, x, self.config["alpha"] * x)``, ELU, Swish), ``get_grads`` by ``x =
x.clone().requires_grad_()`` and ``act_fn(x).sum().backward()`` over ``torch.linspace(-5, 5, 1000)``;
``BaseNetwork`` built from ``layer_sizes = [input_size] + hidden_sizes``; ``visualize_gradients`` by
``{name: params.grad.data.view(-1).cpu().clone().numpy() for name, params in net.named_parameters() if
"weight" in name}``; dead neurons by ``torch.logical_and(neurons_dead[layer_index], (imgs == 0).all(dim=0))``.
Tutorial 4's: ``const_init``, ``var_init`` (``param.data.normal_(std=std)``), ``equal_var_init``,
``xavier_init`` (``param.data.uniform_(-bound, bound)``) and ``kaiming_init`` over
``model.named_parameters()``; activation statistics collected layer by layer under ``torch.no_grad()``;
the ``OptimizerTemplate`` with ``p.grad.detach_()``, ``p.grad.zero_()`` and a ``@torch.no_grad()`` step, its
``SGD``, ``SGDMomentum`` and ``Adam`` keeping state in dicts keyed by the parameters (``{p:
torch.zeros_like(p.data) for p in self.params}``, ``p.add_(p_update)``), trained on the network and on
the pathological curve ``torch.tanh(w1)**2 + 0.01 * torch.abs(w1)`` + ``torch.sigmoid(w2)`` from
``nn.Parameter(torch.FloatTensor(init), requires_grad=True)``, with ``torch.cat([weights.data.detach(),
loss.unsqueeze(dim=0).detach()], dim=0)`` points stacked by ``torch.stack(list_points, dim=0).numpy()``."""

# ruff: noqa: B007  (the tutorial's spelling is the point: unused loop names)
from __future__ import annotations

import json
import math
import os
import tempfile

import numpy as np
from shim import F, nn, torch

data = torch.utils.data  # import torch.utils.data as data

PART = "introduction"  # or "activations", "optimization"
ACT_FN = "relu"  # the activations part's network: one of act_fn_by_name
INIT = "kaiming"  # the optimization part's: "const", "var", "equal_var", "xavier", "kaiming"
OPTIMIZER = "adam"  # the optimization part's: "sgd", "sgd_momentum", "adam"
SHUFFLE = True


class XORDataset(data.Dataset):
    def __init__(self, size, std=0.1):
        """
        Inputs:
            size - Number of data points we want to generate
            std - Standard deviation of the noise (see generate_continuous_xor function)
        """
        super().__init__()
        self.size = size
        self.std = std
        self.generate_continuous_xor()

    def generate_continuous_xor(self):
        # Each data point in the XOR dataset has two variables, x and y, that can be either 0 or 1
        # The label is their XOR combination, i.e. 1 if only x or only y is 1 while the other is 0.
        # If x=y, the label is 0.
        data = torch.randint(low=0, high=2, size=(self.size, 2), dtype=torch.float32)
        label = (data.sum(dim=1) == 1).to(torch.long)
        # To make it slightly more challenging, we add a bit of gaussian noise to the data points.
        data += self.std * torch.randn(data.shape)
        self.data = data
        self.label = label

    def __len__(self):
        # Number of data point we have. Alternatively self.data.shape[0], or self.label.shape[0]
        return self.size

    def __getitem__(self, idx):
        # Return the idx-th data point of the dataset
        # If we have multiple things to return (data point and label), we can return them as tuple
        data_point = self.data[idx]
        data_label = self.label[idx]
        return data_point, data_label


class SimpleClassifier(nn.Module):
    def __init__(self, num_inputs, num_hidden, num_outputs):
        super().__init__()
        # Initialize the modules we need to build the network
        self.linear1 = nn.Linear(num_inputs, num_hidden)
        self.act_fn = nn.Tanh()
        self.linear2 = nn.Linear(num_hidden, num_outputs)

    def forward(self, x):
        # Perform the calculation of the model to determine the prediction
        x = self.linear1(x)
        x = self.act_fn(x)
        x = self.linear2(x)
        return x


class ActivationFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.name = self.__class__.__name__
        self.config = {"name": self.name}


class Sigmoid(ActivationFunction):
    def forward(self, x):
        return 1 / (1 + torch.exp(-x))


class Tanh(ActivationFunction):
    def forward(self, x):
        x_exp, neg_x_exp = torch.exp(x), torch.exp(-x)
        return (x_exp - neg_x_exp) / (x_exp + neg_x_exp)


class ReLU(ActivationFunction):
    def forward(self, x):
        return x * (x > 0).float()


class LeakyReLU(ActivationFunction):
    def __init__(self, alpha=0.1):
        super().__init__()
        self.config["alpha"] = alpha

    def forward(self, x):
        return torch.where(x > 0, x, self.config["alpha"] * x)


class ELU(ActivationFunction):
    def forward(self, x):
        return torch.where(x > 0, x, torch.exp(x) - 1)


class Swish(ActivationFunction):
    def forward(self, x):
        return x * torch.sigmoid(x)


class Identity(ActivationFunction):
    def forward(self, x):
        return x


act_fn_by_name = {
    "sigmoid": Sigmoid,
    "tanh": Tanh,
    "relu": ReLU,
    "leakyrelu": LeakyReLU,
    "elu": ELU,
    "swish": Swish,
    "identity": Identity,
}


class BaseNetwork(nn.Module):
    def __init__(self, act_fn, input_size=784, num_classes=10, hidden_sizes=[512, 256, 256, 128]):  # noqa: B006
        """
        Inputs:
            act_fn - Object of the activation function that should be used as non-linearity in the network.
            input_size - Size of the input images in pixels
            num_classes - Number of classes we want to predict
            hidden_sizes - A list of integers specifying the hidden layer sizes in the NN
        """
        super().__init__()
        # Create the network based on the specified hidden sizes
        layers = []
        layer_sizes = [input_size] + hidden_sizes
        for layer_index in range(1, len(layer_sizes)):
            layers += [nn.Linear(layer_sizes[layer_index - 1], layer_sizes[layer_index]), act_fn]
        layers += [nn.Linear(layer_sizes[-1], num_classes)]
        # nn.Sequential summarizes a list of modules into a single module, applying them in sequence
        self.layers = nn.Sequential(*layers)
        # We store all hyperparameters in a dictionary for saving and loading of the model
        self.config = {
            "act_fn": act_fn.config,
            "input_size": input_size,
            "num_classes": num_classes,
            "hidden_sizes": hidden_sizes,
        }

    def forward(self, x):
        x = x.view(x.size(0), -1)  # Reshape images to a flat vector
        out = self.layers(x)
        return out


def fashion_mnist(size=24, seed=0):
    """FashionMNIST's stand-in: (1, 4, 4) images normalised to mean 0 and std 1, ten class templates."""
    rng = np.random.RandomState(seed)
    templates = np.random.RandomState(5).randn(10, 1, 4, 4)
    labels = rng.randint(0, 10, size)
    images = (templates[labels] + rng.randn(size, 1, 4, 4) * 0.5).astype(np.float32)
    return data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


def build():
    torch.manual_seed(42)  # Setting the seed
    if PART == "introduction":
        return SimpleClassifier(num_inputs=2, num_hidden=4, num_outputs=1)
    if PART == "activations":
        return BaseNetwork(act_fn=act_fn_by_name[ACT_FN](), input_size=16, hidden_sizes=[12, 8, 8])
    return BaseNetwork(act_fn=Identity() if INIT == "const" else Tanh(), input_size=16, hidden_sizes=[12, 8, 8])


def introduction(model, steps, record):
    torch.manual_seed(42)
    x = torch.arange(6)
    x = x.view(2, 3)
    record["permuted"] = x.permute(1, 0).tolist()
    W = torch.arange(9).view(3, 3)  # We can also stack multiple operations in a single line
    record["matmul"] = torch.matmul(x, W).tolist()
    x = torch.arange(3, dtype=torch.float32, requires_grad=True)  # Only float tensors can have gradients
    a = x + 2
    b = a**2
    c = b + 3
    y = c.mean()
    y.backward()
    record["x.grad"] = x.grad.tolist()

    dataset = XORDataset(size=200)
    record["first"] = [dataset[0][0].tolist(), dataset[0][1].item()]
    data_loader = data.DataLoader(dataset, batch_size=8, shuffle=SHUFFLE)
    # next(iter(...)) catches the first batch of the data loader
    data_inputs, data_labels = next(iter(data_loader))
    record["batch"] = [list(data_inputs.shape), data_labels.tolist()]

    loss_module = nn.BCEWithLogitsLoss()
    # Input to the optimizer are the parameters of the model: model.parameters()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    device = torch.device("cpu")
    train_dataset = XORDataset(size=40)
    train_data_loader = data.DataLoader(train_dataset, batch_size=8, shuffle=SHUFFLE)
    # Set model to train mode
    model.train()
    done = 0
    for epoch in range(steps):
        for data_inputs, data_labels in train_data_loader:
            if done == steps:
                break
            ## Step 1: Move input data to device (only strictly necessary if we use GPU)
            data_inputs = data_inputs.to(device)
            data_labels = data_labels.to(device)
            ## Step 2: Run the model on the input data
            preds = model(data_inputs)
            preds = preds.squeeze(dim=1)  # Output is [Batch size, 1], but we want [Batch size]
            ## Step 3: Calculate the loss
            loss = loss_module(preds, data_labels.float())
            ## Step 4: Perform backpropagation
            # Before calculating the gradients, we need to ensure that they are all zero.
            # The gradients would not be overwritten, but actually added to the existing ones.
            optimizer.zero_grad()
            # Perform backpropagation
            loss.backward()
            ## Step 5: Update the parameters
            optimizer.step()
            done += 1
            record["losses"].append(loss.item())
    state_dict = model.state_dict()
    with tempfile.TemporaryDirectory() as folder:
        # torch.save(object, filename). For the filename, any extension can be used
        torch.save(state_dict, os.path.join(folder, "our_model.tar"))
        # Load state dict from the disk (make sure it is the same name as above)
        state_dict = torch.load(os.path.join(folder, "our_model.tar"))
    # Create a new model and load the state
    new_model = SimpleClassifier(num_inputs=2, num_hidden=4, num_outputs=1)
    new_model.load_state_dict(state_dict)
    record["state"] = [list(state_dict), new_model.linear2.bias.tolist()]

    test_dataset = XORDataset(size=50)
    # drop_last -> Don't drop the last batch although it is smaller than 128
    test_data_loader = data.DataLoader(test_dataset, batch_size=16, shuffle=False, drop_last=False)
    model.eval()  # Set model to eval mode
    true_preds, num_preds = 0.0, 0.0
    with torch.no_grad():  # Deactivate gradients for the following code
        for data_inputs, data_labels in test_data_loader:
            # Determine prediction of model on dev set
            data_inputs, data_labels = data_inputs.to(device), data_labels.to(device)
            preds = model(data_inputs)
            preds = preds.squeeze(dim=1)
            preds = torch.sigmoid(preds)  # Sigmoid to map predictions between 0 and 1
            pred_labels = (preds >= 0.5).long()  # Binarize predictions to 0 and 1
            # Keep records of predictions for the accuracy metric (true_preds=TP+TN, num_preds=TP+TN+FP+FN)
            true_preds += (pred_labels == data_labels).sum()
            num_preds += data_labels.shape[0]
    acc = true_preds / num_preds
    record["accuracy"] = f"Accuracy of the model: {100.0 * acc:4.2f}%"
    return record


def get_grads(act_fn, x):
    """
    Computes the gradients of an activation function at specified positions.
    """
    x = x.clone().requires_grad_()  # Mark the input as tensor for which we want to store gradients
    out = act_fn(x)
    out.sum().backward()  # Summing results in an equal gradient flow to each element in x
    return x.grad  # Accessing the gradients of x by "x.grad"


def vis_act_fn(act_fn, x):
    # Run activation function
    y = act_fn(x)
    y_grads = get_grads(act_fn, x)
    # Push x, y and gradients back to cpu for plotting
    x, y, y_grads = x.cpu().numpy(), y.cpu().numpy(), y_grads.cpu().numpy()
    return y, y_grads  # the tutorial plots them here


def activations(net, steps, record):
    # The activation functions' values and gradients, as plotted
    x = torch.linspace(-5, 5, 1000)  # Range on which we want to visualize the activation functions
    for name, act_fn in act_fn_by_name.items():
        y, y_grads = vis_act_fn(act_fn(), x)
        record["functions"].append([name, y[::111].tolist(), y_grads[::111].tolist(), float(y_grads.sum())])
    train_set = fashion_mnist()
    # visualize_gradients
    net.eval()
    small_loader = data.DataLoader(train_set, batch_size=16, shuffle=False)
    imgs, labels = next(iter(small_loader))
    # Pass one batch through the network, and calculate the gradients for the weights
    net.zero_grad()
    preds = net(imgs)
    loss = F.cross_entropy(preds, labels)  # Same as nn.CrossEntropyLoss, but as a function instead of module
    loss.backward()
    # We limit our visualization to the weight parameters and exclude the bias to reduce the number of plots
    grads = {
        name: params.grad.data.view(-1).cpu().clone().numpy()
        for name, params in net.named_parameters()
        if "weight" in name
    }
    net.zero_grad()
    record["grad_std"] = {key: float(np.std(value)) for key, value in grads.items()}
    record["zeroed"] = [p.grad is None or bool((p.grad == 0).all()) for p in net.parameters()]
    # train a few steps, then count the dead neurons
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9)
    net.train()
    train_loader = data.DataLoader(train_set, batch_size=8, shuffle=SHUFFLE, drop_last=True)
    for _, (imgs, labels) in zip(range(steps), train_loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(net(imgs), labels)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    net.eval()
    # For each neuron, we create a boolean variable initially set to 1. If it has an activation unequals 0 at
    # any time, we set this variable to 0. After running through the whole training set, only dead neurons
    # will have a 1.
    neurons_dead = [
        torch.ones(layer.weight.shape[0], dtype=torch.bool) for layer in net.layers[:-1] if isinstance(layer, nn.Linear)
    ]  # Same shapes as hidden size in BaseNetwork
    with torch.no_grad():
        for imgs, labels in train_loader:
            layer_index = 0
            imgs = imgs.view(imgs.size(0), -1)
            for layer in net.layers[:-1]:
                imgs = layer(imgs)
                if isinstance(layer, ActivationFunction):
                    # Are all activations == 0 in the batch, and we did not record the opposite in the last batches?
                    neurons_dead[layer_index] = torch.logical_and(neurons_dead[layer_index], (imgs == 0).all(dim=0))
                    layer_index += 1
    number_neurons_dead = [t.sum().item() for t in neurons_dead]
    record["dead"] = [number_neurons_dead, [t.shape[0] for t in neurons_dead]]
    record["dead_line"] = (
        "Percentage:",
        ", ".join(
            [f"{(100.0 * num_dead / tens.shape[0]):4.2f}%" for tens, num_dead in zip(neurons_dead, number_neurons_dead)]
        ),
    )
    record["config"] = json.dumps(net.config)
    return record


def const_init(model, fill=0.0):
    for name, param in model.named_parameters():
        param.data.fill_(fill)


def var_init(model, std=0.01):
    for name, param in model.named_parameters():
        param.data.normal_(mean=0.0, std=std)


def equal_var_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        else:
            param.data.normal_(std=1.0 / math.sqrt(param.shape[1]))


def xavier_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        else:
            bound = math.sqrt(6) / math.sqrt(param.shape[0] + param.shape[1])
            param.data.uniform_(-bound, bound)


def kaiming_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0.0)
        elif name.startswith("layers.0"):  # The first layer does not have ReLU applied on its input
            param.data.normal_(0, 1 / math.sqrt(param.shape[1]))
        else:
            param.data.normal_(0, math.sqrt(2) / math.sqrt(param.shape[1]))


class OptimizerTemplate:
    def __init__(self, params, lr):
        self.params = list(params)
        self.lr = lr

    def zero_grad(self):
        ## Set gradients of all parameters to zero
        for p in self.params:
            if p.grad is not None:
                p.grad.detach_()  # For second-order optimizers important
                p.grad.zero_()

    @torch.no_grad()
    def step(self):
        ## Apply update step to all parameters
        for p in self.params:
            if p.grad is None:  # We skip parameters without any gradients
                continue
            self.update_param(p)

    def update_param(self, p):
        # To be implemented in optimizer-specific classes
        raise NotImplementedError


class SGD(OptimizerTemplate):
    def __init__(self, params, lr):
        super().__init__(params, lr)

    def update_param(self, p):
        p_update = -self.lr * p.grad
        p.add_(p_update)  # In-place update => saves memory and does not create computation graph


class SGDMomentum(OptimizerTemplate):
    def __init__(self, params, lr, momentum=0.0):
        super().__init__(params, lr)
        self.momentum = momentum  # Corresponds to beta_1 in the equation above
        self.param_momentum = {p: torch.zeros_like(p.data) for p in self.params}  # Dict to store m_t

    def update_param(self, p):
        self.param_momentum[p] = (1 - self.momentum) * p.grad + self.momentum * self.param_momentum[p]
        p_update = -self.lr * self.param_momentum[p]
        p.add_(p_update)


class Adam(OptimizerTemplate):
    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(params, lr)
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.param_step = {p: 0 for p in self.params}  # Remembers "t" for each parameter for bias correction
        self.param_momentum = {p: torch.zeros_like(p.data) for p in self.params}
        self.param_2nd_momentum = {p: torch.zeros_like(p.data) for p in self.params}

    def update_param(self, p):
        self.param_step[p] += 1
        self.param_momentum[p] = (1 - self.beta1) * p.grad + self.beta1 * self.param_momentum[p]
        self.param_2nd_momentum[p] = (1 - self.beta2) * (p.grad) ** 2 + self.beta2 * self.param_2nd_momentum[p]
        bias_correction_1 = 1 - self.beta1 ** self.param_step[p]
        bias_correction_2 = 1 - self.beta2 ** self.param_step[p]
        p_2nd_mom = self.param_2nd_momentum[p] / bias_correction_2
        p_mom = self.param_momentum[p] / bias_correction_1
        p_lr = self.lr / (torch.sqrt(p_2nd_mom) + self.eps)
        p_update = -p_lr * p_mom
        p.add_(p_update)


def pathological_curve_loss(w1, w2):
    # Example of a pathological curvature. There are many more possible, feel free to experiment here!
    x1_loss = torch.tanh(w1) ** 2 + 0.01 * torch.abs(w1)
    x2_loss = torch.sigmoid(w2)
    return x1_loss + x2_loss


def train_curve(optimizer_func, curve_func=pathological_curve_loss, num_updates=100, init=[5, 5]):  # noqa: B006
    """
    Inputs:
        optimizer_func - Constructor of the optimizer to use. Should only take a parameter list
        curve_func - Loss function (e.g. pathological curvature)
        num_updates - Number of updates/steps to take when optimizing
        init - Initial values of parameters. Must be a list/tuple with two elements representing w1 and w2
    Outputs:
        Numpy array of shape [num_updates, 3] with [t,:2] being the parameter values at step t, and [t,2] the loss at t.
    """
    weights = nn.Parameter(torch.FloatTensor(init), requires_grad=True)
    optimizer = optimizer_func([weights])
    list_points = []
    for _ in range(num_updates):
        loss = curve_func(weights[0], weights[1])
        list_points.append(torch.cat([weights.data.detach(), loss.unsqueeze(dim=0).detach()], dim=0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    points = torch.stack(list_points, dim=0).numpy()
    return points


def optimization(net, steps, record):
    torch.manual_seed(7)
    {
        "const": lambda m: const_init(m, fill=0.005),
        "var": var_init,
        "equal_var": equal_var_init,
        "xavier": xavier_init,
        "kaiming": kaiming_init,
    }[INIT](net)
    train_set = fashion_mnist(size=32)
    # the activation statistics, layer by layer
    imgs, labels = next(iter(data.DataLoader(train_set, batch_size=32, shuffle=False)))
    activations = {}
    with torch.no_grad():
        feats = imgs.view(imgs.shape[0], -1)
        for layer_index, layer in enumerate(net.layers):
            feats = layer(feats)
            if isinstance(layer, nn.Linear):
                activations[f"Layer {layer_index}"] = feats.view(-1).detach().cpu().numpy()
    record["activation_var"] = {key: float(np.var(value)) for key, value in activations.items()}
    optimizer = {
        "sgd": lambda params: SGD(params, lr=1e-1),
        "sgd_momentum": lambda params: SGDMomentum(params, lr=1e-1, momentum=0.9),
        "adam": lambda params: Adam(params, lr=1e-2),
    }[OPTIMIZER]
    opt = optimizer(net.parameters())
    loader = data.DataLoader(train_set, batch_size=8, shuffle=SHUFFLE, drop_last=True)
    for _, (imgs, labels) in zip(range(steps), loader):
        opt.zero_grad()
        loss = F.cross_entropy(net(imgs), labels)
        loss.backward()
        opt.step()
        record["losses"].append(loss.item())
    points = train_curve(optimizer, num_updates=10 * steps)
    record["curve"] = [points.dtype.str, points[-1].tolist(), points[:, 2].tolist()]
    return record


def train(model, steps=3):
    record = {"losses": []}
    if PART == "introduction":
        return introduction(model, steps, record)
    if PART == "activations":
        record["functions"] = []
        return activations(model, steps, record)
    return optimization(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
