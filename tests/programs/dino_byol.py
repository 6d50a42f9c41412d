"""Self-distillation with an EMA teacher: DINO, written as facebookresearch/dino's main_dino.py,
vision_transformer.py and utils.py are, and BYOL, written as lucidrains/byol-pytorch is, at tiny
sizes on synthetic images. ``METHOD`` picks one.

DINO's idioms: ``DINOHead`` (``trunc_normal_`` init through ``self.apply``, ``nn.functional.normalize(x,
dim=-1, p=2)``, a last layer by ``nn.utils.weight_norm`` with ``weight_g.data.fill_(1)`` and
``weight_g.requires_grad = False``); ``MultiCropWrapper`` grouping crops of one resolution by
``torch.cumsum(torch.unique_consecutive(torch.tensor([inp.shape[-1] for inp in x]),
return_counts=True)[1], 0)`` and running each group through ``torch.cat(x[start_idx:end_idx])``; a
teacher loaded from the student's ``state_dict`` and frozen by ``teacher.requires_grad_(False)``;
``DINOLoss`` (a ``center`` buffer, a numpy teacher-temperature schedule, ``F.softmax((teacher_output -
self.center) / temp, dim=-1)``, ``.detach().chunk(2)``, ``student_out.chunk(self.ncrops)``, the
cross-entropy between every other pair, the center updated under ``@torch.no_grad()`` by
reassignment); numpy cosine schedules for the rate, the weight decay (written into
``param_groups[0]["weight_decay"]``) and the momentum; ``get_params_groups`` without decay for biases
and norms; per-parameter ``clip_gradients`` (``p.grad.data.norm(2)``, ``p.grad.data.mul_(clip_coef)``);
``cancel_gradients_last_layer`` by ``p.grad = None``; the EMA by
``param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)`` under ``torch.no_grad()``.

BYOL's: a ``NetWrapper`` that finds a hidden layer by name in ``dict([*self.net.named_modules()])``
and takes its output with ``register_forward_hook`` (``flatten`` of the output saved in a dict keyed
by device); an MLP projector and predictor with ``nn.BatchNorm1d``; the target encoder a
``copy.deepcopy`` frozen by ``p.requires_grad = val``; ``loss_fn`` as ``2 - 2 * (x * y).sum(dim=-1)``
of ``F.normalize``-d vectors; the targets ``.detach_()``-ed (before ``chunk``: a view refuses it) under ``torch.no_grad()``; the moving
average by reassigning ``ma_params.data = old * beta + (1 - beta) * new``; two augmented views made
with ``torch.flip`` and ``torch.randn_like``.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from shim import F, nn, torch

METHOD = "dino"  # or "byol"
IMG = 8
LOCAL = 6
OUT_DIM = 16
BATCH = 4
LOCAL_CROPS = 2


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return nn.init.trunc_normal_(tensor, mean, std, a, b)


class Backbone(nn.Module):
    """A small convnet whose global pooling takes any crop size."""

    def __init__(self, embed_dim=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, embed_dim, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.embed_dim = embed_dim

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.gelu(self.conv2(x))
        return torch.flatten(self.pool(x), 1)


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=32, bottleneck_dim=8):
        super().__init__()
        nlayers = max(nlayers, 1)
        if nlayers == 1:
            self.mlp = nn.Linear(in_dim, bottleneck_dim)
        else:
            layers = [nn.Linear(in_dim, hidden_dim)]
            if use_bn:
                layers.append(nn.BatchNorm1d(hidden_dim))
            layers.append(nn.GELU())
            for _ in range(nlayers - 2):
                layers.append(nn.Linear(hidden_dim, hidden_dim))
                if use_bn:
                    layers.append(nn.BatchNorm1d(hidden_dim))
                layers.append(nn.GELU())
            layers.append(nn.Linear(hidden_dim, bottleneck_dim))
            self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        if norm_last_layer:
            self.last_layer.weight_g.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.mlp(x)
        x = nn.functional.normalize(x, dim=-1, p=2)
        x = self.last_layer(x)
        return x


class MultiCropWrapper(nn.Module):
    """
    Perform forward pass separately on each resolution input.
    The inputs corresponding to a single resolution are clubbed and single
    forward is run on the same resolution inputs. Hence we do several
    forward passes = number of different resolutions used. We then
    concatenate all the output features and run the head forward on these
    concatenated features.
    """

    def __init__(self, backbone, head):
        super().__init__()
        # disable layers dedicated to ImageNet labels classification
        backbone.fc, backbone.head = nn.Identity(), nn.Identity()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        # convert to list
        if not isinstance(x, list):
            x = [x]
        idx_crops = torch.cumsum(
            torch.unique_consecutive(
                torch.tensor([inp.shape[-1] for inp in x]),
                return_counts=True,
            )[1],
            0,
        )
        start_idx, output = 0, torch.empty(0).to(x[0].device)
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(x[start_idx:end_idx]))
            # The output is a tuple with XCiT model. See:
            # https://github.com/facebookresearch/xcit/blob/master/xcit.py#L404-L405
            if isinstance(_out, tuple):
                _out = _out[0]
            # accumulate outputs
            output = torch.cat((output, _out))
            start_idx = end_idx
        # Run the head forward on the concatenated features.
        return self.head(output)


class DINOLoss(nn.Module):
    def __init__(
        self,
        out_dim,
        ncrops,
        warmup_teacher_temp,
        teacher_temp,
        warmup_teacher_temp_epochs,
        nepochs,
        student_temp=0.1,
        center_momentum=0.9,
    ):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.ncrops = ncrops
        self.register_buffer("center", torch.zeros(1, out_dim))
        # we apply a warm up for the teacher temperature because
        # a too high temperature makes the training instable at the beginning
        self.teacher_temp_schedule = np.concatenate(
            (
                np.linspace(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs),
                np.ones(nepochs - warmup_teacher_temp_epochs) * teacher_temp,
            )
        )

    def forward(self, student_output, teacher_output, epoch):
        """
        Cross-entropy between softmax outputs of the teacher and student networks.
        """
        student_out = student_output / self.student_temp
        student_out = student_out.chunk(self.ncrops)

        # teacher centering and sharpening
        temp = self.teacher_temp_schedule[epoch]
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
        teacher_out = teacher_out.detach().chunk(2)

        total_loss = 0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    # we skip cases where student and teacher operate on the same view
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        self.update_center(teacher_output)
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        """
        Update center used for teacher output.
        """
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        batch_center = batch_center / len(teacher_output)
        # ema update
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))
    schedule = np.concatenate((warmup_schedule, schedule))
    assert len(schedule) == epochs * niter_per_ep
    return schedule


def get_params_groups(model):
    regularized = []
    not_regularized = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # we do not regularize biases nor Norm parameters
        if name.endswith(".bias") or len(param.shape) == 1:
            not_regularized.append(param)
        else:
            regularized.append(param)
    return [{"params": regularized}, {"params": not_regularized, "weight_decay": 0.0}]


def clip_gradients(model, clip):
    norms = []
    for _name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)
    return norms


def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
    if epoch >= freeze_last_layer:
        return
    for n, p in model.named_parameters():
        if "last_layer" in n:
            p.grad = None


def default(val, def_val):
    return def_val if val is None else val


def flatten(t):
    return t.reshape(t.shape[0], -1)


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class EMA:
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new


def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        old_weight, up_weight = ma_params.data, current_params.data
        ma_params.data = ema_updater.update_average(old_weight, up_weight)


def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val


def MLP(dim, projection_size, hidden_size=32):
    return nn.Sequential(
        nn.Linear(dim, hidden_size),
        nn.BatchNorm1d(hidden_size),
        nn.ReLU(inplace=True),
        nn.Linear(hidden_size, projection_size),
    )


class NetWrapper(nn.Module):
    """A wrapper class for the base neural network: the projection of a hidden layer's output."""

    def __init__(self, net, projection_size, projection_hidden_size, layer=-2):
        super().__init__()
        self.net = net
        self.layer = layer
        self.projector = None
        self.projection_size = projection_size
        self.projection_hidden_size = projection_hidden_size
        self.hidden = {}
        self.hook_registered = False

    def _find_layer(self):
        if type(self.layer) is str:
            modules = dict([*self.net.named_modules()])
            return modules.get(self.layer, None)
        elif type(self.layer) is int:
            children = [*self.net.children()]
            return children[self.layer]
        return None

    def _hook(self, _, input, output):
        device = input[0].device
        self.hidden[device] = flatten(output)

    def _register_hook(self):
        layer = self._find_layer()
        assert layer is not None, f"hidden layer ({self.layer}) not found"
        layer.register_forward_hook(self._hook)
        self.hook_registered = True

    def _get_projector(self, hidden):
        _, dim = hidden.shape
        if self.projector is None:
            self.projector = MLP(dim, self.projection_size, self.projection_hidden_size).to(hidden)
        return self.projector

    def get_representation(self, x):
        if self.layer == -1:
            return self.net(x)
        if not self.hook_registered:
            self._register_hook()
        self.hidden.clear()
        _ = self.net(x)
        hidden = self.hidden[x.device]
        self.hidden.clear()
        assert hidden is not None, f"hidden layer {self.layer} never emitted an output"
        return hidden

    def forward(self, x, return_projection=True):
        representation = self.get_representation(x)
        if not return_projection:
            return representation
        projector = self._get_projector(representation)
        projection = projector(representation)
        return projection, representation


class BYOL(nn.Module):
    def __init__(
        self, net, hidden_layer="pool", projection_size=8, projection_hidden_size=32, moving_average_decay=0.99
    ):
        super().__init__()
        self.net = net
        self.online_encoder = NetWrapper(net, projection_size, projection_hidden_size, layer=hidden_layer)
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)
        self.online_predictor = MLP(projection_size, projection_size, projection_hidden_size)
        # send a mock image tensor to instantiate singleton parameters
        self.forward(torch.zeros(2, 3, IMG, IMG))

    def _get_target_encoder(self):
        if self.target_encoder is None:
            target_encoder = copy.deepcopy(self.online_encoder)
            set_requires_grad(target_encoder, False)
            self.target_encoder = target_encoder
        return self.target_encoder

    def update_moving_average(self):
        assert self.target_encoder is not None, "target encoder has not been created yet"
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def augment(self, x):
        return (torch.flip(x, dims=(3,)) + 0.1 * torch.randn_like(x)).clamp(-2, 2)

    def forward(self, x, return_embedding=False):
        if return_embedding:
            return self.online_encoder(x, return_projection=False)
        image_one, image_two = self.augment(x), self.augment(x.flip(2))
        images = torch.cat((image_one, image_two), dim=0)
        online_projections, _ = self.online_encoder(images)
        online_predictions = self.online_predictor(online_projections)
        online_pred_one, online_pred_two = online_predictions.chunk(2, dim=0)
        with torch.no_grad():
            target_encoder = self._get_target_encoder()
            target_projections, _ = target_encoder(images)
            target_projections.detach_()
            target_proj_one, target_proj_two = target_projections.chunk(2, dim=0)
        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())
        loss = loss_one + loss_two
        return loss.mean()


class DINO(nn.Module):
    """The student and teacher of main_dino.py, for one state_dict."""

    def __init__(self):
        super().__init__()
        self.student = MultiCropWrapper(Backbone(), DINOHead(16, OUT_DIM, use_bn=False, norm_last_layer=True))
        self.teacher = MultiCropWrapper(Backbone(), DINOHead(16, OUT_DIM, use_bn=False))


def crops(step):
    """Two global crops and LOCAL_CROPS local ones of a batch of synthetic images, as a list."""
    rng = np.random.default_rng(step)
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32) / IMG
    freq = rng.uniform(1, 4, (BATCH, 3, 1, 1)).astype(np.float32)
    images = np.sin(freq * xx + 2 * yy).astype(np.float32)
    views = [images, images[:, :, ::-1, :]]
    for i in range(LOCAL_CROPS):
        views.append(images[:, :, i : i + LOCAL, i : i + LOCAL])
    return [torch.from_numpy(np.ascontiguousarray(v)) for v in views]


def build():
    torch.manual_seed(0)
    if METHOD == "byol":
        return BYOL(Backbone())
    model = DINO()
    # teacher and student start with the same weights
    model.teacher.load_state_dict(model.student.state_dict())
    return model


def _train_dino(model, steps):
    student, teacher = model.student, model.teacher
    # there is no backpropagation through the teacher, so no need for gradients
    teacher.requires_grad_(False)
    dino_loss = DINOLoss(OUT_DIM, LOCAL_CROPS + 2, 0.04, 0.07, 2, steps + 1)
    params_groups = get_params_groups(student)
    optimizer = torch.optim.AdamW(params_groups)  # to use with ViTs
    lr_schedule = cosine_scheduler(5e-3 * BATCH / 256.0 * 64, 1e-5, steps, 1, warmup_epochs=1)
    wd_schedule = cosine_scheduler(0.04, 0.4, steps, 1)
    momentum_schedule = cosine_scheduler(0.9, 1, steps, 1)
    record = {"losses": [], "center": [], "grad_norms": [], "teacher": []}
    for it in range(steps):
        epoch = it
        for i, param_group in enumerate(optimizer.param_groups):
            param_group["lr"] = lr_schedule[it]
            if i == 0:  # only the first group is regularized
                param_group["weight_decay"] = wd_schedule[it]
        images = crops(it)
        teacher_output = teacher(images[:2])  # only the 2 global views pass through the teacher
        student_output = student(images)
        loss = dino_loss(student_output, teacher_output, epoch)
        if not math.isfinite(loss.item()):
            raise ValueError(f"Loss is {loss.item()}, stopping training")
        optimizer.zero_grad()
        loss.backward()
        record["grad_norms"].append(clip_gradients(student, 3.0))
        cancel_gradients_last_layer(epoch, student, 1)
        optimizer.step()
        # EMA update for the teacher
        with torch.no_grad():
            m = momentum_schedule[it]  # momentum parameter
            for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
        record["losses"].append(loss.item())
        record["center"].append(dino_loss.center.flatten().tolist())
    record["teacher"] = [p.sum().item() for p in teacher.parameters()]
    record["frozen"] = [p.requires_grad for p in teacher.parameters()]
    return record


def _train_byol(learner, steps):
    torch.manual_seed(1)  # the views' noise
    opt = torch.optim.Adam(learner.parameters(), lr=3e-4)
    record = {"losses": [], "embedding": [], "target": []}
    for step in range(steps):
        images = crops(step)[0]
        loss = learner(images)
        opt.zero_grad()
        loss.backward()
        opt.step()
        learner.update_moving_average()  # update moving average of target encoder
        record["losses"].append(loss.item())
    learner.eval()
    with torch.no_grad():
        record["embedding"] = learner(crops(99)[0], return_embedding=True).flatten().tolist()
    record["target"] = [p.sum().item() for p in learner.target_encoder.parameters()]
    return record


def train(model, steps=3):
    model.train()
    return _train_byol(model, steps) if METHOD == "byol" else _train_dino(model, steps)


if __name__ == "__main__":
    print(train(build()))
