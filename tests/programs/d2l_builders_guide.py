"""Dive into Deep Learning's builders' guide (PyTorch edition): layers and modules, parameter management,
initialisation, custom layers and file I/O, around a small MLP trained a few steps on synthetic data.

Its idioms: an ``MLP(nn.Module)`` with ``F.relu(self.hidden(X))``; ``MySequential`` registering modules by
``self._modules[str(idx)] = module`` (and by ``add_module``); ``FixedHiddenMLP``'s constant
``torch.rand((20, 20), requires_grad=False)``, a layer used twice and ``while X.abs().sum() > 1: X /= 2``;
``NestMLP`` nesting Sequentials; ``net[2].state_dict()``, ``type(net[2].bias)``, ``net[2].bias.data``,
``net[2].weight.grad == None``, ``*[(name, param.shape) for name, param in net.named_parameters()]``,
``net.state_dict()['2.bias'].data``; ``block2`` built by ``net.add_module(f'block {i}', block1())``;
``nn.init.normal_(m.weight, mean=0, std=0.01)``, ``nn.init.zeros_``, ``nn.init.constant_(m.weight, 1)``,
``nn.init.xavier_uniform_`` and ``nn.init.constant_(m.weight, 42)`` by ``net[0].apply``;
``my_init``'s ``nn.init.uniform_(m.weight, -10, 10)`` and ``m.weight.data *= m.weight.data.abs() >= 5``;
``net[0].weight.data[:] += 1`` and ``net[0].weight.data[0, 0] = 42``; a shared layer whose two uses
are one tensor (``net[2].weight.data[0] == net[4].weight.data[0]``); ``CenteredLayer``'s ``X - X.mean()``
and ``MyLinear``'s ``nn.Parameter(torch.randn(in_units, units))`` with ``torch.matmul(X,
self.weight.data) + self.bias.data``; ``torch.save(x, 'x-file')``, ``torch.save([x, y], 'x-files')``,
``torch.save(mydict, 'mydict')``, ``torch.save(net.state_dict(), 'mlp.params')`` and
``clone.load_state_dict(torch.load('mlp.params'))`` with ``clone.eval()`` and ``Y_clone == Y``."""

from __future__ import annotations

import os
import tempfile

from shim import F, nn, torch


class MLP(nn.Module):
    def __init__(self):
        # Call the constructor of the parent class nn.Module to perform the necessary initialization
        super().__init__()
        self.hidden = nn.Linear(20, 256)  # Hidden layer
        self.out = nn.Linear(256, 10)  # Output layer

    # Define the forward propagation of the model
    def forward(self, X):
        # Note here we use the funtional version of ReLU defined in the nn.functional module.
        return self.out(F.relu(self.hidden(X)))


class MySequential(nn.Module):
    def __init__(self, *args):
        super().__init__()
        for idx, module in enumerate(args):
            # Here, `module` is an instance of a `Module` subclass. We save it in the member variable
            # `_modules` of the `Module` class, and its type is OrderedDict
            self._modules[str(idx)] = module

    def forward(self, X):
        # OrderedDict guarantees that members will be traversed in the order they were added
        for block in self._modules.values():
            X = block(X)
        return X


class FixedHiddenMLP(nn.Module):
    def __init__(self):
        super().__init__()
        # Random weight parameters that will not compute gradients and therefore keep constant during training
        self.rand_weight = torch.rand((20, 20), requires_grad=False)
        self.linear = nn.Linear(20, 20)

    def forward(self, X):
        X = self.linear(X)
        # Use the created constant parameters, as well as the `relu` and `mm` functions
        X = F.relu(torch.mm(X, self.rand_weight) + 1)
        # Reuse the fully-connected layer. This is equivalent to sharing parameters with two fully-connected layers
        X = self.linear(X)
        # Control flow
        while X.abs().sum() > 1:
            X /= 2
        return X.sum()


class NestMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.linear = nn.Linear(32, 16)

    def forward(self, X):
        return self.linear(self.net(X))


class CenteredLayer(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, X):
        return X - X.mean()


class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        linear = torch.matmul(X, self.weight.data) + self.bias.data
        return F.relu(linear)


def block1():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())


def block2():
    net = nn.Sequential()
    for i in range(4):
        # Nested here
        net.add_module(f"block {i}", block1())
    return net


def init_normal(m):
    if type(m) == nn.Linear:  # noqa: E721  (the book's test)
        nn.init.normal_(m.weight, mean=0, std=0.01)
        nn.init.zeros_(m.bias)


def init_constant(m):
    if type(m) == nn.Linear:  # noqa: E721
        nn.init.constant_(m.weight, 1)
        nn.init.zeros_(m.bias)


def init_xavier(m):
    if type(m) == nn.Linear:  # noqa: E721
        nn.init.xavier_uniform_(m.weight)


def init_42(m):
    if type(m) == nn.Linear:  # noqa: E721
        nn.init.constant_(m.weight, 42)


def my_init(m):
    if type(m) == nn.Linear:  # noqa: E721
        m.weight.data *= 0  # (the book prints the name and shape here)
        nn.init.uniform_(m.weight, -10, 10)
        m.weight.data *= m.weight.data.abs() >= 5


def build():
    torch.manual_seed(0)
    # The chimera: nested, custom, fixed and centered modules in one Sequential
    return nn.Sequential(NestMLP(), nn.Linear(16, 20), FixedHiddenMLP())


def parameter_management(record):
    """Section "Parameter Management": access, initialisation, tied parameters."""
    X = torch.rand(size=(2, 4))
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    record["mlp_shape"] = list(net(X).shape)
    state = net[2].state_dict()
    record["state_keys"] = list(state)
    record["bias_type"] = type(net[2].bias).__name__
    record["bias"] = net[2].bias.data.tolist()
    record["grad_is_none"] = net[2].weight.grad == None  # noqa: E711  (the book's test)
    record["named"] = [(name, list(param.shape)) for name, param in net[0].named_parameters()]
    record["all_named"] = str(tuple((name, tuple(param.shape)) for name, param in net.named_parameters()))
    record["by_key"] = net.state_dict()["2.bias"].data.tolist()
    rgnet = nn.Sequential(block2(), nn.Linear(4, 1))
    record["rgnet"] = rgnet(X).tolist()
    record["rgnet_text"] = str(rgnet).splitlines()[:4]
    record["nested_bias"] = rgnet[0][1][0].bias.data.tolist()
    net.apply(init_normal)
    record["normal"] = [net[0].weight.data[0].tolist(), net[0].bias.data[0].item()]
    net.apply(init_constant)
    record["constant"] = [net[0].weight.data[0].tolist(), net[0].bias.data[0].item()]
    net[0].apply(init_xavier)
    net[2].apply(init_42)
    record["xavier_42"] = [net[0].weight.data[0].tolist(), net[2].weight.data.tolist()]
    net.apply(my_init)
    record["my_init"] = net[0].weight[:2].tolist()
    net[0].weight.data[:] += 1
    net[0].weight.data[0, 0] = 42
    record["edited"] = net[0].weight.data[0].tolist()
    # We need to give the shared layer a name so that we can refer to its parameters
    shared = nn.Linear(8, 8)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1))
    net(X)
    # Check whether the parameters are the same
    record["shared"] = (net[2].weight.data[0] == net[4].weight.data[0]).tolist()
    net[2].weight.data[0, 0] = 100
    # Make sure that they are actually the same object rather than just having the same value
    record["shared_after"] = (net[2].weight.data[0] == net[4].weight.data[0]).tolist()
    record["shared_count"] = len(list(net.parameters()))


def custom_layers_and_io(record, directory):
    """Sections "Custom Layers" and "File I/O"."""
    layer = CenteredLayer()
    record["centered"] = layer(torch.tensor([1, 2, 3, 4, 5], dtype=torch.float32)).tolist()
    net = nn.Sequential(nn.Linear(8, 128), CenteredLayer())
    Y = net(torch.rand(4, 8))
    record["centered_mean"] = abs(Y.mean().item()) < 1e-6
    linear = MyLinear(5, 3)
    record["my_linear"] = [linear.weight.tolist(), linear(torch.rand(2, 5)).tolist()]
    net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
    record["my_linear_net"] = net(torch.rand(2, 64)).tolist()
    x = torch.arange(4)
    torch.save(x, os.path.join(directory, "x-file"))
    x2 = torch.load(os.path.join(directory, "x-file"))
    y = torch.zeros(4)
    torch.save([x, y], os.path.join(directory, "x-files"))
    x2, y2 = torch.load(os.path.join(directory, "x-files"))
    record["loaded_list"] = [x2.tolist(), y2.tolist(), str(x2.dtype).split(".")[-1]]
    mydict = {"x": x, "y": y}
    torch.save(mydict, os.path.join(directory, "mydict"))
    mydict2 = torch.load(os.path.join(directory, "mydict"))
    record["loaded_dict"] = {key: value.tolist() for key, value in mydict2.items()}
    torch.manual_seed(2)
    net = MLP()
    X = torch.randn(size=(2, 20))
    Y = net(X)
    torch.save(net.state_dict(), os.path.join(directory, "mlp.params"))
    clone = MLP()
    clone.load_state_dict(torch.load(os.path.join(directory, "mlp.params")))
    record["clone_eval"] = str(clone.eval())
    Y_clone = clone(X)
    record["clone_equal"] = (Y_clone == Y).tolist()


def train(model, steps=3):
    torch.manual_seed(1)
    record = {"losses": []}
    X = torch.rand(2, 20)
    record["mlp"] = MLP()(X).tolist()
    record["my_sequential"] = MySequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 10))(X).tolist()
    record["fixed"] = FixedHiddenMLP()(X).item()
    record["nest"] = NestMLP()(X).tolist()
    parameter_management(record)
    with tempfile.TemporaryDirectory() as directory:
        custom_layers_and_io(record, directory)
    # The chimera, trained to a target value by SGD
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs = torch.rand(4, 20)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = (model(inputs) - 0.5) ** 2
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    return record


if __name__ == "__main__":
    print(train(build()))
