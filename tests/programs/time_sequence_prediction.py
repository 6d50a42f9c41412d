"""pytorch/examples' time_sequence_prediction (generate_sine_wave.py and train.py) at a tiny size:
float64 throughout (torch.from_numpy of a float64 array, seq.double()), two nn.LSTMCell stepped by
hand over input.split(1, dim=1) with torch.zeros(..., dtype=torch.double) states, torch.cat of the
outputs along dim 1, optim.LBFGS with lr=0.8 and a closure returning the loss, and a forecast of
`future` steps fed back from the model's own output under torch.no_grad()."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

T, L, N = 20, 10, 6  # period, length and count of the sine waves
HIDDEN = 8
USE_CUDA = False  # the example trains on the CPU; a user moving it to a GPU sets this


def generate_sine_wave(seed=2):
    rng = np.random.default_rng(seed)
    x = np.empty((N, L), "int64")
    x[:] = np.array(range(L)) + rng.integers(-4 * T, 4 * T, N).reshape(N, 1)
    return np.sin(x / 1.0 / T).astype("float64")


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double, device=input.device)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def build():
    torch.manual_seed(0)
    seq = Sequence()
    seq.double()
    return seq


def train(seq, steps=2, future=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    seq.to(device)
    np.random.seed(0)
    data = generate_sine_wave()
    input = torch.from_numpy(data[2:, :-1]).to(device)
    target = torch.from_numpy(data[2:, 1:]).to(device)
    test_input = torch.from_numpy(data[:2, :-1]).to(device)
    test_target = torch.from_numpy(data[:2, 1:]).to(device)
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)
    losses, test_losses, closures = [], [], []
    # begin to train
    for _i in range(steps):

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            closures.append(loss.item())
            loss.backward()
            return loss

        losses.append(optimizer.step(closure).item())
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            test_losses.append(loss.item())
            y = pred.detach().cpu().numpy()
    assert y.dtype == np.float64 and y.shape == (2, L - 1 + future)
    return {
        "losses": losses,
        "closure_losses": closures,
        "test_losses": test_losses,
        "forecast": y[:, -future:].tolist(),
    }


if __name__ == "__main__":
    print(train(build()))
