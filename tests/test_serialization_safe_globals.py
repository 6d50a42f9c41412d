"""``torch.serialization``'s allowlist for weights-only loads: a checkpoint holding a user's global
(``argparse.Namespace`` here, as training scripts save their arguments) is refused by both libraries
until the global is allowed by ``add_safe_globals`` or inside ``safe_globals(...)``; vkml's own pickles
and ``torch.save`` archives read through the same list."""

from __future__ import annotations

import argparse
import io
import pickle

import pytest
import torch

import vkml


@pytest.fixture(autouse=True)
def _empty_allowlists():
    vkml.serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()
    yield
    vkml.serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()


def _checkpoints():
    args = argparse.Namespace(lr=0.1, depth=3)
    mine, theirs = io.BytesIO(), io.BytesIO()
    vkml.save({"args": args, "w": vkml.ones(2)}, mine)
    torch.save({"args": args, "w": torch.ones(2)}, theirs)
    return args, mine, theirs


def test_a_users_global_is_refused_until_allowed_as_in_pytorch():
    args, mine, theirs = _checkpoints()
    for lib, buffer in ((vkml, mine), (vkml, theirs), (torch, theirs)):
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError):
            lib.load(buffer)
    for lib in (vkml, torch):
        lib.serialization.add_safe_globals([argparse.Namespace])
        assert lib.serialization.get_safe_globals() == [argparse.Namespace]
    for lib, buffer in ((vkml, mine), (vkml, theirs), (torch, theirs)):
        buffer.seek(0)
        loaded = lib.load(buffer)
        assert loaded["args"] == args and loaded["w"].tolist() == [1.0, 1.0]


def test_safe_globals_context_allows_only_inside():
    _, mine, theirs = _checkpoints()
    with vkml.serialization.safe_globals([argparse.Namespace]):
        for buffer in (mine, theirs):
            buffer.seek(0)
            assert vkml.load(buffer)["args"].depth == 3
    assert vkml.serialization.get_safe_globals() == []
    theirs.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        vkml.load(theirs)


def test_a_global_under_another_name_and_bad_entries():
    _, _, theirs = _checkpoints()
    vkml.serialization.add_safe_globals([(argparse.Namespace, "argparse.Namespace")])
    theirs.seek(0)
    assert vkml.load(theirs)["args"].lr == 0.1
    with pytest.raises(TypeError, match="add_safe_globals"):
        vkml.serialization.add_safe_globals(argparse.Namespace)  # not a list
    with pytest.raises(ValueError, match="add_safe_globals"):
        vkml.serialization.add_safe_globals([(argparse.Namespace, 3)])
    assert vkml.serialization.DEFAULT_PROTOCOL == torch.serialization.DEFAULT_PROTOCOL
