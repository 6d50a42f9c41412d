"""The matmul templates: tiled scalar, cooperative matrices (KHR), workgroup-scope (NV cm2).

This package's ``mode`` picks a template for a matmul group from the device's features and
the operands: a frozen dataclass (``MatmulConfig``, ``coopmat.Mode``, ``coopmat2.Mode``) that keys
the template and plan caches as it is, and that ``lower`` builds the template of.
``tiled`` holds the scalar tiles and the helpers the matrix templates share.
"""

from __future__ import annotations

from ... import config as vkml_config
from ...graph.node import Node
from ...ir import types as T
from ..index import index_dtype
from ..lowering import GroupTemplate, widened_from
from . import coopmat, coopmat2, tiled
from .tiled import computed_operands

__all__ = ["MODES", "computed_operands", "lower", "mode"]

# The mode of a matmul group, one type per template (the other groups' is a ``lowering.GroupMode``).
MODES = (tiled.MatmulConfig, coopmat.Mode, coopmat2.Mode)
Mode = tiled.MatmulConfig | coopmat.Mode | coopmat2.Mode


def mode(node: Node) -> Mode:
    """The scheduler's mode for a matmul group: it names the tiles, so it keys the template cache.

    A ``coopmat.Mode`` where the device multiplies float16 matrices (coopmat.applies), a
    ``coopmat2.Mode`` instead where it also has workgroup-scope matrices and the product is a plain
    one of 2-D float16 operands loaded as stored (coopmat2), else the scalar tiles' ``MatmulConfig``.
    A float32 product of float16 values widened in the kernel (``lowering.widened_from``: half
    ``linear`` with a bias, ``addmm`` and ``baddbmm``, which add to the float32 sums and round once)
    is a float16 one whose float32 sums are kept: the subgroup-scope template, its epilogue fused.
    """
    a, b = node.srcs
    features = getattr(node.device, "features", None)
    a_dtype, b_dtype = widened_from(a) or a.dtype, widened_from(b) or b.dtype
    if coopmat.applies(features, a_dtype, b_dtype):
        # coopmat2 falls back to the subgroup-scope template for the groups it does not lower; it narrows
        # to float16 in hardware, so the widened operands of a float32 product take the subgroup-scope one.
        shape = coopmat2.chosen_shape(a.shape[-2], b.shape[-1])
        plain = a_dtype is a.dtype and b_dtype is b.dtype
        if plain and coopmat2.applies(features, a_dtype, b_dtype, shape) and coopmat2.fits(node, features):
            return coopmat2.mode(features, shape)
        return coopmat.mode(features, coopmat.shape_for(a.shape[-2], b.shape[-1]))
    m, n, k = a.shape[-2], b.shape[-1], a.shape[-1]
    return tiled.fused_over_batch(tiled.choose_config(features, m, n, k), features, node.numel * k)


# The namespaces ``mode``'s choices are read from: this package's, its templates' and vkml.config's.
_POLICY_NAMESPACES = (globals(), tiled.__dict__, coopmat.__dict__, coopmat2.__dict__, vkml_config.__dict__)
_values_of = dict.values


def policy() -> tuple:
    """Everything ``mode`` reads besides a node's graph and its device's features, as a value to compare:
    every module-level name of the modules its choices come from (so a test's monkeypatch of a function,
    a tile family or a threshold shows) and the environment (``VKML_MATMUL_*``).

    The plan cache checks a remembered recipe's matmul modes again only when this changed
    (vkml/schedule/plan_cache.py ``find``), rather than choosing every matmul's tiles at every replay.

    >>> policy() == policy()
    True
    """
    return (*map(tuple, map(_values_of, _POLICY_NAMESPACES)), vkml_config.environment())


mode.policy = policy  # what ``plan_cache.find`` asks the mode function it is given


def lower(root: Node, mm: Node, leaves, baked, mode: Mode) -> GroupTemplate:
    """The template ``mode`` (from ``mode()``) names: a cooperative-matrix one or the scalar tiles.

    A ``coopmat2`` group that is more than the plain product (a fused consumer) or whose operands are not
    loaded as stored is lowered with the subgroup-scope template (the mode names the shape only; the
    template cache key names the group's nodes too).
    """
    matrices = isinstance(mode, (coopmat.Mode, coopmat2.Mode))
    if matrices and index_dtype() is not T.uint32:
        # The cooperative-matrix templates address tiles in 32 bits: 64-bit groups take scalar tiles.
        a, b = mm.srcs
        features = getattr(mm.device, "features", None)
        config = tiled.choose_config(features, a.shape[-2], b.shape[-1], a.shape[-1])
        config = tiled.fused_over_batch(config, features, mm.numel * a.shape[-1])
        return tiled.lower_matmul(root, mm, leaves, baked, config)
    if isinstance(mode, coopmat2.Mode):
        if coopmat2.lowers(root, mm, leaves):
            return coopmat2.lower_matmul_coopmat2(root, mm, leaves, baked, mode.subgroup_size, mode.shape)
        return coopmat.lower_matmul_coopmat(root, mm, leaves, baked, mode.subgroup_size)
    if isinstance(mode, coopmat.Mode):
        return coopmat.lower_matmul_coopmat(root, mm, leaves, baked, mode.subgroup_size, mode.shape)
    return tiled.lower_matmul(root, mm, leaves, baked, mode)
