"""The official tutorial "Knowledge Distillation Tutorial" (beginner_source/knowledge_distillation_tutorial.py),
at a tiny size on synthetic 16x16 colour images in place of CIFAR-10. ``LOSS`` picks the student's training:
soft targets (``"kd"``, the default), a cosine loss on flattened hidden representations (``"cosine"``) or an
MSE loss on feature maps through a regressor (``"regressor"``).

Its idioms: ``DeepNN`` / ``LightNN`` as ``nn.Sequential`` feature extractors and classifiers with
``nn.Dropout(0.1)`` and ``torch.flatten(x, 1)``; ``train(model, train_loader, epochs, learning_rate, device)`` (``train_ce`` here) with
``optim.Adam`` and ``running_loss / len(train_loader)``; ``test`` by ``_, predicted = torch.max(outputs.data, 1)`` and
``100 * correct / total``; ``torch.manual_seed(42)`` before each light model so two are equal (``torch.norm(
nn_light.features[0].weight).item()``); parameter counts by ``"{:,}".format(sum(p.numel() for p in
model.parameters()))``; ``train_knowledge_distillation``: ``teacher.eval()``, ``student.train()``, the teacher's
logits under ``torch.no_grad()``, ``soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)``,
``soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)``, ``torch.sum(soft_targets *
(soft_targets.log() - soft_prob)) / soft_prob.size()[0] * (T**2)`` mixed with ``nn.CrossEntropyLoss()`` by
weights; the cosine variant's models returning ``(x, flattened_conv_output_after_pooling)`` from
``torch.nn.functional.avg_pool1d(flattened_conv_output, 2)`` and ``nn.CosineEmbeddingLoss()`` with ``target=
torch.ones(inputs.size(0)).to(device)``, the teacher's weights copied by ``load_state_dict(nn_deep.state_dict())``;
and the regressor variant's ``nn.Sequential(nn.Conv2d(16, 32, kernel_size=3, padding=1))`` matched by
``nn.MSELoss()`` to the teacher's feature map.
"""

from __future__ import annotations

import numpy as np
from shim import DataLoader, TensorDataset, nn, optim, torch

DROPOUT = 0.1
SHUFFLE = True
LOSS = "kd"
device = "cpu"


class DeepNN(nn.Module):
    def __init__(self, num_classes=10):
        super(DeepNN, self).__init__()  # noqa: UP008
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(512, 64),
            nn.ReLU(),
            nn.Dropout(DROPOUT),
            nn.Linear(64, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


class LightNN(nn.Module):
    def __init__(self, num_classes=10):
        super(LightNN, self).__init__()  # noqa: UP008
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(16, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(256, 32),
            nn.ReLU(),
            nn.Dropout(DROPOUT),
            nn.Linear(32, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


class ModifiedDeepNNCosine(DeepNN):
    def forward(self, x):
        x = self.features(x)
        flattened_conv_output = torch.flatten(x, 1)
        x = self.classifier(flattened_conv_output)
        flattened_conv_output_after_pooling = torch.nn.functional.avg_pool1d(flattened_conv_output, 2)
        return x, flattened_conv_output_after_pooling


class ModifiedLightNNCosine(LightNN):
    def forward(self, x):
        x = self.features(x)
        flattened_conv_output = torch.flatten(x, 1)
        x = self.classifier(flattened_conv_output)
        return x, flattened_conv_output


class ModifiedDeepNNRegressor(DeepNN):
    def forward(self, x):
        x = self.features(x)
        conv_feature_map = x
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, conv_feature_map


class ModifiedLightNNRegressor(LightNN):
    def __init__(self, num_classes=10):
        super().__init__(num_classes)
        # Include an extra regressor (in our case linear)
        self.regressor = nn.Sequential(nn.Conv2d(16, 32, kernel_size=3, padding=1))

    def forward(self, x):
        x = self.features(x)
        regressor_output = self.regressor(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, regressor_output


class Models(nn.Module):
    """The tutorial's teacher and students in one module, so that one state_dict carries them all."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(42)
        self.nn_deep = DeepNN(num_classes=10).to(device)
        torch.manual_seed(42)
        self.nn_light = LightNN(num_classes=10).to(device)
        torch.manual_seed(42)
        self.new_nn_light = LightNN(num_classes=10).to(device)
        if LOSS == "cosine":
            self.modified_nn_deep = ModifiedDeepNNCosine(num_classes=10).to(device)
            self.modified_nn_light = ModifiedLightNNCosine(num_classes=10).to(device)
        elif LOSS == "regressor":
            self.modified_nn_deep = ModifiedDeepNNRegressor(num_classes=10).to(device)
            self.modified_nn_light = ModifiedLightNNRegressor(num_classes=10).to(device)


def build():
    return Models()


def cifar(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0.0, 0.5, size=(n, 3, 16, 16)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, label % 3, label : label + 4, :] += 1.0
    return TensorDataset(torch.tensor(images), torch.tensor(labels))


def train_ce(model, train_loader, epochs, learning_rate, device, losses):
    """The tutorial's ``train`` (renamed: the suite calls ``train(model, steps)``)."""
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=learning_rate)

    model.train()

    epoch_losses = []
    for _epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            # inputs: A collection of batch_size images
            # labels: A vector of dimensionality batch_size with integers denoting class of each image
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()
            outputs = model(inputs)

            # outputs: Output of the network for the collection of images. A tensor of dimensionality batch_size x num_classes
            # labels: The actual labels of the images. Vector of dimensionality batch_size
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()

            running_loss += loss.item()
            losses.append(loss.item())

        epoch_losses.append(running_loss / len(train_loader))
    return epoch_losses


def test(model, test_loader, device):
    model.to(device)
    model.eval()

    correct = 0
    total = 0

    with torch.no_grad():
        for inputs, labels in test_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            outputs = model(inputs)
            if isinstance(outputs, tuple):
                outputs = outputs[0]
            _, predicted = torch.max(outputs.data, 1)

            total += labels.size(0)
            correct += (predicted == labels).sum().item()

    accuracy = 100 * correct / total
    return accuracy


def train_knowledge_distillation(
    teacher, student, train_loader, epochs, learning_rate, T, soft_target_loss_weight, ce_loss_weight, device, losses
):
    ce_loss = nn.CrossEntropyLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)

    teacher.eval()  # Teacher set to evaluation mode
    student.train()  # Student to train mode

    for _epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()

            # Forward pass with the teacher model - do not save gradients here as we do not change the teacher's weights
            with torch.no_grad():
                teacher_logits = teacher(inputs)

            # Forward pass with the student model
            student_logits = student(inputs)

            # Soften the student logits by applying softmax first and log() second
            soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
            soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)

            # Calculate the soft targets loss. Scaled by T**2 as suggested by the authors of the paper "Distilling the knowledge in a neural network"
            soft_targets_loss = (
                torch.sum(soft_targets * (soft_targets.log() - soft_prob)) / soft_prob.size()[0] * (T**2)
            )

            # Calculate the true label loss
            label_loss = ce_loss(student_logits, labels)

            # Weighted sum of the two losses
            loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss

            loss.backward()
            optimizer.step()

            running_loss += loss.item()
            losses.append(loss.item())
    return running_loss / len(train_loader)


def train_cosine_loss(
    teacher, student, train_loader, epochs, learning_rate, hidden_rep_loss_weight, ce_loss_weight, device, losses
):
    ce_loss = nn.CrossEntropyLoss()
    cosine_loss = nn.CosineEmbeddingLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)

    teacher.to(device)
    student.to(device)
    teacher.eval()  # Teacher set to evaluation mode
    student.train()  # Student to train mode

    for _epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()

            # Forward pass with the teacher model and keep only the hidden representation
            with torch.no_grad():
                _, teacher_hidden_representation = teacher(inputs)

            # Forward pass with the student model
            student_logits, student_hidden_representation = student(inputs)

            # Calculate the cosine loss. Target is a vector of ones. From the loss formula above we can see that is the case where loss minimization leads to cosine similarity increase.
            hidden_rep_loss = cosine_loss(
                student_hidden_representation,
                teacher_hidden_representation,
                target=torch.ones(inputs.size(0)).to(device),
            )

            # Calculate the true label loss
            label_loss = ce_loss(student_logits, labels)

            # Weighted sum of the two losses
            loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss

            loss.backward()
            optimizer.step()

            running_loss += loss.item()
            losses.append(loss.item())
    return running_loss / len(train_loader)


def train_mse_loss(
    teacher, student, train_loader, epochs, learning_rate, feature_map_weight, ce_loss_weight, device, losses
):
    ce_loss = nn.CrossEntropyLoss()
    mse_loss = nn.MSELoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)

    teacher.to(device)
    student.to(device)
    teacher.eval()  # Teacher set to evaluation mode
    student.train()  # Student to train mode

    for _epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()

            # Again ignore teacher logits
            with torch.no_grad():
                _, teacher_feature_map = teacher(inputs)

            # Forward pass with the student model
            student_logits, regressor_feature_map = student(inputs)

            # Calculate the loss
            hidden_rep_loss = mse_loss(regressor_feature_map, teacher_feature_map)

            # Calculate the true label loss
            label_loss = ce_loss(student_logits, labels)

            # Weighted sum of the two losses
            loss = feature_map_weight * hidden_rep_loss + ce_loss_weight * label_loss

            loss.backward()
            optimizer.step()

            running_loss += loss.item()
            losses.append(loss.item())
    return running_loss / len(train_loader)


def main(models, steps=3):
    train_loader = DataLoader(cifar(4 * steps, seed=0), batch_size=4, shuffle=SHUFFLE, num_workers=0)
    test_loader = DataLoader(cifar(8, seed=1), batch_size=4, shuffle=False, num_workers=0)
    nn_deep, nn_light, new_nn_light = models.nn_deep, models.nn_light, models.new_nn_light
    losses = {"teacher": [], "light": [], "student": []}
    teacher_epochs = train_ce(
        nn_deep, train_loader, epochs=1, learning_rate=0.001, device=device, losses=losses["teacher"]
    )
    test_accuracy_deep = test(nn_deep, test_loader, device)

    norms = [torch.norm(nn_light.features[0].weight).item(), torch.norm(new_nn_light.features[0].weight).item()]
    total_params_deep = "{:,}".format(sum(p.numel() for p in nn_deep.parameters()))  # noqa: UP032
    total_params_light = "{:,}".format(sum(p.numel() for p in nn_light.parameters()))  # noqa: UP032

    light_epochs = train_ce(
        nn_light, train_loader, epochs=1, learning_rate=0.001, device=device, losses=losses["light"]
    )
    test_accuracy_light_ce = test(nn_light, test_loader, device)

    if LOSS == "kd":
        student_loss = train_knowledge_distillation(
            teacher=nn_deep,
            student=new_nn_light,
            train_loader=train_loader,
            epochs=1,
            learning_rate=0.001,
            T=2,
            soft_target_loss_weight=0.25,
            ce_loss_weight=0.75,
            device=device,
            losses=losses["student"],
        )
        student = new_nn_light
    elif LOSS == "cosine":
        modified_nn_deep, student = models.modified_nn_deep, models.modified_nn_light
        modified_nn_deep.load_state_dict(nn_deep.state_dict())
        sample_input = torch.randn(2, 3, 16, 16).to(device)  # Batch size: 2, Filters: 3, Image size: 16x16
        logits, hidden_representation = student(sample_input)
        shapes = [list(logits.shape), list(hidden_representation.shape)]
        logits, hidden_representation = modified_nn_deep(sample_input)
        shapes += [list(logits.shape), list(hidden_representation.shape)]
        student_loss = train_cosine_loss(
            teacher=modified_nn_deep,
            student=student,
            train_loader=train_loader,
            epochs=1,
            learning_rate=0.001,
            hidden_rep_loss_weight=0.25,
            ce_loss_weight=0.75,
            device=device,
            losses=losses["student"],
        )
    else:
        modified_nn_deep, student = models.modified_nn_deep, models.modified_nn_light
        modified_nn_deep.load_state_dict(nn_deep.state_dict())
        student_loss = train_mse_loss(
            teacher=modified_nn_deep,
            student=student,
            train_loader=train_loader,
            epochs=1,
            learning_rate=0.001,
            feature_map_weight=0.25,
            ce_loss_weight=0.75,
            device=device,
            losses=losses["student"],
        )
    test_accuracy_light_ce_and_kd = test(student, test_loader, device)
    result = {
        "losses": losses["student"],
        "teacher_losses": losses["teacher"] + teacher_epochs,
        "light_losses": losses["light"] + light_epochs,
        "norms": norms,
        "params": [total_params_deep, total_params_light],
        "accuracies": [test_accuracy_deep, test_accuracy_light_ce, test_accuracy_light_ce_and_kd, student_loss],
    }
    if LOSS == "cosine":
        result["shapes"] = shapes
    return result


def train(model, steps=3):
    return main(model, steps)


if __name__ == "__main__":
    print(main(build(), steps=6))
