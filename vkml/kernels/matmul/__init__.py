"""The matmul templates: tiled scalar, cooperative matrices (KHR), workgroup-scope (NV cm2).

This package's ``mode`` picks a template for a matmul group from the device's features and
the operands (its string keys the template cache), and ``lower`` builds the template it names.
``tiled`` holds the scalar tiles and the helpers the matrix templates share.
"""

from __future__ import annotations

from ...graph.node import Node
from ...ir import types as T
from ..index import index_dtype
from ..lowering import GroupTemplate
from . import coopmat, coopmat2, tiled
from .tiled import computed_operands

__all__ = ["computed_operands", "lower", "mode"]


def mode(node: Node) -> str:
    """The scheduler's mode string for a matmul group: it names the tiles, so it keys the template cache.

    ``matmul coopmat`` where the device multiplies float16 matrices (coopmat.applies),
    ``matmul coopmat2`` instead where it also has workgroup-scope matrices and the product is a plain
    one of 2-D float16 operands loaded as stored (coopmat2).
    """
    a, b = node.srcs
    features = getattr(node.device, "features", None)
    if coopmat.applies(features, a.dtype, b.dtype):
        # coopmat2 falls back to the subgroup-scope template for the groups it does not lower.
        shape = coopmat2.chosen_shape()  # DEFAULT unless VKML_MATMUL_COOPMAT2_SHAPE says
        if coopmat2.applies(features, a.dtype, b.dtype, shape) and coopmat2.fits(node, features):
            return coopmat2.mode(features, shape)
        return coopmat.mode(features)
    config = tiled.choose_config(features, a.shape[-2], b.shape[-1], a.shape[-1])
    return f"matmul {config}"


def lower(root: Node, mm: Node, leaves, baked, mode_text: str) -> GroupTemplate:
    """The template ``mode_text`` (from ``mode``) names: a cooperative-matrix one or the scalar tiles.

    A ``coopmat2`` group that is more than the plain product (a fused consumer) or whose operands are not
    loaded as stored is lowered with the subgroup-scope template (the mode string names the shape only;
    the template cache key names the group's nodes too).
    """
    if mode_text.startswith(coopmat.MODE) and index_dtype() is not T.uint32:
        # The cooperative-matrix templates address tiles in 32 bits: 64-bit groups take scalar tiles.
        a, b = mm.srcs
        config = tiled.choose_config(getattr(mm.device, "features", None), a.shape[-2], b.shape[-1], a.shape[-1])
        return tiled.lower_matmul(root, mm, leaves, baked, config)
    if mode_text.startswith(coopmat2.MODE):
        subgroup_size, shape = coopmat2.parse_mode(mode_text)
        if coopmat2.lowers(root, mm, leaves):
            return coopmat2.lower_matmul_coopmat2(root, mm, leaves, baked, subgroup_size, shape)
        return coopmat.lower_matmul_coopmat(root, mm, leaves, baked, subgroup_size)
    if mode_text.startswith(coopmat.MODE):
        subgroup_size, shape = coopmat.parse_mode(mode_text)
        return coopmat.lower_matmul_coopmat(root, mm, leaves, baked, subgroup_size, shape)
    return tiled.lower_matmul(root, mm, leaves, baked, tiled.parse_mode(mode_text))
