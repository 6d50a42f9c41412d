"""PyTorch names training scripts call that vkml lacked: process-wide switches, storage queries, small
constructors, torch.cuda's random state and timing, nn and data loading spellings. Each is checked
against torch where the answer is defined by PyTorch (vkml/frontend/runtime_names.py says where vkml
answers for itself: data_ptr is not an address, set_flush_denormal is False)."""

import io
import pickle
import warnings

import numpy as np
import pytest
import torch

import vkml


def test_process_wide_switches_round_trip_as_pytorchs():
    for m in (torch, vkml):
        assert m.is_anomaly_enabled() is False and m.is_anomaly_check_nan_enabled() is True
        m.set_anomaly_enabled(True, check_nan=False)
        assert m.is_anomaly_enabled() is True and m.is_anomaly_check_nan_enabled() is False
        m.set_anomaly_enabled(False)
        assert m.is_warn_always_enabled() is False
        m.set_warn_always(True)
        assert m.is_warn_always_enabled() is True
        m.set_warn_always(False)
        assert isinstance(m.get_num_interop_threads(), int) and m.get_num_interop_threads() > 0
    assert vkml.set_flush_denormal(True) is False  # no mode to set: denormals are kept (documented)
    with pytest.raises(RuntimeError):
        vkml.set_num_interop_threads(0)
    assert vkml.get_device_module("cpu") is vkml.cpu and vkml.get_device_module("cuda") is vkml.cuda
    assert vkml.default_generator.initial_seed() == vkml.initial_seed()
    assert isinstance(vkml.GradScaler("cuda"), vkml.amp.GradScaler)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: (x[1:].data_ptr() - x.data_ptr(), x.t().data_ptr() == x.data_ptr(), m.zeros(0).data_ptr()),
        lambda m, x: (x[1].untyped_storage().nbytes(), x.untyped_storage().size(), len(x[:, 1:].untyped_storage())),
        lambda m, x: (x.untyped_storage().data_ptr() == x.data_ptr(), x.untyped_storage() == x.t().untyped_storage()),
        lambda m, x: (x.is_set_to(x), x.is_set_to(x[:]), x.is_set_to(x.t()), x.is_set_to(x.clone())),
        lambda m, x: (m.empty_strided((2, 3), (1, 2)).stride(), m.empty_strided((2, 3), (3, 1)).is_contiguous()),
        lambda m, x: (
            x.new_empty_strided((3, 2), (1, 3)).stride(),
            x.new_empty_strided((3, 2), (1, 3)).dtype == x.dtype,
        ),
        lambda m, x: x.clone().apply_(lambda v: v * v + 1).tolist(),
        lambda m, x: x.clone().map_(m.tensor([1.0, 2.0, 3.0]), lambda a, b: a - 2 * b).tolist(),
        lambda m, x: m.frombuffer(bytearray(np.arange(5, dtype=np.int32).tobytes()), dtype=m.int32, offset=4).tolist(),
        lambda m, x: m.frombuffer(
            bytearray(np.arange(4, dtype=np.float16).tobytes()), dtype=m.float16, count=2
        ).tolist(),
        lambda m, x: (
            m.detach_(x.clone().requires_grad_() * 2).requires_grad,
            m.resize_as_(m.zeros(6), x).shape == x.shape,
        ),
    ],
)
def test_storage_and_constructor_answers_match_pytorch(call):
    data = [[0.0, 1.5, -2.0], [3.0, 4.0, 0.5]]
    assert call(vkml, vkml.tensor(data)) == call(torch, torch.tensor(data))


def test_is_shared_follows_share_memory_as_pytorchs():
    for m in (torch, vkml):
        x = m.zeros(2, 3)
        assert x.is_shared() is False
        assert x.share_memory_() is x
        assert (x.is_shared(), x[1].is_shared(), x.t().is_shared(), x.clone().is_shared()) == (True, True, True, False)


def test_binomial_counts_successes_and_refuses_what_pytorch_refuses():
    vkml.manual_seed(0)
    count, prob = vkml.tensor([0.0, 4.0, 7.0, 7.0]), vkml.tensor([0.3, 0.0, 1.0, 0.5])
    got = vkml.binomial(count, prob)
    assert got.dtype == vkml.float32 and got.tolist()[:3] == [0.0, 0.0, 7.0] and 0 <= got.tolist()[3] <= 7
    for m in (torch, vkml):
        with pytest.raises(ValueError, match="floating-point dtypes for count"):
            m.binomial(m.tensor([5, 10]), m.tensor([0.5, 0.2]))


def test_cuda_random_state_streams_and_events():
    vkml.manual_seed(3)
    state = vkml.cuda.get_rng_state()
    first = vkml.rand(3).tolist()
    vkml.cuda.set_rng_state(state)
    assert vkml.rand(3).tolist() == first
    assert len(vkml.cuda.get_rng_state_all()) == vkml.cuda.device_count()
    vkml.cuda.manual_seed_all(5)
    assert vkml.cuda.initial_seed() == 5
    vkml.cuda.set_device(vkml.cuda.current_device())
    free, total = vkml.cuda.mem_get_info()
    assert 0 <= free <= total and "allocated bytes" in vkml.cuda.memory_summary()
    start, end = vkml.cuda.Event(enable_timing=True), vkml.cuda.Event(enable_timing=True)
    start.record()
    with vkml.cuda.stream(vkml.cuda.Stream()):
        (vkml.ones(8, device="cuda") * 2).sum().item()
    end.record()
    assert start.elapsed_time(end) >= 0 and end.query()
    with pytest.raises(RuntimeError, match="enable_timing"):
        vkml.cuda.Event().elapsed_time(end)
    for device in ("cpu", "cuda"):
        stream = vkml.Stream(device)
        first, last = vkml.Event(device, enable_timing=True), vkml.Event(device, enable_timing=True)
        first.record(stream)
        stream.synchronize()
        stream.record_event(last)
        assert first.elapsed_time(last) >= 0 and stream.query() and stream == vkml.Stream(device)


def test_nn_and_data_spellings():
    shared = vkml.nn.Linear(2, 2)
    net = vkml.nn.Sequential(shared, shared)
    assert len(list(net.modules())) == 2 and len(list(net.modules(remove_duplicate=False))) == 3
    with pytest.warns(FutureWarning) as caught:
        act = vkml.nn.Hardtanh(min_value=-0.5, max_value=0.5)
    assert ["min_value" in str(w.message) for w in caught] == [True, False]
    assert act(vkml.tensor([-1.0, 0.25, 2.0])).tolist() == [-0.5, 0.25, 0.5]
    with pytest.raises(AssertionError, match="must be greater than"):
        vkml.nn.Hardtanh(1.0, 0.0)
    stacked = vkml.utils.data.StackDataset(x=vkml.arange(4), y=[10, 11, 12, 13])
    batches = list(vkml.utils.data.DataLoader(stacked, batch_size=2, in_order=False))
    assert [b["x"].tolist() for b in batches] == [[0, 1], [2, 3]] and batches[1]["y"].tolist() == [12, 13]
    ours = torch.utils.data.StackDataset([1, 2], ["a", "b"])
    assert vkml.utils.data.StackDataset([1, 2], ["a", "b"]).__getitems__([1, 0]) == ours.__getitems__([1, 0])
    with pytest.raises(ValueError, match="Size mismatch"):
        vkml.utils.data.StackDataset([1], [1, 2])
    buf = io.BytesIO()
    vkml.save({"w": vkml.ones(2)}, buf, pickle_module=pickle, pickle_protocol=4)
    buf.seek(0)
    assert vkml.load(buf)["w"].tolist() == [1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vkml.nn.Hardtanh()
