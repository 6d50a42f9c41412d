"""``nn.AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for large vocabularies, as
PyTorch's module computes it.

The classes are split by ``cutoffs`` into a shortlist (in the head, a ``Linear`` of the input to the
shortlist plus one logit per cluster) and clusters (each a two-layer projection, narrowed by
``div_value`` per cluster). A target's log-probability is its head log-probability, or its cluster's
head log-probability plus its log-probability within the cluster. The same parameter names, shapes and
``state_dict`` keys as PyTorch (``head``, ``tail.<i>.0``, ``tail.<i>.1``), so its checkpoints load.

Which rows fall in which cluster depends on the targets' values, so ``forward`` reads the targets
back to the host (a synchronisation, as PyTorch's ``nonzero`` is on a GPU).

>>> import vkml
>>> asm = AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4, 8])
>>> out = asm(vkml.ones(3, 16), vkml.tensor([0, 5, 9]))
>>> tuple(out.output.shape), tuple(out.loss.shape)
((3,), ())
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..frontend import creation
from ..frontend import operators as functions
from . import functional as F
from .containers import ModuleList, Sequential
from .layers import Linear
from .module import Module

MODULES = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0, head_bias=False)``:
    ``forward(input, target)`` gives ``(output, loss)``: each target's log-probability and the mean of their
    negatives; ``log_prob(input)`` every class's; ``predict(input)`` the most likely class."""

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs,
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > (n_classes - 1)
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, "
                "where each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(Linear(in_features, hidden, bias=False, **kw), Linear(hidden, size, bias=False, **kw))
            )

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def forward(self, input_, target_):
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(
                    f"1D target tensor expects 2D input tensors, but found inputs with size {tuple(input_.shape)}"
                )
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(
                    f"0D target tensor expects 1D input tensors, but found inputs with size {tuple(input_.shape)}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        targets = target.numpy()  # which rows each cluster takes: the values decide (a host read)
        batch = targets.shape[0]
        output = creation.zeros(batch, dtype=input.dtype, device=input.device)
        gather = np.zeros(batch, dtype=np.int64)
        bounds = [0, *self.cutoffs]
        used = 0
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            rows = np.nonzero((targets >= low) & (targets < high))[0]
            if rows.size == 0:
                continue
            if i == 0:
                gather[rows] = targets[rows]
            else:
                index = creation.tensor(rows, device=input.device)
                relative = creation.tensor(targets[rows] - low, device=input.device)
                cluster = self.tail[i - 1](input.index_select(0, index))
                gather[rows] = self.shortlist_size + i - 1
                local = F.log_softmax(cluster, dim=1).gather(1, relative.unsqueeze(1)).squeeze(1)
                output = output.index_copy(0, index, local)
            used += rows.size
        if used != batch:
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{int(targets.min())}, {int(targets.max())}] were found. "
            )
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, creation.tensor(gather, device=input.device).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return functions.cat(parts, 1)

    def log_prob(self, input):
        """Every class's log-probability for each row of ``input`` (or for a 1-D ``input``)."""
        batched = input.ndim > 1
        input = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(input, self.head(input))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row: the head's where it picks a shortlist class, else the full argmax."""
        batched = input.ndim > 1
        input = input if batched else input.unsqueeze(0)
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        outside = (output >= self.shortlist_size).numpy()
        if outside.any():
            rows = creation.tensor(np.nonzero(outside)[0], device=input.device)
            log_prob = self._get_full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows))
            output = output.index_copy(0, rows, log_prob.argmax(dim=1))
        return output if batched else output.squeeze(0)
