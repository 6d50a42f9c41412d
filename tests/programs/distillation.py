"""Knowledge distillation from a teacher CNN to a small student, as Hinton et al.'s recipe is written in PyTorch.

Its idioms: a teacher trained first, then frozen with ``teacher.eval()`` and
``for p in teacher.parameters(): p.requires_grad = False``, its logits taken under ``torch.no_grad()``;
the soft loss ``F.kl_div(F.log_softmax(s / T, dim=1), F.softmax(t / T, dim=1), reduction="batchmean") * T * T``
(or ``nn.KLDivLoss(reduction="batchmean", log_target=True)`` over two log-softmaxes, or the
soft-target cross entropy ``-(soft_targets * log_probs).sum() / batch``) mixed with
``F.cross_entropy`` by ``alpha``; a FitNets hint on an intermediate feature map captured by
``register_forward_hook`` into a dict, matched by a 1x1-conv regressor with ``F.mse_loss``; the hook
removed with ``handle.remove()``; SGD with momentum over the student and the regressor together via
``itertools.chain``; ``StepLR``; and the agreement of student and teacher under
``torch.inference_mode()``."""

from __future__ import annotations

import itertools

import numpy as np
from shim import F, nn, optim, torch

TEMPERATURE = 4.0
ALPHA = 0.7
SOFT_LOSS = "kl_div"  # or "log_target", "soft_ce"
DEVICE = "cpu"


class Teacher(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()
        )
        self.classifier = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class Student(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Distiller(nn.Module):
    def __init__(self):
        super().__init__()
        self.teacher = Teacher()
        self.student = Student()
        self.regressor = nn.Conv2d(4, 8, kernel_size=1)


def soft_loss(student_logits, teacher_logits, T=TEMPERATURE):
    if SOFT_LOSS == "kl_div":
        return (
            F.kl_div(
                F.log_softmax(student_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1), reduction="batchmean"
            )
            * T
            * T
        )
    if SOFT_LOSS == "log_target":
        criterion = nn.KLDivLoss(reduction="batchmean", log_target=True)
        return criterion(F.log_softmax(student_logits / T, dim=-1), F.log_softmax(teacher_logits / T, dim=-1)) * T**2
    soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
    soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
    return torch.sum(soft_targets * soft_prob) / soft_prob.size()[0] * -(T**2)


def make_data(n, rng):
    labels = rng.integers(0, 4, n)
    images = rng.standard_normal((n, 1, 8, 8)).astype(np.float32) * 0.5
    for i, label in enumerate(labels):
        images[i, 0, 2 * label : 2 * label + 2, :] += 1.0
    return torch.from_numpy(images), torch.from_numpy(labels)


def build():
    torch.manual_seed(0)
    return Distiller()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    rng = np.random.default_rng(0)
    teacher, student = model.teacher, model.student
    record = {"teacher": [], "losses": [], "soft": [], "hint": [], "agreement": [], "lr": []}

    teacher_optimizer = optim.Adam(teacher.parameters(), lr=1e-2)
    teacher.train()
    for _ in range(steps):
        inputs, labels = (t.to(device) for t in make_data(8, rng))
        loss = F.cross_entropy(teacher(inputs), labels)
        teacher_optimizer.zero_grad()
        loss.backward()
        teacher_optimizer.step()
        record["teacher"].append(loss.item())

    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad = False
    features = {}

    def save_output(name):
        def hook(module, input, output):
            features[name] = output

        return hook

    handles = [
        teacher.features[3].register_forward_hook(save_output("teacher")),
        student.conv2.register_forward_hook(save_output("student")),
    ]
    optimizer = optim.SGD(itertools.chain(student.parameters(), model.regressor.parameters()), lr=0.05, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    student.train()
    for _ in range(steps):
        inputs, labels = (t.to(device) for t in make_data(8, rng))
        with torch.no_grad():
            teacher_logits = teacher(inputs)
        student_logits = student(inputs)
        soft = soft_loss(student_logits, teacher_logits)
        hint = F.mse_loss(model.regressor(features["student"]), features["teacher"])
        loss = ALPHA * soft + (1.0 - ALPHA) * F.cross_entropy(student_logits, labels) + 0.1 * hint
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        record["soft"].append(soft.item())
        record["hint"].append(hint.item())
        record["lr"].append(scheduler.get_last_lr()[0])
        student.eval()
        with torch.inference_mode():
            inputs, _ = (t.to(device) for t in make_data(8, rng))
            agreement = (student(inputs).argmax(1) == teacher(inputs).argmax(1)).float().mean()
        record["agreement"].append(agreement.item())
        student.train()
    for handle in handles:
        handle.remove()
    features.clear()
    with torch.no_grad():
        student(inputs)
    record["hooks_removed"] = len(features) == 0
    record["teacher_frozen"] = all(p.grad is None or not p.requires_grad for p in teacher.parameters())
    return record


if __name__ == "__main__":
    print(train(build()))
