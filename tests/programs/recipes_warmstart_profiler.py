"""Four official PyTorch recipes on one small CIFAR-style net, at a tiny size on synthetic images:
"Warmstarting a model using parameters from a different model" (net A's `state_dict` saved by
`torch.save`, net B, whose layers are partly renamed, warmstarted by `load_state_dict(torch.load(PATH),
strict=False)`, and the returned NamedTuple's `missing_keys` / `unexpected_keys`); "Zeroing out
gradients" (`optimizer.zero_grad()` before each step, `net.zero_grad()` as well, the running loss
printed every few minibatches); "PyTorch Profiler" (`torch.profiler.profile(activities=[ProfilerActivity.CPU],
record_shapes=True)`, `record_function("model_inference")`, `prof.key_averages().table(sort_by=
"cpu_time_total", row_limit=10)` and `key_averages(group_by_input_shape=True)`: it must run and leave the
numbers as they are; its rows are vkml's kernels, not PyTorch's aten ops, so only that the user range
is there is checked); and "Saving and loading models for inference" (`model.eval()` after a load)."""

from __future__ import annotations

import io

from shim import F, nn, optim, torch

profiler = torch.profiler


class NetA(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(4 * 3 * 3, 10)
        self.fc2 = nn.Linear(10, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = x.view(-1, 4 * 3 * 3)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


class NetB(nn.Module):
    """Net A with its last layer renamed and a layer more: a warm start fills only what it shares."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(4 * 3 * 3, 10)
        self.head = nn.Linear(10, 3)
        self.extra = nn.Linear(3, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = x.view(-1, 4 * 3 * 3)
        x = F.relu(self.fc1(x))
        return self.extra(self.head(x))


def build():
    torch.manual_seed(0)
    return nn.ModuleDict({"netA": NetA(), "netB": NetB()})


def train(model, steps=3):
    netA, netB = model["netA"], model["netB"]
    n = 6
    inputs_all = (torch.arange(n * 3 * 8 * 8, dtype=torch.float32) * 0.37).sin().reshape(n, 3, 8, 8)
    labels_all = torch.arange(n).remainder(3)

    # warmstarting: save A, load into B without strictness
    buffer = io.BytesIO()
    torch.save(netA.state_dict(), buffer)
    buffer.seek(0)
    result = netB.load_state_dict(torch.load(buffer), strict=False)
    missing, unexpected = result
    warm = [
        sorted(result.missing_keys) == sorted(missing),
        sorted(missing) == ["extra.bias", "extra.weight", "head.bias", "head.weight"],
        sorted(unexpected) == ["fc2.bias", "fc2.weight"],
        torch.equal(netB.fc1.weight, netA.fc1.weight),
        type(result).__name__ == "_IncompatibleKeys",
        result._fields == ("missing_keys", "unexpected_keys"),
    ]

    # zeroing out gradients
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(netB.parameters(), lr=0.05, momentum=0.9)
    losses, running = [], []
    for _epoch in range(steps):
        running_loss = 0.0
        for i in range(0, n, 2):
            inputs, labels = inputs_all[i : i + 2], labels_all[i : i + 2]
            optimizer.zero_grad()
            outputs = netB(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % 4 == 0:
                running.append(running_loss / 2)
        losses.append(running_loss)
    netB.zero_grad()
    zeroed = all(p.grad is None for p in netB.parameters())

    # the profiler recipe: profiling leaves the numbers alone
    netA.eval()
    with torch.no_grad():
        before = netA(inputs_all)
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        with profiler.record_function("model_inference"):
            with torch.no_grad():
                profiled = netA(inputs_all)
                profiled_sum = profiled.sum().item()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    by_shape = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=10)
    return {
        "losses": losses,
        "running": running,
        "warm": warm,
        "zeroed": zeroed,
        "profiled": profiled.flatten().tolist(),
        "profiled_sum": profiled_sum,
        "profile_same": torch.equal(before, profiled),
        "table_has_range": "model_inference" in table and "model_inference" in by_shape,
    }


if __name__ == "__main__":
    print(train(build()))
