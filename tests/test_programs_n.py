"""Third-party-style training programs (tests/programs/) run under vkml as under PyTorch, by their import
lines alone: pytorch/examples' imagenet/main.py loop (imagenet_main), ultralytics/yolov5's model and
ComputeLoss (yolo_loss), pytorch/examples' snli (snli_classifier), a BiLSTM tagger over packed sequences
(lstm_tagger), mnist_hogwild with workers run in turn (mnist_hogwild), an SNGAN projection discriminator
(sngan_projection), metric learning (metric_learning), optimizers users write (custom_optimizers) and
Megatron-LM's GPT block with TorchScript-decorated helpers (megatron_fused).

As in tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; random draws the programs make (``torch.randn`` noise,
``randint`` labels, a seeded shuffling ``DataLoader``) stay live, since vkml's generator gives PyTorch's
draws; dropout is off (``DROPOUT = 0``). The whole comparisons run with ``make test-all`` (``-m stress``);
``make test`` compares three of the programs' functions. The gaps they found are tested in
tests/test_program_fixes_n.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_programs import _load, _numbers, compare_program, program_tests, run_program

# name: (steps, rtol)
PROGRAMS = {
    "imagenet_main": (4, 1e-4),
    "yolo_loss": (3, 1e-4),
    "snli_classifier": (4, 1e-4),
    "lstm_tagger": (4, 1e-4),
    "mnist_hogwild": (4, 1e-4),
    "sngan_projection": (2, 1e-4),
    "metric_learning": (3, 1e-4),
    "custom_optimizers": (4, 1e-4),
    "megatron_fused": (3, 1e-4),
}
VARIANTS = {
    "yolo_loss": [{"FL_GAMMA": 1.5}],
    "snli_classifier": [{"BIRNN": False, "FIX_EMB": False, "PROJECTION": False, "N_LAYERS": 2}],
    "sngan_projection": [{"SN": "parametrizations", "LOSS": "ns"}],
    "metric_learning": [{"LOSS": "arcface"}, {"LOSS": "cosine_triplet"}],
    "custom_optimizers": [{"OPTIMIZER": "lookahead"}, {"OPTIMIZER": "adamw"}, {"ADAPTIVE": True}],
    "megatron_fused": [{"FUSED": False, "GRAD_ACC": 1}],
    "lstm_tagger": [{"LOSS": "packed", "SORT": "tensor"}, {"SORT": "tensor", "CHAR_CNN": False}],
}

# Both libraries on the CPU for the comparison (PyTorch's CUDA convolutions may round in TF32)
CONSTANTS = {"imagenet_main": {"USE_CUDA": False}}

test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS, CONSTANTS)


@pytest.mark.stress
def test_imagenet_resume_goes_on_as_the_uninterrupted_run(monkeypatch):
    got = compare_program("imagenet_main", monkeypatch, 4, 1e-4, constants=CONSTANTS["imagenet_main"])
    assert got["resumes_exactly"] and got["best_saved"] and got["best"] == [True, False]


@pytest.mark.stress
def test_imagenet_on_the_vulkan_device_gives_the_cpu_bits(gpu, monkeypatch):
    """As written: "cuda" is the Vulkan device, and the loaded CPU best_acc1 meets the device's accuracy."""
    initial, on_cpu = run_program("imagenet_main", "vkml", monkeypatch, 4, constants={"USE_CUDA": False})
    _, on_vulkan = run_program("imagenet_main", "vkml", monkeypatch, 4, initial, {"USE_CUDA": True})
    assert _numbers(on_vulkan) == _numbers(on_cpu)


def _both(name, monkeypatch):
    return _load(name, "torch", monkeypatch), _load(name, "vkml", monkeypatch)


def test_imagenet_accuracy_and_meters_match_pytorch(monkeypatch):
    """accuracy(topk=(1, 5)) of a batch, fed to AverageMeters as 0-d tensors and printed by their format."""
    rng = np.random.default_rng(0)
    output = rng.normal(size=(8, 6)).astype(np.float32)
    target = rng.integers(0, 6, size=8)
    lines = []
    for program in _both("imagenet_main", monkeypatch):
        torch = program.torch
        acc1, acc5 = program.accuracy(torch.tensor(output), torch.tensor(target), topk=(1, 5))
        top1, top5 = program.AverageMeter("Acc@1", ":6.2f"), program.AverageMeter("Acc@5", ":6.2f")
        for n in (8, 4):
            top1.update(acc1[0], n)
            top5.update(acc5[0], n)
        best = max(top1.avg, 0)
        lines.append([str(top1), str(top5), top1.summary(), float(best), bool(top1.avg > 0)])
    assert lines[1] == lines[0]


def test_yolo_ciou_and_targets_match_pytorch(monkeypatch):
    """bbox_iou(CIoU=True) with its gradient, and build_targets' indices, boxes and anchors for one batch."""
    rng = np.random.default_rng(1)
    boxes = np.abs(rng.normal(1.0, 0.4, size=(2, 5, 4))).astype(np.float32)
    _, targets = _load("yolo_loss", "torch", monkeypatch).synthetic_batch(rng)
    results = []
    for program in _both("yolo_loss", monkeypatch):
        torch = program.torch
        box1 = torch.tensor(boxes[0], requires_grad=True)
        iou = program.bbox_iou(box1, torch.tensor(boxes[1]), CIoU=True)
        iou.sum().backward()
        detect = program.Detect(program.NC, program.ANCHORS, (4, 4))  # the head alone: no strides' forward
        detect.stride = torch.tensor([4.0, 8.0])
        detect.anchors /= detect.stride.view(-1, 1, 1)
        model = program.nn.Module()
        model.model, model.hyp = program.nn.Sequential(detect), program.HYP
        compute_loss = program.ComputeLoss(model)
        p = [torch.zeros(2, 3, 8, 8, 8), torch.zeros(2, 3, 4, 4, 8)]
        tcls, tbox, indices, anch = compute_loss.build_targets(p, torch.tensor(targets))
        flat = [t.tolist() for t in tcls + tbox + anch] + [[x.tolist() for x in index] for index in indices]
        results.append((iou.detach().numpy(), box1.grad.numpy(), flat))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-4, atol=1e-6)
    assert results[1][2] == results[0][2]


def test_batch_hard_triplet_loss_matches_pytorch(monkeypatch):
    rng = np.random.default_rng(2)
    embeddings = rng.normal(size=(6, 4)).astype(np.float32)
    embeddings[3] = embeddings[1]  # a zero distance: the masked sqrt
    labels = np.array([0, 0, 1, 1, 2, 2])
    results = []
    for program in _both("metric_learning", monkeypatch):
        torch = program.torch
        e = torch.tensor(embeddings, requires_grad=True)
        loss = program.batch_hard_triplet_loss(torch.tensor(labels), e, margin=0.5)
        loss.backward()
        results.append((loss.item(), e.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-4, atol=1e-6)
