"""Three structured layers written as their reference implementations write them: a capsule network's
dynamic routing, a TabNet-style attentive transformer with sparsemax, and a ConvLSTM on moving squares.

The capsule network (``MODEL = "capsnet"``): primary capsules from a ``Conv2d`` viewed as ``(B, -1,
dim)``; ``squash`` as ``squared_norm / (1 + squared_norm) * x / torch.sqrt(squared_norm + 1e-8)``; the
prediction vectors ``u_hat`` by ``torch.matmul`` of a weight ``expand``-ed over the batch with the
inputs' ``unsqueeze(-1)``, or by ``torch.einsum("ijkl,bil->bijk", ...)`` (``ROUTING = "einsum"``); three
routing iterations with ``F.softmax(b_ij, dim=2)``, ``(c_ij * u_hat).sum(dim=1, keepdim=True)``, the
agreement added to the logits with ``u_hat.detach()`` before the last iteration; class lengths by
``v_j.norm(dim=-1)``, the margin loss ``T * F.relu(0.9 - v) ** 2 + 0.5 * (1 - T) * F.relu(v - 0.1) ** 2``
with ``T`` from ``torch.eye(classes).index_select(0, labels)``, Adam.

TabNet's (``MODEL = "tabnet"``): ``sparsemax`` by ``torch.sort(descending=True)``, ``cumsum``, a 1-based
``torch.arange`` shaped for broadcasting, the support size ``(1 + rhos * z_srt > z_cumsum).sum(dim,
keepdim=True)``, ``tau = z_cumsum.gather(dim, k - 1) - 1`` divided by ``k``, ``torch.clamp(z - tau,
min=0)``; an attentive transformer (Linear, ``nn.BatchNorm1d`` with momentum 0.02, multiplied by the
prior, sparsemax) whose prior is updated by ``(gamma - mask)``, masks' entropy as a sparsity loss
``torch.mean(torch.sum(-M * torch.log(M + 1e-15), dim=1))``; GLU feature blocks (``F.glu``),
``torch.sqrt(torch.tensor(0.5))`` residual scaling, ``F.cross_entropy``, Adam and ``clip_grad_norm_``.

The ConvLSTM (``MODEL = "convlstm"``): one ``Conv2d`` over ``torch.cat([input_tensor, h_cur], dim=1)``
giving four gates split with ``torch.split(combined_conv, self.hidden_dim, dim=1)``, ``torch.sigmoid``
and ``torch.tanh``, a hidden state initialised with ``torch.zeros(batch, hidden, H, W,
device=self.conv.weight.device)``, a Python loop over the time steps of a (B, T, C, H, W) tensor,
``torch.stack(outputs, dim=1)``, a 1x1 conv predicting the next frame of a moving square with
``F.binary_cross_entropy_with_logits``, Adam."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

MODEL = "capsnet"  # or "tabnet", "convlstm"
ROUTING = "matmul"  # or "einsum"
DEVICE = "cpu"


# ---------------------------------------------------------------- capsules
def squash(x, dim=-1):
    squared_norm = (x**2).sum(dim=dim, keepdim=True)
    scale = squared_norm / (1 + squared_norm)
    return scale * x / torch.sqrt(squared_norm + 1e-8)


class PrimaryCaps(nn.Module):
    def __init__(self, in_channels=4, num_capsules=2, capsule_dim=4):
        super().__init__()
        self.capsule_dim = capsule_dim
        self.conv = nn.Conv2d(in_channels, num_capsules * capsule_dim, kernel_size=3, stride=2)

    def forward(self, x):
        out = self.conv(x)
        batch = out.size(0)
        out = out.view(batch, -1, self.capsule_dim, out.size(-2) * out.size(-1)).permute(0, 1, 3, 2)
        return squash(out.reshape(batch, -1, self.capsule_dim))


class DigitCaps(nn.Module):
    def __init__(self, num_routes, in_dim, num_classes, out_dim, iterations=3):
        super().__init__()
        self.num_routes, self.num_classes, self.iterations = num_routes, num_classes, iterations
        self.W = nn.Parameter(0.1 * torch.randn(num_routes, num_classes, out_dim, in_dim))

    def forward(self, u):
        batch = u.size(0)
        if ROUTING == "einsum":
            u_hat = torch.einsum("ijkl,bil->bijk", self.W, u)
        else:
            W = self.W.unsqueeze(0).expand(batch, -1, -1, -1, -1)
            u = u.unsqueeze(2).unsqueeze(-1).expand(-1, -1, self.num_classes, -1, -1)
            u_hat = torch.matmul(W, u).squeeze(-1)
        b_ij = torch.zeros(batch, self.num_routes, self.num_classes, 1, device=u.device)
        u_hat_detached = u_hat.detach()
        for iteration in range(self.iterations):
            c_ij = F.softmax(b_ij, dim=2)
            if iteration == self.iterations - 1:
                s_j = (c_ij * u_hat).sum(dim=1, keepdim=True)
                v_j = squash(s_j)
            else:
                s_j = (c_ij * u_hat_detached).sum(dim=1, keepdim=True)
                v_j = squash(s_j)
                b_ij = b_ij + (u_hat_detached * v_j).sum(dim=-1, keepdim=True)
        return v_j.squeeze(1)


class CapsNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.primary = PrimaryCaps(4, 2, 4)
        self.digits = DigitCaps(2 * 2 * 2, 4, num_classes, 6)
        self.num_classes = num_classes

    def forward(self, x):
        return self.digits(self.primary(F.relu(self.conv1(x))))


def margin_loss(v, labels, num_classes):
    lengths = v.norm(dim=-1)
    T = torch.eye(num_classes, device=v.device).index_select(dim=0, index=labels)
    loss = T * F.relu(0.9 - lengths) ** 2 + 0.5 * (1 - T) * F.relu(lengths - 0.1) ** 2
    return loss.sum(dim=1).mean()


# ---------------------------------------------------------------- TabNet
def sparsemax(input, dim=-1):
    input_srt, _ = torch.sort(input, descending=True, dim=dim)
    input_cumsum = input_srt.cumsum(dim) - 1
    d = input.size(dim)
    rhos = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
    view = [1] * input.dim()
    view[0] = -1
    rhos = rhos.view(view).transpose(0, dim)
    support = rhos * input_srt > input_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = input_cumsum.gather(dim, support_size - 1)
    tau = tau / support_size.to(input.dtype)
    return torch.clamp(input - tau, min=0)


class GLUBlock(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.fc = nn.Linear(input_dim, 2 * output_dim, bias=False)
        self.bn = nn.BatchNorm1d(2 * output_dim, momentum=0.02)

    def forward(self, x):
        return F.glu(self.bn(self.fc(x)), dim=-1)


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.fc = nn.Linear(input_dim, output_dim, bias=False)
        self.bn = nn.BatchNorm1d(output_dim, momentum=0.02)

    def forward(self, priors, processed_feat):
        x = self.bn(self.fc(processed_feat))
        x = torch.mul(x, priors)
        return sparsemax(x, dim=-1)


class TabNetLike(nn.Module):
    def __init__(self, input_dim=6, n_d=4, n_steps=2, gamma=1.3, n_classes=2):
        super().__init__()
        self.input_dim, self.n_d, self.n_steps, self.gamma = input_dim, n_d, n_steps, gamma
        self.initial_bn = nn.BatchNorm1d(input_dim, momentum=0.01)
        self.initial_splitter = GLUBlock(input_dim, 2 * n_d)
        self.feat_transformers = nn.ModuleList([GLUBlock(input_dim, 2 * n_d) for _ in range(n_steps)])
        self.att_transformers = nn.ModuleList([AttentiveTransformer(n_d, input_dim) for _ in range(n_steps)])
        self.final_mapping = nn.Linear(n_d, n_classes, bias=False)

    def forward(self, x):
        res = 0
        x = self.initial_bn(x)
        prior = torch.ones(x.shape, device=x.device)
        M_loss = 0
        att = self.initial_splitter(x)[:, self.n_d :]
        scale = torch.sqrt(torch.tensor(0.5, device=x.device))
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_loss = M_loss + torch.mean(torch.sum(torch.mul(M, torch.log(M + 1e-15)), dim=1))
            prior = torch.mul(self.gamma - M, prior)
            out = self.feat_transformers[step](torch.mul(M, x)) * scale
            d = F.relu(out[:, : self.n_d])
            res = torch.add(res, d)
            att = out[:, self.n_d :]
        M_loss = M_loss / self.n_steps
        return self.final_mapping(res), M_loss


# ---------------------------------------------------------------- ConvLSTM
class ConvLSTMCell(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, bias=True):
        super().__init__()
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.conv = nn.Conv2d(
            in_channels=self.input_dim + self.hidden_dim,
            out_channels=4 * self.hidden_dim,
            kernel_size=kernel_size,
            padding=self.padding,
            bias=bias,
        )

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined = torch.cat([input_tensor, h_cur], dim=1)
        combined_conv = self.conv(combined)
        cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
        i = torch.sigmoid(cc_i)
        f = torch.sigmoid(cc_f)
        o = torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        h_next = o * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (
            torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
            torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
        )


class NextFrame(nn.Module):
    def __init__(self, hidden=4):
        super().__init__()
        self.cell = ConvLSTMCell(1, hidden, (3, 3))
        self.head = nn.Conv2d(hidden, 1, kernel_size=1)

    def forward(self, x):
        b, seq_len, _, h, w = x.size()
        state = self.cell.init_hidden(b, (h, w))
        outputs = []
        for t in range(seq_len):
            state = self.cell(x[:, t, :, :, :], cur_state=state)
            outputs.append(state[0])
        layer_output = torch.stack(outputs, dim=1)
        return self.head(layer_output.flatten(0, 1)).view(b, seq_len, 1, h, w)


def moving_squares(batch=2, seq_len=4, size=6, seed=0):
    rng = np.random.default_rng(seed)
    frames = np.zeros((batch, seq_len + 1, 1, size, size), dtype=np.float32)
    for b in range(batch):
        r, c = rng.integers(0, size - 2, 2)
        dr, dc = rng.choice([-1, 1], 2)
        for t in range(seq_len + 1):
            frames[b, t, 0, r : r + 2, c : c + 2] = 1.0
            if not 0 <= r + dr <= size - 2:
                dr = -dr
            if not 0 <= c + dc <= size - 2:
                dc = -dc
            r, c = r + dr, c + dc
    return torch.tensor(frames)


def build():
    torch.manual_seed(21)
    if MODEL == "tabnet":
        return TabNetLike()
    if MODEL == "convlstm":
        return NextFrame()
    return CapsNet()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    record = {"losses": []}
    rng = np.random.default_rng(4)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    if MODEL == "convlstm":
        frames = moving_squares().to(device)
        inputs, targets = frames[:, :-1], frames[:, 1:]
        for _ in range(steps):
            optimizer.zero_grad()
            loss = F.binary_cross_entropy_with_logits(model(inputs), targets)
            loss.backward()
            optimizer.step()
            record["losses"].append(loss.item())
        record["gate_grad"] = [g.abs().sum().item() for g in torch.split(model.cell.conv.weight.grad, 4, dim=0)]
        return record
    if MODEL == "tabnet":
        x = torch.tensor(rng.standard_normal((12, 6)).astype(np.float32), device=device)
        y = (x[:, 0] + x[:, 1] > 0).long()
        record["sparsity"] = []
        for _ in range(steps):
            model.train()
            optimizer.zero_grad()
            logits, M_loss = model(x)
            loss = F.cross_entropy(logits, y) - 1e-3 * M_loss
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            record["losses"].append(loss.item())
            record["sparsity"].append(M_loss.item())
        model.eval()
        with torch.no_grad():
            record["eval_logits"] = model(x)[0].sum().item()
            mask = sparsemax(torch.tensor(rng.standard_normal((3, 5)).astype(np.float32), device=device))
        record["mask"] = mask.tolist()
        return record
    images = torch.tensor(rng.standard_normal((4, 1, 7, 7)).astype(np.float32), device=device)
    labels = torch.tensor([0, 1, 2, 1], device=device)
    for _ in range(steps):
        optimizer.zero_grad()
        v = model(images)
        loss = margin_loss(v, labels, model.num_classes)
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    record["lengths"] = v.norm(dim=-1).flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
