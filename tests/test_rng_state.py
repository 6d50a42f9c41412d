"""vkml.get_rng_state / set_rng_state: a resumed run draws what the run it continues would have drawn."""

from __future__ import annotations

import pytest

import vkml


def test_restored_state_replays_draws_and_dropout(tmp_path):
    vkml.manual_seed(3)
    vkml.rand(4)  # an offset that is not the seed's start
    state = vkml.get_rng_state()
    first = (vkml.randn(5).tolist(), vkml.nn.functional.dropout(vkml.ones(64), 0.5).tolist())
    vkml.save({"rng": state}, tmp_path / "ckpt")
    vkml.manual_seed(99)  # another stream meanwhile
    vkml.set_rng_state(vkml.load(tmp_path / "ckpt")["rng"])
    again = (vkml.randn(5).tolist(), vkml.nn.functional.dropout(vkml.ones(64), 0.5).tolist())
    assert again == first
    assert state.dtype is vkml.uint8 and state.shape == (5056,)  # PyTorch's CPU state (tests/test_random.py)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (lambda: vkml.zeros(16), TypeError),
        (lambda: vkml.zeros(3, dtype=vkml.uint8), RuntimeError),
        (lambda: [1], TypeError),
    ],
)
def test_set_rng_state_refuses_what_pytorch_refuses(bad, error):
    before = vkml.get_rng_state().tolist()
    with pytest.raises(error, match="set_rng_state"):
        vkml.set_rng_state(bad())
    assert vkml.get_rng_state().tolist() == before  # the generator is left as it was
