"""The gaps the official-tutorial programs of tests/test_programs_s.py found, each against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

A = np.linspace(-1.0, 1.5, 6, dtype=np.float32).reshape(2, 3)


def _node_hooks_run(m):
    """Gradients through a node whose prehook scales its gradient and whose hook replaces one input's."""
    x = m.tensor(A, requires_grad=True)
    w = m.tensor(A[::-1].copy(), requires_grad=True)
    h = (x * w).tanh()
    seen = []
    pre = h.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 3,))
    post = h.grad_fn.next_functions[0][0].register_hook(
        lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)) or (grad_inputs[0], grad_inputs[1] * 0)
    )
    h.sum().backward(retain_graph=True)
    first = [x.grad.numpy().copy(), w.grad.numpy().copy()]
    pre.remove()
    post.remove()
    h.sum().backward()
    return first + [x.grad.numpy(), w.grad.numpy(), seen]


def test_node_prehook_and_hook_change_the_gradients_as_pytorchs():
    expected, got = _node_hooks_run(torch), _node_hooks_run(vkml)
    for e, g in zip(expected[:4], got[:4], strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    assert got[4] == expected[4] == [2]


def test_node_metadata_and_isinstance_node():
    for m in (torch, vkml):
        x = m.tensor(A, requires_grad=True)
        y = (x * 2).sum()
        y.grad_fn.metadata["tag"] = "loss"
        assert y.grad_fn.metadata == {"tag": "loss"}
        accumulate = y.grad_fn.next_functions[0][0].next_functions[0][0]
        assert isinstance(y.grad_fn, m.autograd.graph.Node)
        assert isinstance(accumulate, m.autograd.graph.Node)
        assert not isinstance(x, m.autograd.graph.Node)


def test_node_hook_returning_a_wrong_count_raises_as_pytorch():
    for m in (torch, vkml):
        x = m.tensor(A, requires_grad=True)
        y = x.exp()
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (None, None))
        with pytest.raises(RuntimeError, match="returned an incorrect number of values"):
            y.sum().backward()


def _timed(benchmark_module, m):
    x = m.ones(4, 4)
    timer = benchmark_module.Timer(
        stmt="(x @ x).sum().item()", globals={"x": x}, label="mm", sub_label="4x4", description="ones"
    )
    once, blocks = timer.timeit(7), timer.blocked_autorange(min_run_time=0.001)
    return [
        once.number_per_run,
        len(once.times),
        once.times[0] == once.raw_times[0] / 7,
        once.mean > 0,
        blocks.median > 0,
        len(blocks.times) >= 1,
        once.title,
        once.description,
        repr(once).splitlines()[1:3],
        repr(once).splitlines()[-1].strip(),
    ]


def test_benchmark_timer_measures_as_pytorchs():
    import torch.utils.benchmark

    import vkml.utils.benchmark

    assert _timed(vkml.utils.benchmark, vkml) == _timed(torch.utils.benchmark, torch)
    table = str(vkml.utils.benchmark.Compare([vkml.utils.benchmark.Timer("1 + 1", label="add").timeit(3)]))
    assert table.startswith("[----- add -----]") and "Times are in" in table


def _export_round_trip(m, tmp_path):
    """A scripted model saved by ``jit.save`` with an extra file, loaded back by ``jit.load``: its outputs."""
    m.manual_seed(0)
    model = m.jit.script(m.nn.Sequential(m.nn.Linear(3, 2), m.nn.Tanh()))
    path = str(tmp_path / f"{m.__name__}.pt")
    m.jit.save(model, path, _extra_files={"note.txt": "v1"})
    extra = {"note.txt": ""}
    loaded = m.jit.load(path, map_location="cpu", _extra_files=extra)
    x = m.tensor(A)
    return [model(x).tolist(), loaded(x).tolist(), bytes(extra["note.txt"]), sorted(loaded.state_dict())]


def test_jit_save_and_load_round_trip_a_scripted_model_as_pytorchs(tmp_path):
    expected, got = _export_round_trip(torch, tmp_path), _export_round_trip(vkml, tmp_path)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)
    assert got[1] == got[0] and expected[1] == expected[0]
    assert got[2:] == expected[2:]
    vkml.save({"w": vkml.ones(2)}, str(tmp_path / "plain.pt"))
    with pytest.raises(RuntimeError, match="no module vkml.jit.save wrote"):
        vkml.jit.load(str(tmp_path / "plain.pt"))


def test_quantization_entry_points_refuse_and_stubs_pass_through():
    import vkml.ao.quantization
    import vkml.quantization

    assert vkml.quantization is vkml.ao.quantization
    model = vkml.nn.Sequential(
        vkml.ao.quantization.QuantStub(), vkml.nn.Linear(3, 2), vkml.ao.quantization.DeQuantStub()
    )
    reference = torch.nn.Sequential(
        torch.ao.quantization.QuantStub(), torch.nn.Linear(3, 2), torch.ao.quantization.DeQuantStub()
    )
    model.load_state_dict({k: vkml.tensor(v.numpy()) for k, v in reference.state_dict().items()})
    np.testing.assert_allclose(model(vkml.tensor(A)).numpy(), reference(torch.tensor(A)).detach().numpy(), rtol=1e-6)
    for name in ("quantize_dynamic", "prepare", "convert", "fuse_modules", "get_default_qconfig", "quantize"):
        with pytest.raises(NotImplementedError, match=f"torch.ao.quantization.{name}: vkml cannot quantize"):
            getattr(vkml.quantization, name)(model)
    assert not hasattr(vkml, "qint8")
    with pytest.raises(AttributeError, match="no quantized tensors"):
        vkml.quint8  # noqa: B018


def _scheduled_traces(m, tmp_path):
    """The steps at which a scheduled profile saved, and the user ranges each saved trace holds."""
    profiler = m.profiler
    saved = []

    def trace_ready(prof):
        names = sorted(e.key for e in prof.key_averages() if e.key.startswith("step_"))
        saved.append((prof.step_num, names))

    x = m.ones(2, 3)
    plan = profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], schedule=plan, on_trace_ready=trace_ready) as p:
        for step in range(10):
            with profiler.record_function(f"step_{step}"):
                (x * step).sum().item()
            p.step()
    handler = profiler.tensorboard_trace_handler(str(tmp_path / m.__name__), worker_name="w")
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], on_trace_ready=handler):
        (x * 2).sum().item()
    files = sorted(p.name.split(".")[-3:][0] for p in (tmp_path / m.__name__).iterdir())
    return saved, [plan(step).name for step in range(10)], files


@pytest.mark.stress  # PyTorch's profiler takes seconds to start
def test_profiler_schedule_and_on_trace_ready_as_pytorchs(tmp_path):
    assert _scheduled_traces(vkml, tmp_path) == _scheduled_traces(torch, tmp_path)


@pytest.mark.parametrize(
    "arguments",
    [{"wait": 1, "warmup": 1, "active": 2, "repeat": 2}, {"wait": 0, "warmup": 2, "active": 1, "skip_first": 3},
     {"wait": 2, "warmup": 1, "active": 3, "skip_first_wait": 1}],
)  # fmt: skip
def test_profiler_schedule_gives_pytorchs_actions(arguments):
    import torch.profiler
    import vkml.profiler

    expected = [torch.profiler.schedule(**arguments)(step).name for step in range(20)]
    assert [vkml.profiler.schedule(**arguments)(step).name for step in range(20)] == expected


def _bucketing_run(m):
    """The gradient-bucketing idiom: hooks on each parameter's AccumulateGrad, one scaling the gradient
    before it is accumulated, one reading ``.grad`` after."""
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 1))
    seen, accumulators = [], []
    for name, p in model.named_parameters():
        accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
        accumulator.register_prehook(lambda grad_outputs: (grad_outputs[0] * 0.5,))
        accumulator.register_hook(
            lambda grad_inputs, grad_outputs, name=name, p=p: seen.append((name, len(grad_inputs), p.grad.sum().item()))
        )
        accumulators.append(accumulator)  # kept alive, as DDP-style code keeps them
    for _ in range(2):
        model(m.tensor(A)).sum().backward()
    return sorted(seen), [p.grad.numpy().copy() for p in model.parameters()]


def test_accumulate_grad_hooks_run_around_the_leaf_accumulation_as_pytorchs():
    (expected_seen, expected), (got_seen, got) = _bucketing_run(torch), _bucketing_run(vkml)
    assert [s[:2] for s in got_seen] == [s[:2] for s in expected_seen]
    np.testing.assert_allclose([s[2] for s in got_seen], [s[2] for s in expected_seen], rtol=1e-5, atol=1e-6)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)


def test_cuda_memory_module_names_pytorchs_functions_and_refuses_history():
    import torch.cuda.memory
    import vkml.cuda.memory

    for name in vkml.cuda.memory.__all__:
        assert hasattr(torch.cuda.memory, name)
        assert getattr(vkml.cuda.memory, name) is getattr(vkml.cuda, name)
    for name in ("_record_memory_history", "_dump_snapshot"):
        assert hasattr(torch.cuda.memory, name)
        with pytest.raises(NotImplementedError, match=f"torch.cuda.memory.{name}: vkml keeps no allocation history"):
            getattr(vkml.cuda.memory, name)()


def _saved_tensors_run(m):
    """The saved-tensor hooks tutorial's first part: what ``grad_fn._saved_*`` gives, and hooks on one saved
    operand by ``_raw_saved_self.register_hooks``; then the errors once backward freed them."""
    x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y, z = x.pow(2), x.exp()
    out = [y.grad_fn._saved_self is x, z.grad_fn._saved_result.equal(z), z.grad_fn._saved_result is z]
    a, b = m.tensor(A[0], requires_grad=True), m.tensor(A[1], requires_grad=True)
    c = a * b
    out += [c.grad_fn._saved_self is a, c.grad_fn._saved_other is b, hasattr(c.grad_fn, "_saved_nothing")]
    calls = []
    c.grad_fn._raw_saved_other.register_hooks(
        lambda t: calls.append("pack") or t * 1, lambda t: calls.append("unpack") or t
    )
    out.append(list(calls))
    c.sum().backward()
    out += [list(calls), a.grad.tolist()]
    for attempt in (lambda: c.grad_fn._saved_self, lambda: c.grad_fn._raw_saved_self.register_hooks(id, id)):
        with pytest.raises(RuntimeError) as error:
            attempt()
        out.append(str(error.value).split(".")[0])
    return out


def test_saved_tensor_attributes_and_raw_hooks_as_pytorchs():
    assert _saved_tensors_run(vkml) == _saved_tensors_run(torch)
