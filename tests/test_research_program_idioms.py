"""The gaps the research-code programs (tests/test_programs_research.py) and their probes found, each
checked against PyTorch: ``distributions.LowRankMultivariateNormal``, ``func.stack_module_state``
(the model-ensembling recipe: stacked parameters run by ``vmap(functional_call)``) and ``ctc_loss`` on a
Vulkan device with host targets and lengths (ctc_speech on lavapipe), and ``LSTM(proj_size=...)``."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch

import vkml
import vkml.distributions as D


def _lowrank(library, loc, factor, diag):
    return library.distributions.LowRankMultivariateNormal(
        library.tensor(loc), library.tensor(factor), library.tensor(diag)
    )


def test_lowrank_multivariate_normal_matches_pytorch():
    rng = np.random.default_rng(0)
    loc = rng.standard_normal((2, 3)).astype(np.float32)  # a batch of two 3-vectors, rank 2
    factor = rng.standard_normal((2, 3, 2)).astype(np.float32)
    diag = rng.uniform(0.5, 2.0, (1, 3)).astype(np.float32)  # broadcast over the batch
    value = rng.standard_normal((4, 2, 3)).astype(np.float32)
    expected, got = _lowrank(torch, loc, factor, diag), _lowrank(vkml, loc, factor, diag)
    assert tuple(got.batch_shape) == (2,) and tuple(got.event_shape) == (3,)
    for name in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        np.testing.assert_allclose(getattr(got, name).numpy(), getattr(expected, name).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        got.log_prob(vkml.tensor(value)).numpy(), expected.log_prob(torch.tensor(value)).numpy(), rtol=1e-5
    )
    np.testing.assert_allclose(got.entropy().numpy(), expected.entropy().numpy(), rtol=1e-5)
    vkml.manual_seed(0)
    assert tuple(got.rsample((5,)).shape) == (5, 2, 3) and tuple(got.expand((4, 2)).sample().shape) == (4, 2, 3)
    # the same density as the full-covariance MultivariateNormal
    full = D.MultivariateNormal(got.loc, covariance_matrix=got.covariance_matrix)
    np.testing.assert_allclose(
        got.log_prob(vkml.tensor(value)).numpy(), full.log_prob(vkml.tensor(value)).numpy(), rtol=1e-5
    )


def test_lowrank_multivariate_normal_gradients_and_errors_match_pytorch():
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(3), rng.standard_normal((3, 1)), rng.uniform(0.5, 1.5, 3)]
    grads = []
    for library in (torch, vkml):
        params = [library.tensor(v.astype(np.float32), requires_grad=True) for v in values]
        d = library.distributions.LowRankMultivariateNormal(*params)
        (-d.log_prob(library.ones(3)) - d.entropy()).backward()
        grads.append([p.grad.numpy() for p in params])
    for got, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for bad in [(vkml.zeros(3), vkml.zeros(2, 1), vkml.ones(3)), (vkml.zeros(3), vkml.zeros(3, 1), vkml.ones(2))]:
        with pytest.raises(ValueError, match="must be a batch of"):
            D.LowRankMultivariateNormal(*bad)


def test_stack_module_state_ensembles_like_pytorch():
    """torch.func's model-ensembling recipe: stacked leaves, vmap over (params, buffers), a trained ensemble."""
    results = []
    for library in (torch, vkml):
        library.manual_seed(0)
        models = [library.nn.Sequential(library.nn.Linear(3, 4), library.nn.BatchNorm1d(4)) for _ in range(3)]
        for i, model in enumerate(models):
            library.nn.init.constant_(model[0].weight, 0.1 * (i + 1))
            library.nn.init.constant_(model[0].bias, -0.05 * i)
            model.eval()
        params, buffers = library.func.stack_module_state(models)
        base = copy.deepcopy(models[0])
        data = library.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))

        def run(p, b, x, base=base, library=library):
            return library.func.functional_call(base, (p, b), (x,))

        out = library.func.vmap(run, in_dims=(0, 0, None))(params, buffers, data)
        out.pow(2).sum().backward()
        results.append(
            (
                sorted(params),
                sorted(buffers),
                [params[k].is_leaf and params[k].requires_grad for k in sorted(params)],
                [buffers[k].requires_grad for k in sorted(buffers)],
                out.detach().numpy(),
                params["0.weight"].grad.numpy(),
                models[0][0].weight.grad is None,
            )
        )
        with pytest.raises(RuntimeError, match="same training/eval mode"):
            library.func.stack_module_state([models[0], copy.deepcopy(models[1]).train()])
        with pytest.raises(RuntimeError, match="same class"):
            library.func.stack_module_state([models[0], library.nn.Linear(3, 4).eval()])
        with pytest.raises(RuntimeError, match="at least one model"):
            library.func.stack_module_state([])
        models[1][0].bias.requires_grad_(False)
        with pytest.raises(RuntimeError, match="0.bias from each model to have the same .requires_grad"):
            library.func.stack_module_state(models)
    (names, buffer_names, leaves, buffer_grads, out, grad, untouched), expected = results[1], results[0]
    assert (names, buffer_names, leaves, buffer_grads, untouched) == expected[:4] + (expected[6],)
    np.testing.assert_allclose(out, expected[4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, expected[5], rtol=1e-5, atol=1e-6)


def test_ctc_loss_takes_host_targets_and_lengths_for_device_log_probs(gpu):
    """ctc_speech on Vulkan: the targets and the lengths a collate function builds stay on the host, as
    cuDNN wants them; PyTorch reads the lengths wherever they are and moves the targets to log_probs'
    device, so the loss and its gradient are the CPU's (bit for bit on the Vulkan device)."""
    logits = np.random.default_rng(0).standard_normal((4, 2, 4)).astype(np.float32)
    targets, input_lengths, target_lengths = [1, 2, 3], [4, 3], [2, 1]

    def loss(library, device=None):
        x = library.tensor(logits, requires_grad=True)
        lp = library.nn.functional.log_softmax(x if device is None else x.to(device), 2)
        args = (library.tensor(targets), library.tensor(input_lengths), library.tensor(target_lengths))
        out = library.nn.CTCLoss(zero_infinity=True)(lp, *args)
        out.backward()
        return out.item(), x.grad.numpy()

    on_vulkan, on_cpu, expected = loss(vkml, gpu), loss(vkml), loss(torch)
    assert on_vulkan[0] == on_cpu[0] and np.array_equal(on_vulkan[1], on_cpu[1])
    assert on_cpu[0] == pytest.approx(expected[0], rel=2e-6)
    np.testing.assert_allclose(on_cpu[1], expected[1], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(
    "options, lengths",
    [
        pytest.param({"bidirectional": True, "batch_first": True}, None, id="bidirectional-hx"),
        # a second layer reads the first's proj_size-wide output (~8 s on the CPU interpreter)
        pytest.param({"num_layers": 2}, [3, 2, 1, 3], id="two-layer-packed-unsorted", marks=pytest.mark.stress),
    ],
)
def test_lstm_proj_size_matches_pytorch(options, lengths):
    """LSTMP (speech models' projected LSTM): parameter names and shapes, repr, outputs, final states and
    every gradient as PyTorch's, with (h_0, c_0) of widths proj_size and hidden_size, or a packed batch."""
    reference = torch.nn.LSTM(3, 5, proj_size=2, **options)
    model = vkml.nn.LSTM(3, 5, proj_size=2, **options)
    assert [(n, tuple(p.shape)) for n, p in model.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in reference.named_parameters()
    ]
    assert repr(model) == repr(reference)
    model.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 4, 3)).astype(np.float32)
    results = []
    for library, m in ((torch, reference), (vkml, model)):
        inputs = library.tensor(x, requires_grad=True)
        if lengths is None:
            layers = m.num_layers * (2 if m.bidirectional else 1)
            h0, c0 = library.full((layers, 3, 2), 0.1), library.full((layers, 3, 5), -0.2)
            out, (h, c) = m(inputs, (h0, c0))
        else:
            packed = library.nn.utils.rnn.pack_padded_sequence(inputs, library.tensor(lengths), enforce_sorted=False)
            out, (h, c) = m(packed)
            out = library.nn.utils.rnn.pad_packed_sequence(out)[0]
        ((out * out).sum() + 2 * h.sum() + c.sum()).backward()
        results.append(
            [t.detach().numpy() for t in (out, h, c, inputs.grad)] + [p.grad.numpy() for p in m.parameters()]
        )
    for got, expected in zip(results[1], results[0]):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_lstm_proj_size_errors_match_pytorch():
    for proj_size, message in ((-1, "positive integer or zero"), (5, "has to be smaller than hidden_size")):
        for library in (torch, vkml):
            with pytest.raises(ValueError, match=message):
                library.nn.LSTM(3, 5, proj_size=proj_size)


def test_sync_batchnorm_converts_and_trains_as_pytorch():
    """A DDP script's ``nn.SyncBatchNorm.convert_sync_batchnorm(model)`` run in one process: the same
    module tree on the same parameters, and BatchNorm's numbers (PyTorch's without a process group)."""
    x = np.random.default_rng(0).standard_normal((6, 2)).astype(np.float32)
    results, state = [], None
    for library in (torch, vkml):
        nn = library.nn
        model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3, momentum=None), nn.ReLU())
        model.add_module("head", nn.Sequential(nn.BatchNorm1d(3, affine=False)))
        weight = model[1].weight
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        assert model[1].weight is weight and model[1].process_group is None
        lone = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(3).eval())
        results.append((repr(model), type(lone).__name__, lone.training))
        if state is None:
            state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        else:
            model.load_state_dict({k: library.tensor(v) for k, v in state.items()})
        inputs = library.tensor(x, requires_grad=True)
        (model(inputs) * library.tensor(x[:, :1])).sum().backward()
        model.eval()
        out = model(inputs).detach().numpy()
        results.append([out, inputs.grad.numpy()] + [t.detach().numpy() for t in model.state_dict().values()])
        with pytest.raises(ValueError, match="expected at least 2D input"):
            nn.SyncBatchNorm(3)(library.ones(3))
    if "affine=True, bias=" not in results[0][0]:  # a PyTorch before BatchNorm's bias argument prints none
        results[2] = (re.sub(r"(affine=(?:True|False)), bias=(?:True|False)", r"\1", results[2][0]), *results[2][1:])
    assert results[2] == results[0]
    for got, expected in zip(results[3], results[1]):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_sync_batchnorm_in_a_process_group_wants_a_device_as_pytorch(gpu):
    """Inside an initialised process group a training SyncBatchNorm refuses CPU input, as PyTorch's does;
    on a Vulkan device (vkml's "cuda") it trains, a world of one giving BatchNorm's bits."""
    import vkml.distributed as dist

    layer, reference = vkml.nn.SyncBatchNorm(2), vkml.nn.BatchNorm1d(2)
    x = vkml.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
    dist.init_process_group("gloo")
    try:
        with pytest.raises(ValueError, match="SyncBatchNorm expected input tensor to be on GPU"):
            layer(x)
        on_device = layer.to(gpu)(x.to(gpu)).numpy()
    finally:
        dist.destroy_process_group()
    assert np.array_equal(on_device, reference(x).numpy())
