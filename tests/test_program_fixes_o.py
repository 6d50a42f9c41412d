"""The gaps that the programs of tests/test_programs_o.py found in vkml, each compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


class _Doubled:
    """A map-style dataset (a plain class, as both libraries accept it)."""

    def __len__(self):
        return 10

    def __getitem__(self, index):
        return np.float32(2 * index)


def _epochs(library, data_module, persistent: bool) -> list[list[float]]:
    library.manual_seed(3)
    generator = library.Generator()
    generator.manual_seed(0)
    loader = data_module.DataLoader(
        _Doubled(), batch_size=3, shuffle=True, num_workers=2, persistent_workers=persistent, generator=generator
    )
    return [[batch.tolist() for batch in loader] for _ in range(3)] + [
        library.randint(0, 1000, (3,), generator=generator).tolist()
    ]


@pytest.mark.filterwarnings("ignore:'pin_memory'")
@pytest.mark.parametrize("persistent", [True, False])
def test_worker_loader_shuffles_each_epoch_as_pytorch_does(persistent):
    """A persistent-worker loader draws no new base seed after its first epoch (PyTorch resets its one
    iterator), so its later epochs' shuffles and the generator's next draws are PyTorch's."""
    expected = _epochs(torch, torch.utils.data, persistent)
    got = _epochs(vkml, vkml.utils.data, persistent)
    assert got == expected
