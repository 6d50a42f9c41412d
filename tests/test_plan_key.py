"""The plan key made as the graph is built (``Node.skey``, ``plan_cache.find``): a realize takes a stored
recipe only for the graph it was made for.

Every test runs under an oracle: whenever ``find`` returns a recipe, the graph is walked as before
(``plan_cache.trace``) and must give the same node order and the structure key the recipe was stored
under. The graphs differ from each other in one thing each: constant values, views, dtypes, sharing,
sources realized after their users were built, in-place writes, threads.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import vkml
from vkml.graph.node import Node, structure_of
from vkml.kernels import matmul as kernels_matmul
from vkml.schedule import plan_cache
from vkml.schedule import scheduler as schedule


@pytest.fixture
def oracle(monkeypatch):
    """Checks every ``find`` hit against a walk; yields the hits (recipes) as they come."""
    hits: list = []
    find = plan_cache.find

    def checked(namespace, roots, mode_of_matmul):
        found = find(namespace, roots, mode_of_matmul)
        if found is not None:
            recipe, order = found
            walked, structure = plan_cache.trace(roots, mode_of_matmul)
            assert len(order) == len(walked) and all(a is b for a, b in zip(order, walked))
            stored = [key for key, value in plan_cache._recipes.items() if value is recipe]
            assert stored and stored[0] == plan_cache.Key(namespace, structure)
            hits.append(recipe)
        return found

    monkeypatch.setattr(plan_cache, "find", checked)
    plan_cache.clear()
    yield hits
    plan_cache.clear()


def _devices():
    return ["cpu", "vulkan"]


def _device(name, request):
    return vkml.device("cpu") if name == "cpu" else request.getfixturevalue("gpu")


def _t(device, seed, shape=(4, 8), dtype="float32"):
    data = np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)
    return vkml.tensor(data, device=device).realize(), data


@pytest.mark.parametrize("name", _devices())
def test_graphs_differing_in_one_thing_each_get_their_own_results(name, request, oracle):
    device = _device(name, request)
    (a, na), (b, nb) = _t(device, 0), _t(device, 1)
    h, nh = _t(device, 2, (4, 8), "float16")
    cases = [
        (lambda: a * 2.0 + b, lambda: na * np.float32(2.0) + nb),  # constants: parameters
        (lambda: a * 3.0 + b, lambda: na * np.float32(3.0) + nb),
        (lambda: a[:, ::2] + b[:, 1::2], lambda: na[:, ::2] + nb[:, 1::2]),  # views: offsets differ
        (lambda: a[:, 1::2] + b[:, ::2], lambda: na[:, 1::2] + nb[:, ::2]),
        (lambda: a.T.reshape(4, 8) + b, lambda: na.T.reshape(4, 8) + nb),  # view structures differ
        (lambda: a + b, lambda: na + nb),
        (lambda: a + a, lambda: na + na),  # sharing: one leaf twice, then two leaves
        (lambda: a + b, lambda: na + nb),
        (lambda: (lambda y: y * y)(a - b), lambda: (na - nb) * (na - nb)),  # a shared intermediate ...
        (lambda: (a - b) * (a - b), lambda: (na - nb) * (na - nb)),  # ... and the same tree without sharing
        (lambda: h + h, lambda: (nh + nh).astype("float16")),  # dtypes
        (lambda: a + a, lambda: na + na),
        (lambda: a.int() + 1, lambda: na.astype(np.int32) + 1),
    ]
    for _ in range(2):
        for make, expect in cases:
            np.testing.assert_allclose(make().numpy(), expect(), rtol=1e-3, atol=1e-3)
    assert len(oracle) >= len(cases) - 4  # the second pass finds most of them without a walk


@pytest.mark.parametrize("name", _devices())
def test_a_source_realized_after_its_users_were_built(name, request, oracle):
    device = _device(name, request)
    (a, na), (b, nb) = _t(device, 3), _t(device, 4)
    for step in range(4):
        k = np.float32(step + 0.5)
        y = a * float(k)
        z = y + b  # built on y unrealized: its id names a multiply below
        if step % 2:
            y.realize()  # now z adds a buffer
        np.testing.assert_allclose(z.numpy(), na * k + nb, rtol=1e-6)
        c = vkml.full((4, 8), float(k), device=device)
        w = c * b
        if step % 2:
            c.realize()  # a constant turned buffer
        np.testing.assert_allclose(w.numpy(), k * nb, rtol=1e-6)
    assert len(oracle) >= 4


@pytest.mark.parametrize("name", _devices())
def test_in_place_writes_and_views_of_written_tensors(name, request, oracle):
    device = _device(name, request)
    x, nx = _t(device, 5)
    x, nx = x.clone(), nx.copy()
    for step in range(4):
        v = x[1:3]
        x.mul_(2.0)
        nx *= 2
        x[0].add_(float(step))
        nx[0] += step
        np.testing.assert_allclose(v.numpy(), nx[1:3], rtol=1e-6)
        np.testing.assert_allclose((x + 1).numpy(), nx + 1, rtol=1e-6)
        if step == 1:  # new contents under the same tensor, then a view of it written through
            other, nx = _t(device, 6)
            x.copy_(other)
            x[:, 2:4] = x[:, :2] * 0.5
            nx[:, 2:4] = nx[:, :2] * np.float32(0.5)
        np.testing.assert_allclose((x * x).numpy(), nx * nx, rtol=1e-6)
        x.realize()  # each step builds on a buffer: the steps but the second repeat one structure
    assert len(oracle) >= 3


@pytest.mark.parametrize("name", _devices())
def test_matmul_tiles_are_checked_with_the_ids(name, request, oracle):
    device = _device(name, request)
    (a, na), (b, nb) = _t(device, 9, (8, 8)), _t(device, 10, (8, 8))
    for _ in range(2):
        np.testing.assert_allclose((a @ b + 1).numpy(), na @ nb + 1, rtol=1e-5, atol=1e-5)
    assert oracle
    roots, namespace = [(a @ b + 1).node], schedule._namespace(device)
    assert plan_cache.find(namespace, roots, kernels_matmul.mode) is not None
    assert plan_cache.find(namespace, roots, lambda node: ("other tiles", kernels_matmul.mode(node))) is None


def test_threads_building_graphs_at_once(oracle):
    device = vkml.device("cpu")
    (a, na), (b, nb) = _t(device, 11), _t(device, 12)
    errors: list = []

    def work(k: int) -> None:
        try:
            for step in range(6):
                got = (
                    (a * float(k) + b[:, ::2].repeat(1, 2) * float(step)).sum(0) if k % 2 else (a - b) * float(k + step)
                )
                expect = (na * k + np.tile(nb[:, ::2], (1, 2)) * step).sum(0) if k % 2 else (na - nb) * (k + step)
                np.testing.assert_allclose(got.numpy(), expect, rtol=1e-5, atol=1e-5)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert oracle


def test_ids_name_structures_not_values():
    device = vkml.device("cpu")
    a, _ = _t(device, 13)
    x, y = (a * 2.0 + a[:, ::2].repeat(1, 2)).node, (a * 5.0 + a[:, 1::2].repeat(1, 2)).node
    assert x.skey == y.skey == structure_of(x)
    assert (a * 2.0).node.skey != (a + 2.0).node.skey != (a.half() + 2.0).node.skey
    lazy = a * 2.0
    user = lazy + 1.0
    before = user.node.skey
    lazy.realize()
    assert lazy.node.skey == structure_of(lazy.node) != (a * 2.0).node.skey
    uploaded = vkml.tensor(np.zeros((4, 8), np.float32), device=device).node
    assert uploaded.skey == lazy.node.skey  # a realized result and an upload are the same leaf
    assert user.node.skey == before != structure_of(user.node)  # stale, told apart by find's checks
    assert isinstance(Node.__slots__, tuple) and "skey" in Node.__slots__
    schedule.realize(user.node)
    np.testing.assert_allclose(user.numpy(), (a * 2.0 + 1.0).numpy())
