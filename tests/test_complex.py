"""Complex tensors and the torch.fft transforms (vkml/frontend/complex.py, fft.py; docs/complex.md) against
PyTorch: values, dtypes, PyTorch's gradients of real losses, views sharing storage, errors, a LLaMA rotary
embedding and a Fourier layer trained a few steps; the same bits on the CPU and on Vulkan."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml
import vkml.nn as vnn


def _v(t: torch.Tensor, device="cpu") -> vkml.Tensor:
    return vkml.tensor(t.detach().numpy(), device=device)


def _close(got, want, tol=2e-5):
    want = want.detach().resolve_conj()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=tol, atol=tol)


# each: f(module, z, w, x) with z, w complex64 (3, 4) and x float32 (3, 4)
OPS = {
    "add": lambda m, z, w, x: z + w - (x + z),
    "mul": lambda m, z, w, x: z * w * x * 2.5,
    "div": lambda m, z, w, x: z / w + x / z + z / x + 2 / z,
    "scalars": lambda m, z, w, x: z * (1 - 2j) + 1j - x * 1j + (2 + 1j) / z,
    "int_times_j": lambda m, z, w, x: m.arange(3) * 1j,
    "float64": lambda m, z, w, x: z * x.double(),
    "abs_angle_sgn": lambda m, z, w, x: m.complex(m.abs(z) + z.angle(), m.angle(w)) + z.sgn(),
    "exp_log_sqrt": lambda m, z, w, x: z.exp() + m.log(w) + z.sqrt() + w.reciprocal() + z**2 + z**0.5,
    "conj_parts": lambda m, z, w, x: m.complex(z.real, w.imag) + z.conj(),
    "reductions": lambda m, z, w, x: z.sum(0) + m.mean(w, 0) + z.sum(),
    "products": lambda m, z, w, x: z @ w.mT + m.einsum("ij,kj->ik", z, w),
    "polar": lambda m, z, w, x: m.polar(x.abs(), x),
    "views": lambda m, z, w, x: m.cat([z[1:, ::2].permute(1, 0).reshape(2, 2), m.stack([w[0, :2]] * 2)], 1),
    "inplace_alpha": lambda m, z, w, x: z.clone().sub_(1j).add_(x, alpha=2) + z.sub(x, alpha=2) + m.sub(x, z),
    "powers": lambda m, z, w, x: 2**z + x**1j + z**-2,
    "where_dot_cumsum": lambda m, z, w, x: (
        m.where(x > 0, z, 1j) + m.dot(z[0], w[0]) + m.vdot(z[1], w[1]) + z.cumsum(1) + m.outer(z[0], w[0])[:3]
    ),
    "trig": lambda m, z, w, x: (
        m.sin(z) + z.cos() + m.sinh(w) + w.cosh() + m.tanh(z) + z.rsqrt() + m.log2(w) + w.log10()
    ),
    "make": lambda m, z, w, x: m.tensor([1 + 2j, 3]) + m.ones(2, dtype=m.cfloat) + m.zeros(2, dtype=m.cfloat),
}


_SLOW_OPS = ("div", "exp_log_sqrt", "abs_angle_sgn", "powers", "trig")  # many kernels each: -m stress


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.stress) if n in _SLOW_OPS else n for n in sorted(OPS)]
)
def test_ops_match_pytorch(name):
    torch.manual_seed(0)
    zt, wt, xt = torch.randn(3, 4, dtype=torch.cfloat), torch.randn(3, 4, dtype=torch.cfloat), torch.randn(3, 4)
    _close(OPS[name](vkml, _v(zt), _v(wt), _v(xt)), OPS[name](torch, zt, wt, xt))


# real losses of complex intermediates: the gradients on the real leaves are PyTorch's (Wirtinger)
LOSSES = {
    "arith": lambda m, a, b: (m.view_as_complex(a) * m.view_as_complex(b) / (m.view_as_complex(b) + 3)).abs().sum(),
    "abs_angle_at_0": lambda m, a, b: (m.view_as_complex(a * 0).abs() + m.view_as_complex(b * 0).angle()).sum(),
    "exp_log_sqrt": lambda m, a, b: m.view_as_real(
        m.view_as_complex(a).exp() + m.view_as_complex(b).log() + m.view_as_complex(a).sqrt()
    ).sum(),
    "polar_complex": lambda m, a, b: (m.polar(a[..., 0].abs(), b[..., 1]) * m.complex(a[..., 1], b[..., 0])).imag.sum(),
    "trig": lambda m, a, b: m.view_as_real(m.view_as_complex(a).sin() * m.view_as_complex(b).tanh()).sum(),
    "products": lambda m, a, b: (
        m.einsum("ij,kj->ik", m.view_as_complex(a), m.view_as_complex(b)).real.exp().sum()
        + (m.view_as_complex(a) @ m.view_as_complex(b).mT).abs().sum()
    ),
    "fft": lambda m, a, b: (
        m.fft.fft(m.view_as_complex(a), norm="ortho").abs().sum()
        + m.fft.rfft2(b[..., 0]).real.sum()
        + m.fft.irfft(m.view_as_complex(b), n=7).pow(2).sum()
        + m.fft.hfft(m.view_as_complex(a)).sum()
    ),
}


@pytest.mark.parametrize(
    "name", [n if n == "fft" else pytest.param(n, marks=pytest.mark.stress) for n in sorted(LOSSES)]
)
def test_gradients_of_real_losses_match_pytorch(name):
    torch.manual_seed(1)
    a, b = torch.randn(3, 4, 2), torch.randn(3, 4, 2)
    ta, tb = a.clone().requires_grad_(), b.clone().requires_grad_()
    LOSSES[name](torch, ta, tb).backward()
    va, vb = vkml.tensor(a.numpy(), requires_grad=True), vkml.tensor(b.numpy(), requires_grad=True)
    LOSSES[name](vkml, va, vb).backward()
    for got, want in ((va.grad, ta.grad), (vb.grad, tb.grad)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.stress
def test_complex_leaf_gradient_is_pytorchs():
    zt = torch.randn(4, dtype=torch.cfloat, requires_grad=True)
    z = vkml.tensor(zt.detach().numpy()).requires_grad_()
    (zt * zt.conj() + zt.exp()).abs().sum().backward()
    (z * z.conj() + z.exp()).abs().sum().backward()
    assert z.is_leaf and z.grad.dtype is vkml.complex64
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-5)
    (g,) = vkml.autograd.grad((z * z.conj() + z.exp()).abs().sum(), [z])
    np.testing.assert_allclose(g.numpy(), zt.grad.numpy(), rtol=1e-5)


def _fft_cases(full: bool):
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        for n, norm, dim in ((4, "ortho", 1), (7, "forward", 0), (None, None, -1))[: 3 if full else 1]:
            yield name, {"n": n, "norm": norm, "dim": dim}
    for name in ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"):
        for s, dim in (((-1, 3), (0, 2)), (None, None), ((4, 6), None))[: 3 if full else 1]:
            yield name, {"s": s} | ({"dim": dim} if dim or not name.endswith("2") else {})


@pytest.mark.parametrize("full", [False, pytest.param(True, marks=pytest.mark.stress)])
def test_fft_family_matches_pytorch(full):
    torch.manual_seed(2)
    xt, zt = torch.randn(3, 6, 5), torch.randn(3, 6, 5, dtype=torch.cfloat)
    for name, kwargs in _fft_cases(full):
        for t in (xt, zt):
            try:
                want = getattr(torch.fft, name)(t, **kwargs)
            except RuntimeError as e:  # rfft of a complex input: PyTorch's error
                with pytest.raises(RuntimeError, match=str(e).split(",")[0]):
                    getattr(vkml.fft, name)(_v(t), **kwargs)
                continue
            _close(getattr(vkml.fft, name)(_v(t), **kwargs), want, tol=3e-5)
    for module in (torch, vkml):
        with pytest.raises(RuntimeError, match="Invalid normalization mode"):
            module.fft.fft(module.ones(4), norm="bad")
        with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
            module.fft.fft(module.ones(4), n=0)


def test_views_share_storage_and_parts_are_settable():
    x = vkml.zeros(3, 2)
    z = vkml.view_as_complex(x)
    x[1, 1] = 5.0
    assert z[1].item() == 5j
    z[0] = 1 + 2j
    assert x[0].tolist() == [1.0, 2.0]
    z.real = vkml.tensor([7.0, 8.0, 9.0])
    z.imag[2] = -1.0
    r = vkml.view_as_real(z)
    r[1, 0] = 3.0
    assert z.tolist() == [7 + 2j, 3 + 5j, 9 - 1j]
    assert x.tolist() == [[7.0, 2.0], [3.0, 5.0], [9.0, -1.0]]
    assert not z.is_conj() and z.conj().resolve_conj().tolist() == [7 - 2j, 3 - 5j, 9 + 1j]


def test_dtypes_promotion_and_values_out():
    z = vkml.tensor([1 + 2j, -3.5j])
    assert z.dtype is vkml.complex64 is vkml.cfloat and vkml.cdouble is vkml.complex128
    assert z.is_complex() and vkml.is_complex(z) and not vkml.is_complex(vkml.ones(1)) and not z.is_floating_point()
    assert (z * 2.0).dtype is vkml.complex64  # a Python float keeps complex64
    assert (vkml.ones(2, dtype=vkml.float64) + z).dtype is vkml.complex128
    assert (vkml.arange(2) * 1j).dtype is vkml.complex64
    assert vkml.from_numpy(np.array([1j], np.complex128)).dtype is vkml.complex128
    assert vkml.promote_types(vkml.float64, vkml.complex64) is vkml.complex128
    assert vkml.promote_types(vkml.int64, vkml.complex64) is vkml.complex64
    assert vkml.result_type(vkml.ones(2), 1j) is vkml.complex64 and vkml.result_type(z, 1.0) is vkml.complex64
    assert z.numpy().dtype == np.complex64 and z[1].item() == -3.5j and z.tolist() == [1 + 2j, -3.5j]
    assert repr(vkml.tensor([1 + 2j, -3.5j])) == repr(torch.tensor([1 + 2j, -3.5j]))
    assert repr(z.clone().requires_grad_().sum()).replace("vkml", "torch") == repr(
        torch.tensor([1 + 2j, -3.5j], requires_grad=True).sum()
    )
    assert z.view(vkml.float32).tolist() == [1.0, 2.0, -0.0, -3.5] and vkml.ones(2).type_as(z).dtype is z.dtype
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert z.float().tolist() == [1.0, 0.0]
    assert "discards the imaginary part" in str(caught[0].message)
    r = vkml.randn(20000, dtype=vkml.cfloat).numpy()  # PyTorch's split: each part of variance 1/2
    assert abs(r.real.var() - 0.5) < 0.03 and abs(r.imag.var() - 0.5) < 0.03


def test_unsupported_ops_raise_pytorchs_error_naming_the_op():
    z = vkml.ones(3, dtype=vkml.cfloat)
    for op, call in (("sigmoid", lambda: z.sigmoid()), ("erf", lambda: vkml.erf(z)), ("relu", lambda: vkml.relu(z))):
        with pytest.raises(RuntimeError, match=f"\"{op}\" not implemented for 'ComplexFloat'"):
            call()
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        z.reshape(1, 3) @ vkml.ones(3, 1)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        vkml.imag(vkml.ones(2))
    assert z.tolist() == [1, 1, 1]  # the tensor is intact


# LLaMA's rotary embedding, as its authors wrote it (facebookresearch/llama, model.py)
def _precompute_freqs_cis(torch, dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def _reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def _apply_rotary_emb(torch, xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = _reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def test_llama_rotary_embedding_matches_pytorch_and_vulkan_bits(gpu):
    torch.manual_seed(3)
    q, k = torch.randn(2, 5, 3, 8, requires_grad=True), torch.randn(2, 5, 3, 8)
    want_q, want_k = _apply_rotary_emb(torch, q, k, _precompute_freqs_cis(torch, 8, 16)[2:7])
    (want_q * want_k).sum().backward()
    bits = []
    for device in ("cpu", gpu):
        vq, vk = _v(q, device).requires_grad_(), _v(k, device)
        freqs = _precompute_freqs_cis(vkml, 8, 16).to(device)[2:7]
        got_q, got_k = _apply_rotary_emb(vkml, vq, vk, freqs)
        (got_q * got_k).sum().backward()
        _close(got_q, want_q, 1e-5)
        _close(got_k, want_k, 1e-5)
        np.testing.assert_allclose(vq.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-5)
        bits.append((got_q.detach().numpy(), vq.grad.numpy()))
    for a, b in zip(*bits):
        np.testing.assert_array_equal(a, b)


class _SpectralConv2d:
    """The Fourier layer of neuraloperator's FNO (Li et al.), as written there, for either module."""

    def __init__(self, torch, nn, weights1, weights2, modes: int):
        self.torch, self.modes = torch, modes
        self.weights1, self.weights2 = nn.Parameter(weights1), nn.Parameter(weights2)

    def __call__(self, x):
        torch, m = self.torch, self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(x.size(0), 2, x.size(-2), x.size(-1) // 2 + 1, dtype=torch.cfloat, device=x.device)
        out_ft[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.weights1)
        out_ft[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m:, :m], self.weights2)
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


@pytest.mark.stress
def test_fourier_layer_trains_as_pytorchs(gpu):
    torch.manual_seed(4)
    w1, w2 = 0.25 * torch.rand(2, 2, 2, 2, dtype=torch.cfloat), 0.25 * torch.rand(2, 2, 2, 2, dtype=torch.cfloat)
    x, y = torch.randn(3, 2, 6, 6), torch.randn(3, 2, 6, 6)
    ref = _SpectralConv2d(torch, torch.nn, w1.clone(), w2.clone(), 2)
    opt = torch.optim.Adam([ref.weights1, ref.weights2], lr=0.05)
    want = []
    for _ in range(3):
        opt.zero_grad()
        loss = ((ref(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        want.append(loss.item())
    runs = []
    for device in ("cpu", gpu):
        layer = _SpectralConv2d(vkml, vnn, _v(w1, device), _v(w2, device), 2)
        assert isinstance(layer.weights1, vnn.Parameter) and layer.weights1.dtype is vkml.cfloat
        vopt = vkml.optim.Adam([layer.weights1, layer.weights2], lr=0.05)
        got = []
        for _ in range(3):
            vopt.zero_grad()
            loss = ((layer(_v(x, device)) - _v(y, device)) ** 2).mean()
            loss.backward()
            vopt.step()
            got.append(loss.item())
        np.testing.assert_allclose(got, want, rtol=1e-5)
        _close(layer.weights1, ref.weights1, 1e-5)
        runs.append(layer.weights2.detach().numpy())
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.stress
def test_norms_closeness_clipping_and_checkpoints(tmp_path):
    zt = torch.randn(3, 4, dtype=torch.cfloat)
    z = _v(zt)
    for p in ("fro", 1):
        np.testing.assert_allclose(vkml.norm(z, p).item(), torch.norm(zt, p).item(), rtol=1e-5)
    np.testing.assert_allclose(z.norm(dim=1).numpy(), zt.norm(dim=1).numpy(), rtol=1e-5)
    assert vkml.allclose(z, z + 1e-9j) and not vkml.isclose(z, z * 1.1).any().item()
    assert z.new_zeros(2).dtype is vkml.cfloat and z.new_zeros(2, dtype=vkml.float32).dtype is vkml.float32
    p = vnn.Parameter(z.clone())
    p.abs().sum().backward()
    total = vnn.utils.clip_grad_norm_([p], 0.5)
    np.testing.assert_allclose(total.item(), np.sqrt(12), rtol=1e-5)  # |grad| is 1 per element
    np.testing.assert_allclose(p.grad.norm().item(), 0.5, rtol=1e-5)
    torch.save({"w": torch.nn.Parameter(zt.to(torch.cdouble)), "b": zt[0]}, tmp_path / "t.pt")
    loaded = vkml.load(tmp_path / "t.pt")
    assert isinstance(loaded["w"], vnn.Parameter) and loaded["w"].dtype is vkml.cdouble
    np.testing.assert_array_equal(loaded["b"].numpy(), zt[0].numpy())
    vkml.save({"z": z}, tmp_path / "v.pt")
    np.testing.assert_array_equal(vkml.load(tmp_path / "v.pt")["z"].numpy(), zt.numpy())


def test_long_transforms_split_into_short_ones():
    # past 1024 points a composite length runs as Cooley-Tukey's four steps (docs/fft.md)
    torch.manual_seed(5)
    zt, xt = torch.randn(1100, dtype=torch.cfloat), torch.randn(1100)
    _close(vkml.fft.fft(_v(zt), norm="ortho"), torch.fft.fft(zt, norm="ortho"), 1e-5)
    _close(vkml.fft.irfft(_v(zt), n=1102), torch.fft.irfft(zt, n=1102), 1e-6)
    _close(vkml.fft.rfft(_v(xt), n=1090), torch.fft.rfft(xt, n=1090), 3e-5)


def test_real_makers_refuse_complex_dtypes_and_casts_make_complex():
    for call in (lambda: vkml.eye(2, dtype=vkml.cfloat), lambda: vkml.arange(3, dtype=vkml.cfloat)):
        with pytest.raises(RuntimeError, match="not implemented for 'ComplexFloat'"):
            call()
    assert vkml.ones(2).type(vkml.cfloat).tolist() == [1, 1]
    assert vkml.full((2,), 1 + 1j).tolist() == [1 + 1j, 1 + 1j]
    assert vkml.ones(2, dtype=vkml.float64).cfloat().dtype is vkml.complex64


@pytest.mark.stress
def test_stft_and_istft_match_pytorch():
    torch.manual_seed(6)
    x = torch.randn(2, 90, requires_grad=True)
    v = vkml.tensor(x.detach().numpy(), requires_grad=True)
    for kwargs in ({"hop_length": 4, "normalized": True}, {"onesided": False}):
        want = torch.stft(x, 16, window=torch.hann_window(16), return_complex=True, **kwargs)
        got = vkml.stft(v, 16, window=vkml.hann_window(16), return_complex=True, **kwargs)
        _close(got, want, 1e-5)
        back = torch.istft(want, 16, window=torch.hann_window(16), length=90, **kwargs)
        _close(vkml.istft(got, 16, window=vkml.hann_window(16), length=90, **kwargs), back, 1e-5)
    want.abs().sum().backward()
    got.abs().sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), x.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="return_complex parameter be given"):
        vkml.stft(v, 16)


def test_same_bits_on_cpu_and_vulkan(gpu):
    torch.manual_seed(7)
    xt, zt = torch.randn(2, 6, 5), torch.randn(2, 6, 5, dtype=torch.cfloat)
    results = []
    for device in ("cpu", gpu):
        x, z = _v(xt, device), _v(zt, device)
        spectrum = vkml.fft.rfft2(x, norm="ortho")
        out = spectrum / (z[..., :3] + 2j) * z[..., :3].abs()
        results.append([vkml.view_as_real(out).numpy(), vkml.fft.irfft2(spectrum, s=(6, 5)).numpy()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


class _ModesLayer(vnn.Module):
    def __init__(self):
        super().__init__()
        self.w = vnn.Parameter(0.25 * vkml.rand(2, 2, 6, 4, dtype=vkml.cfloat))

    def forward(self, x):
        return vkml.fft.irfft2(vkml.einsum("bixy,ioxy->boxy", vkml.fft.rfft2(x), self.w), s=(6, 6))


def _train_modes_layer(jit: bool, x, y) -> list:
    vkml.manual_seed(0)
    layer = _ModesLayer()
    opt = vkml.optim.Adam(layer.parameters(), lr=0.05)

    def step(x, y):
        loss = ((layer(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    step = vkml.jit(step) if jit else step
    return [step(x, y).item() for _ in range(4)]


@pytest.mark.stress
def test_jit_replays_a_step_with_complex_parameters():
    x, y = vkml.randn(3, 2, 6, 6), vkml.randn(3, 2, 6, 6)
    assert _train_modes_layer(False, x, y) == _train_modes_layer(True, x, y)


def test_default_collate_stacks_complex_samples():
    from vkml.utils.data import default_collate

    batch = default_collate(
        [(np.array([1 + 2j], np.complex64), vkml.tensor([3j])), (np.array([1j], np.complex64), vkml.tensor([2.0 + 0j]))]
    )
    assert batch[0].dtype is vkml.cfloat and batch[0].tolist() == [[1 + 2j], [1j]]
    assert batch[1].tolist() == [[3j], [2]]
