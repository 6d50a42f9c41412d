"""The CPU reference interpreter against direct numpy, and its control-flow and memory rules."""

import numpy as np
import pytest

from vkml.ir import types as T
from vkml.ir.builder import convert
from vkml.ir.interp import evaluate


def test_evaluate_round_trip_single_and_tuple_outputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    out = evaluate(lambda x, y: x * y + x, a, b)
    np.testing.assert_array_equal(out, a * b + a)
    diff, as_int = evaluate(lambda x, y: (x - y, convert(x, T.int32)), a, b, local_size=32)
    np.testing.assert_array_equal(diff, a - b)
    np.testing.assert_array_equal(as_int, a.astype(np.int32))


def test_evaluate_rejects_inputs_of_different_lengths():
    with pytest.raises(ValueError, match="one length"):
        evaluate(lambda x, y: x + y, np.zeros(3, np.float32), np.zeros(4, np.float32))
