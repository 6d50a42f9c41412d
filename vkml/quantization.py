"""``torch.quantization``, the old name of ``torch.ao.quantization``: the same module (vkml/ao/quantization.py)."""

import sys

from .ao import quantization

sys.modules[__name__] = quantization  # `import vkml.quantization` and `from vkml.quantization import ...`
