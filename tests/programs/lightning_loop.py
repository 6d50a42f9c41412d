"""A classifier trained by a hand-written PyTorch-Lightning-style ``Trainer`` with callbacks, a
checkpoint saved and resumed, and mixed precision, the way Lightning's loops, callbacks and
``seed_everything`` write it.

Idioms: ``seed_everything`` (``random.seed``, ``np.random.seed``, ``torch.manual_seed``,
``torch.cuda.manual_seed_all``, ``PL_GLOBAL_SEED``), ``torch.backends.cudnn.deterministic = True`` /
``benchmark = False``, ``torch.use_deterministic_algorithms(True, warn_only=True)``,
``torch.set_float32_matmul_precision("high")`` read back by ``get_float32_matmul_precision``;
``random_split`` by fractions with a seeded ``torch.Generator``, a shuffling ``DataLoader`` with its
own generator and ``drop_last``; a ``LightningModule`` with ``training_step``/``validation_step``,
``self.log`` into ``callback_metrics`` as detached tensors, a torchmetrics-style metric whose states
are reset by ``default.detach().clone()``, ``configure_optimizers`` returning an ``{"optimizer",
"lr_scheduler": {"scheduler", "interval": "step"}}`` dict; gradient accumulation with the loss
divided by ``accumulate_grad_batches``; precision plugins (``torch.autocast(device_type="cpu",
dtype=torch.bfloat16)``; ``torch.amp.GradScaler("cpu")`` with ``scale``/``unscale_``/``step``/
``update`` and its ``state_dict`` in the checkpoint); ``clip_grad_norm_`` after unscaling, the grad
norm by ``torch.linalg.vector_norm`` of stacked norms in ``on_before_optimizer_step``;
``zero_grad(set_to_none=True)``; validation under ``torch.inference_mode()``; ``ModelCheckpoint``
(``torch.save`` of the full checkpoint dict with optimizer, scheduler and scaler states, best score as
a tensor, ``save_last``), ``EarlyStopping`` (``torch.lt(current - min_delta, best)``,
``torch.tensor(torch.inf)``), ``LearningRateMonitor``; resuming by ``torch.load(path,
map_location="cpu", weights_only=False)`` and ``load_state_dict`` of every state, checked to continue
exactly as the uninterrupted run; ``load_from_checkpoint`` by ``torch.load(path,
map_location=lambda storage, loc: storage)``.
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

PRECISION = "32-true"  # or "bf16-mixed", "16-mixed" (a GradScaler over float32 on the CPU)
DROPOUT = 0.1
SHUFFLE = True
FEATURES, HIDDEN, CLASSES = 8, 32, 3
EPOCHS, BATCH, ACCUMULATE = 4, 6, 2


def seed_everything(seed: int, workers: bool = False) -> int:
    os.environ["PL_GLOBAL_SEED"] = str(seed)
    os.environ["PL_SEED_WORKERS"] = f"{int(workers)}"
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    return seed


# --- torchmetrics-style metrics ---


class Metric(nn.Module):
    def __init__(self):
        super().__init__()
        self._defaults = {}

    def add_state(self, name, default, dist_reduce_fx=None):
        self._defaults[name] = default.detach().clone()
        setattr(self, name, default)

    def reset(self):
        for name, default in self._defaults.items():
            setattr(self, name, default.detach().clone().to(self.device if hasattr(self, "device") else "cpu"))


class MulticlassAccuracy(Metric):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds, target):
        preds = preds.argmax(dim=-1) if preds.is_floating_point() else preds
        self.correct += (preds == target).sum()
        self.total += target.numel()

    def compute(self):
        return self.correct.float() / self.total


class MeanMetric(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("mean_value", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("weight", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, value, weight=1.0):
        value = torch.as_tensor(value, dtype=torch.float64)
        weight = torch.as_tensor(weight, dtype=torch.float64)
        self.mean_value += (value * weight).sum()
        self.weight += weight.sum()

    def compute(self):
        return self.mean_value / self.weight


# --- the LightningModule ---


class LitClassifier(nn.Module):
    def __init__(self, features=FEATURES, hidden=HIDDEN, classes=CLASSES, lr=3e-3, dropout=0.1):
        super().__init__()
        self.hparams = dict(features=features, hidden=hidden, classes=classes, lr=lr, dropout=dropout)
        self.net = nn.Sequential(
            nn.Linear(features, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, classes),
        )
        self.train_acc = MulticlassAccuracy(classes)
        self.val_acc = MulticlassAccuracy(classes)
        self.val_loss = MeanMetric()
        self.trainer = None

    def forward(self, x):
        return self.net(x)

    def log(self, name, value, prog_bar=False):
        if isinstance(value, torch.Tensor):
            value = value.detach()
        else:
            value = torch.tensor(value)
        self.trainer.callback_metrics[name] = value

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.train_acc.update(logits, y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.val_acc.update(logits, y)
        self.val_loss.update(loss, weight=x.shape[0])

    def on_validation_epoch_end(self):
        self.log("val_loss", self.val_loss.compute().float())
        self.log("val_acc", self.val_acc.compute())
        self.val_loss.reset()
        self.val_acc.reset()

    def on_train_epoch_end(self):
        self.log("train_acc", self.train_acc.compute())
        self.train_acc.reset()

    def configure_optimizers(self):
        optimizer = optim.AdamW(self.parameters(), lr=self.hparams["lr"], weight_decay=0.01)
        total_steps = self.trainer.estimated_stepping_batches
        scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=self.hparams["lr"], total_steps=total_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step", "frequency": 1}}

    @classmethod
    def load_from_checkpoint(cls, checkpoint_path):
        checkpoint = torch.load(checkpoint_path, map_location=lambda storage, loc: storage, weights_only=False)
        model = cls(**checkpoint["hyper_parameters"])
        model.load_state_dict(checkpoint["state_dict"])
        return model


# --- callbacks ---


class Callback:
    def on_train_batch_end(self, trainer, pl_module):
        pass

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        pass

    def on_validation_end(self, trainer, pl_module):
        pass

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass


class ModelCheckpoint(Callback):
    def __init__(self, dirpath, monitor="val_loss", mode="min", save_last=True):
        self.dirpath = dirpath
        self.monitor = monitor
        self.mode = mode
        self.save_last = save_last
        self.best_model_score = None
        self.best_model_path = ""
        self.last_model_path = ""

    def on_validation_end(self, trainer, pl_module):
        current = trainer.callback_metrics[self.monitor]
        better = torch.lt if self.mode == "min" else torch.gt
        if self.best_model_score is None or better(current, self.best_model_score):
            self.best_model_score = current.clone()
            self.best_model_path = os.path.join(
                self.dirpath, f"epoch={trainer.current_epoch}-step={trainer.global_step}.ckpt"
            )
            trainer.save_checkpoint(self.best_model_path)
        if self.save_last:
            self.last_model_path = os.path.join(self.dirpath, "last.ckpt")
            trainer.save_checkpoint(self.last_model_path)

    def state_dict(self):
        return {
            "monitor": self.monitor,
            "best_model_score": self.best_model_score,
            "best_model_path": self.best_model_path,
            "last_model_path": self.last_model_path,
        }

    def load_state_dict(self, state_dict):
        self.best_model_score = state_dict["best_model_score"]
        self.best_model_path = state_dict["best_model_path"]
        self.last_model_path = state_dict["last_model_path"]


class EarlyStopping(Callback):
    def __init__(self, monitor="val_loss", min_delta=0.0, patience=3, mode="min"):
        self.monitor = monitor
        self.min_delta = min_delta if mode == "min" else -min_delta
        self.patience = patience
        self.monitor_op = torch.lt if mode == "min" else torch.gt
        self.wait_count = 0
        self.stopped_epoch = 0
        torch_inf = torch.tensor(torch.inf)
        self.best_score = torch_inf if mode == "min" else -torch_inf

    def on_validation_end(self, trainer, pl_module):
        current = trainer.callback_metrics[self.monitor].squeeze()
        if self.monitor_op(current - self.min_delta, self.best_score.to(current.device)):
            self.best_score = current
            self.wait_count = 0
        else:
            self.wait_count += 1
            if self.wait_count >= self.patience:
                self.stopped_epoch = trainer.current_epoch
                trainer.should_stop = True

    def state_dict(self):
        return {"wait_count": self.wait_count, "stopped_epoch": self.stopped_epoch, "best_score": self.best_score}

    def load_state_dict(self, state_dict):
        self.wait_count = state_dict["wait_count"]
        self.stopped_epoch = state_dict["stopped_epoch"]
        self.best_score = state_dict["best_score"]


class LearningRateMonitor(Callback):
    def __init__(self):
        self.lrs = []

    def on_train_batch_end(self, trainer, pl_module):
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])


class GradNormLogger(Callback):
    """lightning.pytorch.utilities.grad_norm, logged before each optimizer step."""

    def __init__(self):
        self.norms = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        norms = [torch.linalg.vector_norm(p.grad.detach(), 2) for p in pl_module.parameters() if p.grad is not None]
        self.norms.append(torch.linalg.vector_norm(torch.stack(norms), 2).item())


# --- precision plugins and the trainer ---


class Precision:
    def __init__(self, precision):
        self.precision = precision
        self.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10) if precision == "16-mixed" else None

    def forward_context(self):
        if self.precision == "bf16-mixed":
            return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def backward(self, loss):
        if self.scaler is not None:
            loss = self.scaler.scale(loss)
        loss.backward()

    def unscale(self, optimizer):
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)

    def optimizer_step(self, optimizer):
        if self.scaler is not None:
            self.scaler.step(optimizer)
            self.scaler.update()
        else:
            optimizer.step()


class Trainer:
    def __init__(self, max_epochs, callbacks, accumulate_grad_batches=1, gradient_clip_val=None, precision="32-true",
                 max_steps=-1):  # fmt: skip
        self.max_epochs = max_epochs
        self.max_steps = max_steps
        self.callbacks = callbacks
        self.accumulate_grad_batches = accumulate_grad_batches
        self.gradient_clip_val = gradient_clip_val
        self.precision_plugin = Precision(precision)
        self.callback_metrics = {}
        self.current_epoch = 0
        self.global_step = 0
        self.should_stop = False
        self.train_losses = []
        self.val_losses = []

    def _call(self, hook, *args):
        for callback in self.callbacks:
            getattr(callback, hook)(self, *args)

    def save_checkpoint(self, filepath):
        checkpoint = {
            "epoch": self.current_epoch,
            "global_step": self.global_step,
            "pytorch-lightning_version": "2.4.0",
            "state_dict": self.lightning_module.state_dict(),
            "loops": {
                "fit_loop": {
                    "epoch_progress": {"current": {"completed": self.current_epoch + 1}},
                    # the shuffling generator's state, so that a resumed run draws the next epoch's order
                    "sampler_generator": self.train_dataloader.generator.get_state(),
                }
            },
            "callbacks": {type(callback).__name__: callback.state_dict() for callback in self.callbacks},
            "optimizer_states": [optimizer.state_dict() for optimizer in self.optimizers],
            "lr_schedulers": [config["scheduler"].state_dict() for config in self.lr_scheduler_configs],
            "hyper_parameters": dict(self.lightning_module.hparams),
        }
        if self.precision_plugin.scaler is not None:
            checkpoint["MixedPrecision"] = self.precision_plugin.scaler.state_dict()
        torch.save(checkpoint, filepath)

    def _restore(self, ckpt_path):
        checkpoint = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        self.lightning_module.load_state_dict(checkpoint["state_dict"])
        for optimizer, state in zip(self.optimizers, checkpoint["optimizer_states"]):
            optimizer.load_state_dict(state)
        for config, state in zip(self.lr_scheduler_configs, checkpoint["lr_schedulers"]):
            config["scheduler"].load_state_dict(state)
        for callback in self.callbacks:
            callback.load_state_dict(checkpoint["callbacks"].get(type(callback).__name__, {}))
        if self.precision_plugin.scaler is not None:
            self.precision_plugin.scaler.load_state_dict(checkpoint["MixedPrecision"])
        self.global_step = checkpoint["global_step"]
        fit_loop = checkpoint["loops"]["fit_loop"]
        self.current_epoch = fit_loop["epoch_progress"]["current"]["completed"]
        self.train_dataloader.generator.set_state(fit_loop["sampler_generator"])

    def fit(self, model, train_dataloaders, val_dataloaders, ckpt_path=None):
        self.lightning_module = model
        model.trainer = self
        self.train_dataloader = train_dataloaders
        self.estimated_stepping_batches = self.max_epochs * (len(train_dataloaders) // self.accumulate_grad_batches)
        config = model.configure_optimizers()
        self.optimizers = [config["optimizer"]]
        self.lr_scheduler_configs = [config["lr_scheduler"]]
        if ckpt_path is not None:
            self._restore(ckpt_path)
        while self.current_epoch < self.max_epochs and not self.should_stop:
            self._run_train_epoch(model)
            self._run_validation(model, val_dataloaders)
            if self.should_stop or (0 < self.max_steps <= self.global_step):
                break
            self.current_epoch += 1

    def _run_train_epoch(self, model):
        model.train()
        optimizer = self.optimizers[0]
        plugin = self.precision_plugin
        for batch_idx, batch in enumerate(self.train_dataloader):
            with plugin.forward_context():
                loss = model.training_step(batch, batch_idx)
            plugin.backward(loss / self.accumulate_grad_batches)
            self.train_losses.append(loss.item())
            if (batch_idx + 1) % self.accumulate_grad_batches == 0:
                plugin.unscale(optimizer)
                self._call("on_before_optimizer_step", model, optimizer)
                if self.gradient_clip_val is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), self.gradient_clip_val)
                plugin.optimizer_step(optimizer)
                optimizer.zero_grad(set_to_none=True)
                for config in self.lr_scheduler_configs:
                    if config["interval"] == "step" and self.global_step % config["frequency"] == 0:
                        config["scheduler"].step()
                self.global_step += 1
                self._call("on_train_batch_end", model)
        model.on_train_epoch_end()

    def _run_validation(self, model, dataloader):
        model.eval()
        with torch.inference_mode():
            for batch_idx, batch in enumerate(dataloader):
                with self.precision_plugin.forward_context():
                    model.validation_step(batch, batch_idx)
        model.on_validation_epoch_end()
        self.val_losses.append(self.callback_metrics["val_loss"].item())
        self._call("on_validation_end", model)
        model.train()


def build():
    seed_everything(42)
    return LitClassifier(dropout=DROPOUT)


def make_datasets(seed=0, n=80):
    """Three Gaussian blobs in 8 dimensions, split 75/25 by a seeded generator."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1.5, size=(CLASSES, FEATURES))
    y = rng.integers(0, CLASSES, size=n)
    x = (centers[y] + rng.normal(0, 1.0, size=(n, FEATURES))).astype(np.float32)
    dataset = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    return torch.utils.data.random_split(dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(42))


def _loaders(train_set, val_set):
    train_loader = DataLoader(train_set, batch_size=BATCH, shuffle=SHUFFLE, drop_last=True,
                              generator=torch.Generator().manual_seed(7))  # fmt: skip
    return train_loader, DataLoader(val_set, batch_size=BATCH)


def _fit(model, dirpath, max_epochs, max_steps=-1, ckpt_path=None):
    train_set, val_set = make_datasets()
    train_loader, val_loader = _loaders(train_set, val_set)
    checkpoint = ModelCheckpoint(dirpath)
    callbacks = [checkpoint, EarlyStopping(patience=2), LearningRateMonitor(), GradNormLogger()]
    trainer = Trainer(max_epochs, callbacks, accumulate_grad_batches=ACCUMULATE, gradient_clip_val=1.0,
                      precision=PRECISION, max_steps=max_steps)  # fmt: skip
    trainer.fit(model, train_loader, val_loader, ckpt_path=ckpt_path)
    return trainer, checkpoint


def train(model, steps=EPOCHS):
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_float32_matmul_precision("high")
    initial = {key: value.clone() for key, value in model.state_dict().items()}
    with tempfile.TemporaryDirectory() as dirpath:
        trainer, checkpoint = _fit(model, dirpath, max_epochs=steps)
        lrs = trainer.callbacks[2].lrs
        grad_norms = trainer.callbacks[3].norms
        best = LitClassifier.load_from_checkpoint(checkpoint.best_model_path)
        best.eval()
        _, val_set = make_datasets()
        x_val = torch.stack([val_set[i][0] for i in range(len(val_set))])
        with torch.no_grad():
            best_logits = best(x_val)

        # the same run stopped after its first epoch and resumed from last.ckpt continues the same way
        with tempfile.TemporaryDirectory() as second:
            first = LitClassifier(dropout=DROPOUT)
            first.load_state_dict(initial)
            seed_everything(42)
            _fit(first, second, max_epochs=steps, max_steps=trainer.estimated_stepping_batches // steps)
            resumed_model = LitClassifier(dropout=DROPOUT)
            resumed, _ = _fit(resumed_model, second, max_epochs=steps, ckpt_path=os.path.join(second, "last.ckpt"))
    epoch_batches = len(trainer.train_losses) // len(trainer.val_losses)
    same_params = all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), resumed_model.state_dict().values())
    )
    return {
        "losses": [
            float(np.mean(epoch)) for epoch in np.split(np.array(trainer.train_losses), len(trainer.val_losses))
        ],
        "batch_losses": trainer.train_losses,
        "val_losses": trainer.val_losses,
        "val_acc": trainer.callback_metrics["val_acc"].item(),
        "lrs": lrs,
        "grad_norms": grad_norms,
        "best_score": checkpoint.best_model_score.item(),
        "best_logits": best_logits[:4].flatten().tolist(),
        "resumed_losses": resumed.train_losses,
        "resumes_exactly": resumed.train_losses == trainer.train_losses[epoch_batches:] and same_params,
        "precision": torch.get_float32_matmul_precision(),
        "scale": trainer.precision_plugin.scaler.get_scale() if trainer.precision_plugin.scaler else 0.0,
    }


if __name__ == "__main__":
    print(train(build()))
