"""PyTorch's OpInfo database (``torch.testing._internal.common_methods_invocations.op_db``) run against
vkml: every OpInfo whose function, method or in-place variant vkml exposes under the same path
(``torch.X`` -> ``vkml.X``, ``torch.nn.functional.X`` -> ``vkml.nn.functional.X``, ``torch.linalg`` /
``special`` / ``fft`` likewise, ``Tensor.X`` -> ``vkml.Tensor.X``) is called with its own sample inputs
on torch and on vkml, and vkml must give what torch gives.

What is compared is tests/peer_sweep.py's comparison: every output tensor's dtype, shape and values
(``assert_close``'s tolerances for the dtype, NaN equal to NaN); the gradients of ``sum(out * w)``
with respect to every float input that requires grad; an in-place variant's target after the call;
where torch raises, vkml raises an instance of torch's class. ``opinfo.error_inputs`` must raise
torch's exception class (the message is compared separately, see ``ERROR_MESSAGES``).

A case id is ``<op>[.<variant_test_name>]:<fn|method|inplace>:<dtype>:<k>`` (the k-th sample), or
``<op>:error:<k>`` for the k-th error input. Samples come from torch's random generator seeded per
OpInfo and dtype, so ids name the same inputs on every run of one PyTorch version.

Importing this module imports torch.testing._internal (about 5 s; it needs ``expecttest``): only the
``exhaustive`` tests of tests/test_opdb_sweep.py and the command line below use it.

    PYTHONPATH=$PWD python tests/opdb_sweep.py                     # all, CPU backend: counts by cause
    PYTHONPATH=$PWD python tests/opdb_sweep.py --ops add,sum -v    # some ops, every failure printed
    PYTHONPATH=$PWD python tests/opdb_sweep.py --write-known       # rewrite tests/opdb_known.txt
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from peer_sweep import _close, _flat
from torch.testing._internal.common_methods_invocations import op_db

import vkml

KNOWN_FILE = Path(__file__).with_name("opdb_known.txt")

# dtypes swept, where the OpInfo supports them on the CPU
DTYPES = ("float32", "float64", "float16", "int64", "bool")
# the method and in-place variants are swept in these dtypes (the function variant in all of DTYPES)
VARIANT_DTYPES = ("float32", "int64")

# torch namespace -> vkml namespace, searched in this order for an OpInfo's function
_NAMESPACES = (
    (torch, vkml),
    (torch.nn.functional, vkml.nn.functional),
    (torch.linalg, vkml.linalg),
    (torch.special, vkml.special),
    (torch.fft, vkml.fft),
)

# Not swept: what the brief leaves out (complex views, sparse, quantized) and factory functions
# whose samples take a torch.device (vkml has its own device names).
SKIP_OPS = {
    "view_as_complex",
    "view_as_real",
    "resolve_conj",
    "resolve_neg",
    "conj_physical",
    "to_sparse",
    "sparse.sampled_addmm",
    "sparse.mm",
}


def _vkml_dtype(name: str):
    return getattr(vkml, name)


def _torch_dtype(name: str):
    return getattr(torch, name)


def _resolve_function(fn, path: str = ""):
    """The vkml function at the torch function's path (the OpInfo's name, or a namespace holding the
    function under its own name), or None."""
    t, v = torch, vkml
    for part in path.split(".") if path else ():
        t, v = getattr(t, part, None), getattr(v, part, None)
    if path and t is fn and v is not None:
        return v
    name = getattr(fn, "__name__", None)
    if not name or name.startswith("<"):
        return None
    for tns, vns in _NAMESPACES:
        if getattr(tns, name, None) is fn:
            return getattr(vns, name, None)
    return None


def _method_name(method):
    name = getattr(method, "__name__", None)
    if not name or name.startswith("<"):
        return None
    tensor_attr = getattr(torch.Tensor, name, None)
    if tensor_attr is None:
        return None
    return name


def variants(opinfo):
    """``[(variant, torch callable, vkml callable or None)]`` for the forms PyTorch has."""
    out = []
    if opinfo.op is not None:
        out.append(("fn", opinfo.op, _resolve_function(opinfo.op, opinfo.name)))
    for kind, method in (("method", opinfo.method_variant), ("inplace", opinfo.inplace_variant)):
        if method is None:
            continue
        name = _method_name(method)
        if name is None:
            out.append((kind, method, None))
            continue
        vk = getattr(vkml.Tensor, name, None)
        out.append((kind, method, (lambda *a, _n=name, **k: getattr(a[0], _n)(*a[1:], **k)) if vk else None))
    return out


def full_name(opinfo) -> str:
    return opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def opinfos():
    """The swept OpInfos (each has at least one variant vkml exposes), in op_db's order."""
    out = []
    for o in op_db:
        if o.name in SKIP_OPS or o.name.startswith(("_", "sparse.", "nn.functional.quantized")):
            continue
        if any(vk is not None for _, _, vk in variants(o)):
            out.append(o)
    return out


def exposure():
    """``(swept, not exposed)``: full names of the OpInfos vkml exposes (some variant) and not."""
    swept = {full_name(o) for o in opinfos()}
    return sorted(swept), sorted(full_name(o) for o in op_db if full_name(o) not in swept)


# ---------------------------------------------------------------------- converting sample inputs


def _np_of(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        raise _Unsupported("bfloat16 input")
    if t.is_complex():
        raise _Unsupported("complex input")
    return t.resolve_conj().resolve_neg().numpy().copy()


class _Unsupported(Exception):
    """A sample this sweep does not convert (complex, sparse, a torch-only object)."""


def to_vkml(x, device=None):
    """A torch sample argument as vkml's: tensors (inside lists, tuples and dicts too) with the same
    values, dtype and requires_grad; dtypes and memory formats by name; other values as they are."""
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided or x.is_quantized or x.device.type == "meta":
            raise _Unsupported("sparse, quantized or meta input")
        arr = _np_of(x)
        kw = {} if device is None else {"device": device}
        t = vkml.tensor(arr, dtype=_vkml_dtype(str(x.dtype).split(".")[-1]), **kw)
        if x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, torch.dtype):
        name = str(x).split(".")[-1]
        if not hasattr(vkml, name):
            raise _Unsupported(f"dtype {name}")
        return _vkml_dtype(name)
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.memory_format):
        return getattr(vkml, str(x).split(".")[-1])
    if isinstance(x, torch.device):
        return None if device is None else device
    if isinstance(x, torch.Generator):
        raise _Unsupported("a torch.Generator")
    if isinstance(x, tuple):
        return tuple(to_vkml(y, device) for y in x)
    if isinstance(x, list):
        return [to_vkml(y, device) for y in x]
    if isinstance(x, dict):
        return {k: to_vkml(v, device) for k, v in x.items()}
    if isinstance(x, complex):
        raise _Unsupported("complex scalar")
    if callable(x) and not isinstance(x, type):
        raise _Unsupported("a callable argument")
    return x


def _torch_copy(x):
    """A fresh copy of a torch sample argument (leaves, so that gradients reach them)."""
    if isinstance(x, torch.Tensor):
        c = x.detach().clone()
        return c.requires_grad_(True) if x.requires_grad else c
    if isinstance(x, tuple):
        return tuple(_torch_copy(y) for y in x)
    if isinstance(x, list):
        return [_torch_copy(y) for y in x]
    if isinstance(x, dict):
        return {k: _torch_copy(v) for k, v in x.items()}
    return x


def _leaves(m, x, out):
    if isinstance(x, m.Tensor):
        if x.requires_grad and x.is_leaf:
            out.append(x)
    elif isinstance(x, (tuple, list)):
        for y in x:
            _leaves(m, y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _leaves(m, y, out)
    return out


def _tensors(m, x, out):
    if isinstance(x, m.Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for y in x:
            _tensors(m, y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _tensors(m, y, out)
    return out


# ---------------------------------------------------------------------- running one case


@dataclass
class Side:
    outputs: list | None
    inputs: list | None
    grads: object
    error: Exception | None


def run_side(m, fn, args, kwargs, grad: bool) -> Side:
    """Call ``fn(*args, **kwargs)`` on one side; outputs read inside the call (a lazy library may
    raise there), then the gradients of ``sum(out * w)`` over the float outputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(*args, **kwargs)
            flat = _flat(out)
            for o in flat:
                if isinstance(o, m.Tensor):
                    (o.resolve_conj() if m is torch else o).detach().cpu().numpy()  # (a conjugate view's bit)
        except Exception as e:  # noqa: BLE001 - the class is compared with torch's
            return Side(None, None, None, e)
        grads = None
        leaves = _leaves(m, (args, kwargs), [])
        floats = (m.float16, m.float32, m.float64)
        diff = [o for o in flat if isinstance(o, m.Tensor) and o.requires_grad and o.dtype in floats and o.numel()]
        if grad and leaves and diff:
            loss = 0
            for o in diff:
                w = np.linspace(-1.0, 2.0, o.numel()).reshape(tuple(o.shape))
                loss = loss + (o * m.tensor(w, dtype=o.dtype, device=o.device)).sum()
            try:
                grads = m.autograd.grad(loss, leaves, allow_unused=True)
            except Exception as e:  # noqa: BLE001
                grads = e
        return Side(flat, _tensors(m, (args, kwargs), []), grads, None)


def _is_random(opinfo, fn, sample) -> bool:
    """Whether torch's own output depends on the random seed (dropout, bernoulli, rand_like...)."""
    outs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fn(*_torch_copy((sample.input, *sample.args)), **_torch_copy(sample.kwargs))
        except Exception:  # noqa: BLE001
            return False
        outs.append([o.detach().clone() for o in _flat(r) if isinstance(o, torch.Tensor)])
    return any(
        a.shape != b.shape or not torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5))
        for a, b in zip(outs[0], outs[1], strict=False)
    )


def compare(name, want: Side, got: Side, random_output: bool):
    """Assert vkml's side matches torch's (tests/peer_sweep.py's rules)."""
    if want.error is not None:
        assert got.error is not None, f"{name}: torch raises {type(want.error).__name__}: {want.error}; vkml does not"
        assert isinstance(got.error, type(want.error)), (
            f"{name}: torch raises {type(want.error).__name__}, vkml {type(got.error).__name__}: {got.error}"
        )
        return
    if got.error is not None:
        raise AssertionError(f"{name}: vkml raises {type(got.error).__name__}: {got.error}") from got.error
    assert len(got.outputs) == len(want.outputs), f"{name}: {len(got.outputs)} outputs vs torch {len(want.outputs)}"
    for k, (g, w) in enumerate(zip(got.outputs, want.outputs, strict=True)):
        if random_output and isinstance(w, torch.Tensor):
            assert isinstance(g, vkml.Tensor), f"{name} output {k}: {type(g).__name__}, torch gives a tensor"
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], f"{name} output {k}: dtype"
            assert tuple(g.shape) == tuple(w.shape), f"{name} output {k}: shape {tuple(g.shape)} vs {tuple(w.shape)}"
            continue
        _close(g, w, f"{name} output {k}")
    if random_output:
        return
    for k, (g, w) in enumerate(zip(got.inputs, want.inputs, strict=True)):
        _close(g, w, f"{name} input {k} after the call")
    if isinstance(want.grads, Exception):
        assert isinstance(got.grads, Exception), f"{name}: torch's backward raises {want.grads!r}, vkml's does not"
        return
    if isinstance(got.grads, Exception):
        raise AssertionError(f"{name}: vkml's backward raises {got.grads!r}") from got.grads
    assert (got.grads is None) == (want.grads is None), f"{name}: grads {got.grads is None} vs {want.grads is None}"
    for k, (g, w) in enumerate(zip(got.grads or (), want.grads or (), strict=True)):
        assert (g is None) == (w is None), f"{name}: grad {k} is None on one side only"
        if w is not None:
            _close(g, w, f"{name} grad {k}")


def _samples(opinfo, dtype: str, requires_grad: bool):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(opinfo.sample_inputs("cpu", _torch_dtype(dtype), requires_grad=requires_grad))


def swept_dtypes(opinfo) -> list[str]:
    supported = opinfo.supported_dtypes("cpu")
    return [d for d in DTYPES if _torch_dtype(d) in supported]


def cases(opinfo, dtype: str, device=None):
    """Yield ``(case id, thunk)`` for every sample of one OpInfo in one dtype; the thunk raises
    AssertionError where vkml differs, or _Unsupported where the sample is not convertible."""
    base = full_name(opinfo)
    floating = dtype in ("float32", "float64", "float16")
    for variant, tfn, vfn in variants(opinfo):
        if vfn is None or (variant != "fn" and dtype not in VARIANT_DTYPES):
            continue
        grad = floating and opinfo.supports_autograd and variant != "inplace"
        try:
            samples = _samples(opinfo, dtype, grad)
        except Exception:  # noqa: BLE001 - torch's own generator fails: nothing to compare
            continue
        for k, sample in enumerate(samples):
            yield f"{base}:{variant}:{dtype}:{k}", _thunk(opinfo, tfn, vfn, sample, grad, f"{base}:{variant}", device)


def _thunk(opinfo, tfn, vfn, sample, grad, name, device):
    def run():
        vargs = to_vkml((sample.input, *sample.args), device)
        vkwargs = to_vkml(dict(sample.kwargs), device)
        random_output = opinfo.has_nondeterministic_output or _is_random(opinfo, tfn, sample)
        torch.manual_seed(0)
        want = run_side(torch, tfn, list(_torch_copy((sample.input, *sample.args))), _torch_copy(sample.kwargs), grad)
        vkml.manual_seed(0)
        got = run_side(vkml, vfn, list(vargs), vkwargs, grad)
        compare(name, want, got, random_output)

    return run


def error_cases(opinfo, device=None):
    """Yield ``(case id, thunk)`` for the OpInfo's error inputs through its function variant; the
    thunk returns whether vkml's message matches torch's regex too."""
    variants_ = [(t, v) for kind, t, v in variants(opinfo) if kind == "fn" and v is not None]
    if not variants_ or opinfo.error_inputs_func is None:
        return
    _, vfn = variants_[0]
    try:
        torch.manual_seed(0)
        inputs = list(opinfo.error_inputs("cpu"))
    except Exception:  # noqa: BLE001
        return
    for k, ei in enumerate(inputs):
        yield f"{full_name(opinfo)}:error:{k}", _error_thunk(vfn, ei, device)


def _error_thunk(vfn, ei, device):
    def run():
        s = ei.sample_input
        vargs = to_vkml((s.input, *s.args), device)
        vkwargs = to_vkml(dict(s.kwargs), device)
        got = run_side(vkml, vfn, list(vargs), vkwargs, grad=False)
        assert got.error is not None, f"torch raises {ei.error_type.__name__}({ei.error_regex!r}); vkml does not"
        assert isinstance(got.error, ei.error_type), (
            f"torch raises {ei.error_type.__name__}, vkml {type(got.error).__name__}: {got.error}"
        )
        return bool(re.search(ei.error_regex, str(got.error))) if ei.error_regex else True

    return run


# ---------------------------------------------------------------------- the whole sweep


def run_group(opinfo, dtype, device=None):
    """``{case id: outcome}`` for one OpInfo and dtype (``dtype='error'``: its error inputs);
    outcome is "pass", "skip: ..." (not convertible) or "fail: <first line of the difference>"."""
    results = {}
    thunks = error_cases(opinfo, device) if dtype == "error" else cases(opinfo, dtype, device)
    for cid, thunk in thunks:
        try:
            r = thunk()
            results[cid] = "pass" if r in (None, True) else "pass (message differs)"
        except _Unsupported as e:
            results[cid] = f"skip: {e}"
        except AssertionError as e:
            results[cid] = "fail: " + (str(e).splitlines() or ["?"])[0][:300]
        except Exception as e:  # noqa: BLE001 - a crash of the harness on this sample is a failure too
            results[cid] = f"fail: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    return results


def groups():
    """``[(full name, dtype)]``: every group the sweep runs (a test each)."""
    out = []
    for o in opinfos():
        for d in swept_dtypes(o):
            out.append((full_name(o), d))
        if o.error_inputs_func is not None:
            out.append((full_name(o), "error"))
    return out


def opinfo_named(name: str):
    return next(o for o in opinfos() if full_name(o) == name)


def load_known(path: Path = KNOWN_FILE) -> dict[str, str]:
    """``{case id: reason}`` from tests/opdb_known.txt (``id<TAB>reason`` lines, # comments)."""
    known = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith(("#", "!")):
            cid, _, reason = line.partition("\t")
            known[cid] = reason
    return known


def triaged_groups(path: Path = KNOWN_FILE) -> set[tuple[str, str]]:
    """The groups whose differences tests/opdb_known.txt lists: those its ``!group<TAB>name<TAB>dtype``
    lines name (a sweep stopped early), else all of them."""
    named = set()
    for line in path.read_text().splitlines():
        if line.startswith("!group\t"):
            _, name, dtype = line.split("\t")
            named.add((name, dtype))
    return named or set(groups())


def _cause(outcome: str) -> str:
    """A failure's cause, coarsely: its message with numbers and names of values blanked."""
    text = outcome.removeprefix("fail: ")
    text = re.sub(r"^[^:]*:(fn|method|inplace)(\s+(output|input|grad) \d+( after the call)?)?:?\s*", "", text)
    text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", text)
    return text[:110]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", help="comma-separated OpInfo full names (default: all)")
    p.add_argument("--start", type=int, default=0, help="begin at this group (groups() order)")
    p.add_argument("--vulkan", action="store_true", help="run vkml on the best Vulkan device")
    p.add_argument("-v", action="store_true", help="print every failing case")
    p.add_argument("--write-known", action="store_true", help="rewrite tests/opdb_known.txt from this run")
    p.add_argument("--dump", help="append every case's outcome to this file, group by group")
    a = p.parse_args(argv)
    device = vkml.best_device() if a.vulkan else None
    wanted = set(a.ops.split(",")) if a.ops else None
    swept, not_exposed = exposure()
    print(f"op_db: {len(op_db)} OpInfos; {len(swept)} swept, {len(not_exposed)} not exposed by vkml", flush=True)
    results = {}
    t0 = time.time()
    for name, dtype in groups()[a.start :]:
        if wanted and name not in wanted and name.split(".")[0] not in wanted:
            continue
        r = run_group(opinfo_named(name), dtype, device)
        results.update(r)
        if a.dump:  # as it goes: a long run stopped early keeps what it did
            with open(a.dump, "a") as f:
                f.write("".join(f"{k}\t{v}\n" for k, v in r.items()))
        nfail = sum(v.startswith("fail") for v in r.values())
        print(f"{time.time() - t0:7.1f}s {name} {dtype}: {len(r)} cases, {nfail} fail", flush=True)
        if a.v:
            for cid, v in r.items():
                if v.startswith("fail"):
                    print("   ", cid, v)
    outcomes = collections.Counter(v.split(":")[0].split(" (")[0] for v in results.values())
    msg_diff = sum(v == "pass (message differs)" for v in results.values())
    print(f"cases {len(results)}: {dict(outcomes)}; error messages differing: {msg_diff}")
    causes = collections.Counter(_cause(v) for v in results.values() if v.startswith("fail"))
    for cause, n in causes.most_common(60):
        print(f"{n:6d}  {cause}")
    if a.write_known:
        known = {k: v.removeprefix("fail: ") for k, v in results.items() if v.startswith("fail")}
        header = "# op_db sweep cases vkml does not match (tests/opdb_sweep.py --write-known); id<TAB>difference\n"
        if wanted or a.start:
            raise SystemExit("--write-known needs the whole sweep (no --ops, no --start)")
        KNOWN_FILE.write_text(header + "".join(f"{k}\t{v}\n" for k, v in sorted(known.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
