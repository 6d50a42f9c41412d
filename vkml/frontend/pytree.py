"""Pytrees as ``torch.utils._pytree`` defines them (reached as ``vkml.utils._pytree``).

A pytree is a nest of containers whose non-container values are its leaves. The containers
PyTorch knows are nodes here too: ``list``, ``tuple``, ``dict`` (keys in insertion order, the
order the context keeps), named tuples, ``OrderedDict``, ``defaultdict``, ``deque``, ``vkml.Size``
and the named tuples of ``vkml.return_types``; anything else is a leaf, ``None`` included (as
PyTorch's Python pytree has it), unless ``register_pytree_node`` made its type a node.
``tree_flatten`` gives the leaves in order and a ``TreeSpec`` that ``tree_unflatten`` rebuilds the
tree from; ``tree_map`` applies a function to the leaves of one or several trees of one structure.
``vkml.func`` (vkml/frontend/func.py) flattens its arguments and results with it.

>>> from vkml.utils import _pytree as pytree
>>> leaves, spec = pytree.tree_flatten({"w": [1, 2], "b": (3, None)})
>>> leaves, spec.num_leaves
([1, 2, 3, None], 4)
>>> pytree.tree_unflatten([x * 10 if x else x for x in leaves], spec)
{'w': [10, 20], 'b': (30, None)}
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from . import return_types as _return_types
from .size import Size

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], tuple[list, Context]]
UnflattenFunc = Callable[[Iterable, Context], PyTree]


class NodeDef(NamedTuple):
    """How one container type flattens: its children and a context, and back."""

    type: Any
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: Callable | None = None


# container type -> its NodeDef; named tuples are keyed by ``namedtuple`` itself (their class is the context)
SUPPORTED_NODES: dict[Any, NodeDef] = {}


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A child's position in a sequence node (``tree_flatten_with_path``)."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A child's key in a mapping node."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A child's attribute name in a named tuple or a registered class."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def register_pytree_node(
    cls,
    flatten_fn: FlattenFunc,
    unflatten_fn: UnflattenFunc,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context=None,
    from_dumpable_context=None,
    flatten_with_keys_fn=None,
) -> None:
    """Make ``cls`` a container node: ``flatten_fn(obj) -> (children, context)`` and
    ``unflatten_fn(children, context) -> obj`` (``torch.utils._pytree.register_pytree_node``).

    >>> from vkml.utils import _pytree as pytree
    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda v, ctx: Pair(*v))
    >>> pytree.tree_leaves([Pair(1, 2), 3])
    [1, 2, 3]
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None, **kwargs) -> None:
    """PyTorch's older, private spelling of ``register_pytree_node``."""
    register_pytree_node(cls, flatten_fn, unflatten_fn, **kwargs)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, **kwargs) -> None:
    """Make dataclass ``cls`` a node whose children are its fields (``torch.utils._pytree.register_dataclass``)."""
    names = list(field_names) if field_names is not None else [f.name for f in dataclasses.fields(cls) if f.init]
    names = [n for n in names if n not in (drop_field_names or ())]
    register_pytree_node(
        cls,
        lambda obj: ([getattr(obj, n) for n in names], names),
        lambda values, context: cls(**dict(zip(context, values, strict=True))),
        flatten_with_keys_fn=lambda obj: ([(GetAttrKey(n), getattr(obj, n)) for n in names], names),
    )


def _deregister_pytree_node(cls) -> None:
    SUPPORTED_NODES.pop(cls, None)


def is_namedtuple_class(cls) -> bool:
    """Whether ``cls`` is a class made by ``collections.namedtuple`` (or a subclass of one)."""
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


is_namedtuple = is_namedtuple_instance


def is_structseq_class(cls) -> bool:
    """Whether ``cls`` is one of ``vkml.return_types``' named tuples (PyTorch's structseqs)."""
    return is_namedtuple_class(cls) and cls.__module__ == _return_types.__name__


def is_structseq_instance(obj) -> bool:
    return is_structseq_class(type(obj))


is_structseq = is_structseq_instance


def _node_type(tree):
    """The key of ``tree``'s NodeDef in SUPPORTED_NODES, or None for a leaf."""
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if is_structseq_class(cls):
        return cls
    if is_namedtuple_class(cls):
        return namedtuple
    return None


def _node_def(node_type) -> NodeDef:
    found = SUPPORTED_NODES.get(node_type)
    if found is None:  # a structseq: a node of its own class, no context
        return NodeDef(node_type, lambda t: (list(t), None), lambda values, _: node_type(*values))
    return found


class TreeSpec:
    """The structure of a pytree: a node's ``type``, its ``context`` (dict keys, a named tuple's class,
    ...) and one spec per child; a leaf's spec is ``LeafSpec()``, printed ``*``.

    >>> from vkml.utils import _pytree as pytree
    >>> spec = pytree.tree_structure((1, [2, 3]))
    >>> spec.num_leaves, spec.num_children, spec.unflatten(["a", "b", "c"])
    (3, 2, ('a', ['b', 'c']))
    """

    def __init__(self, type, context, children_specs: list[TreeSpec]):  # noqa: A002 (PyTorch's name)
        self.type = type
        self.context = context
        self._children = list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
        self.num_leaves = sum(c.num_leaves for c in self._children)
        self.num_children = len(self._children)

    @property
    def children_specs(self) -> list[TreeSpec]:
        return self._children

    def children(self) -> list[TreeSpec]:
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        return self._children[index]

    def is_leaf(self) -> bool:
        return False

    def __eq__(self, other) -> bool:
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.is_leaf(), self.type, self.context, self._children) == (
            other.is_leaf(),
            other.type,
            other.context,
            other._children,
        )

    def __hash__(self) -> int:
        return hash((self.type, self.num_leaves, self.num_nodes))

    def __repr__(self, indent: int = 0) -> str:
        head = f"TreeSpec({self.type.__name__}, {self.context}, ["
        if not self._children:
            return head + "])"
        indent += 2
        parts = [self._children[0].__repr__(indent)]
        parts += ["\n" + " " * indent + c.__repr__(indent) for c in self._children[1:]]
        return head + ",".join(parts) + "])"

    def unflatten(self, leaves: Iterable) -> PyTree:
        """The tree of this structure holding ``leaves`` in order."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a pytree "
                f"that holds {self.num_leaves} items ({self})."
            )
        return self._build(iter(leaves))

    def _build(self, leaves):
        if self.is_leaf():
            return next(leaves)
        children = [c._build(leaves) for c in self._children]
        return _node_def(self.type).unflatten_fn(children, self.context)

    def flatten_up_to(self, tree: PyTree) -> list:
        """``tree`` cut where this structure has leaves: one subtree per leaf (``tree_map``'s other trees)."""
        out: list = []
        self._cut(tree, out)
        return out

    def _cut(self, tree, out: list) -> None:
        if self.is_leaf():
            out.append(tree)
            return
        node_type = _node_type(tree)
        dicts = (dict, OrderedDict, defaultdict)
        if node_type != self.type and not (node_type in dicts and self.type in dicts):
            raise ValueError(f"Node type mismatch; expected {self.type}, but got {type(tree)}.")
        children, context = _node_def(node_type).flatten_fn(tree)
        if len(children) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(children)}.")
        if node_type in dicts:
            keys = context[1] if node_type is defaultdict else context
            want = self.context[1] if self.type is defaultdict else self.context
            if set(keys) != set(want):
                missing, extra = set(want) - set(keys), set(keys) - set(want)
                raise ValueError(f"Node keys mismatch; missing key(s): {missing}; extra key(s): {extra}.")
            children = [tree[k] for k in want]  # the spec's key order
        elif context != self.context:
            raise ValueError(f"Node context mismatch for custom node type {self.type}.")
        for spec, child in zip(self._children, children, strict=True):
            spec._cut(child, out)


class LeafSpec(TreeSpec):
    """The spec of a leaf: printed ``*``."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_nodes = 1
        self.num_leaves = 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self, indent: int = 0) -> str:
        return "*"


_LEAF_SPEC = LeafSpec()


def treespec_leaf() -> LeafSpec:
    return _LEAF_SPEC


def treespec_tuple(iterable: Iterable[TreeSpec] = ()) -> TreeSpec:
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), **kwargs) -> TreeSpec:
    d = dict(mapping, **kwargs)
    return TreeSpec(dict, list(d), list(d.values()))


def tree_is_leaf(tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether ``tree`` is a leaf: not a node, or ``is_leaf(tree)`` says so."""
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) is None


def _flatten_into(tree, leaves: list, is_leaf) -> TreeSpec:
    if tree_is_leaf(tree, is_leaf):
        leaves.append(tree)
        return _LEAF_SPEC
    node_type = _node_type(tree)
    children, context = _node_def(node_type).flatten_fn(tree)
    return TreeSpec(node_type, context, [_flatten_into(c, leaves, is_leaf) for c in children])


def tree_flatten(tree: PyTree, is_leaf: Callable | None = None) -> tuple[list, TreeSpec]:
    """``tree``'s leaves in order and its ``TreeSpec``.

    >>> from vkml.utils import _pytree as pytree
    >>> pytree.tree_flatten([1, {"x": 2}])
    ([1, 2], TreeSpec(list, None, [*,
      TreeSpec(dict, ['x'], [*])]))
    """
    leaves: list = []
    spec = _flatten_into(tree, leaves, is_leaf)
    return leaves, spec


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> PyTree:
    """The tree of structure ``treespec`` holding ``leaves`` (``tree_flatten``'s inverse)."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Callable | None = None):
    """The leaves of ``tree``, one at a time."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = _node_def(_node_type(tree)).flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """``func`` applied to each leaf of ``tree`` (and the matching subtrees of ``rests``), in a tree of
    ``tree``'s structure.

    >>> from vkml.utils import _pytree as pytree
    >>> pytree.tree_map(lambda a, b: a + b, {"x": 1, "y": (2,)}, {"y": (20,), "x": 10})
    {'x': 11, 'y': (22,)}
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others, strict=True))


def tree_map_(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """``func`` called on each leaf for its effect; returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for xs in zip(leaves, *others, strict=True):
        func(*xs)
    return tree


def _types(type_or_types) -> tuple:
    return type_or_types if isinstance(type_or_types, tuple) else (type_or_types,)


def map_only(type_or_types) -> Callable:
    """A decorator: the function applies to leaves of the given types; others pass through unchanged."""
    types = _types(type_or_types)

    def wrap(func):
        def only(x):
            return func(x) if isinstance(x, types) else x

        return only

    return wrap


def tree_map_only(type_or_types, func: Callable, tree: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """``tree_map`` over the leaves of the given types; other leaves stay as they are."""
    return tree_map(map_only(type_or_types)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func: Callable, tree: PyTree, is_leaf: Callable | None = None) -> PyTree:
    return tree_map_(map_only(type_or_types)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    types = _types(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, types))


def tree_any_only(type_or_types, pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    types = _types(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, types))


def _keyed_children(tree, node_type) -> tuple[list, Context]:
    node = _node_def(node_type)
    if node.flatten_with_keys_fn is not None:
        return node.flatten_with_keys_fn(tree)
    children, context = node.flatten_fn(tree)
    if node_type in (dict, OrderedDict, defaultdict):
        return [(MappingKey(k), tree[k]) for k in tree], context
    if node_type is namedtuple or is_structseq_class(node_type):
        return [(GetAttrKey(f), c) for f, c in zip(tree._fields, children, strict=True)], context
    return [(SequenceKey(i), c) for i, c in enumerate(children)], context


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable | None = None) -> tuple[list, TreeSpec]:
    """(``[(key path, leaf), ...]``, spec): each leaf with the keys that reach it."""
    out: list = []

    def walk(t, path):
        if tree_is_leaf(t, is_leaf):
            out.append((path, t))
            return
        for key, child in _keyed_children(t, _node_type(t))[0]:
            walk(child, (*path, key))

    walk(tree, ())
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable | None = None) -> list:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """``tree_map`` whose function also gets each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(path, leaf, *xs) for (path, leaf), *xs in zip(pairs, *others, strict=True))


def keystr(kp: tuple) -> str:
    """A key path as text: ``[0]['a'].x``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp: tuple):
    """The subtree of ``obj`` at key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj


def treespec_pprint(treespec: TreeSpec) -> str:
    """A spec as the tree it describes, leaves as ``*``: ``[*, (*,)]``."""
    return repr(treespec.unflatten(_Star() for _ in range(treespec.num_leaves)))


class _Star:
    def __repr__(self) -> str:
        return "*"


# ---------------------------------------------------------------------- the built-in nodes


def _sequence(cls):
    return NodeDef(cls, lambda t: (list(t), None), lambda values, _: cls(values))


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _defaultdict_flatten(d):
    return list(d.values()), [d.default_factory, list(d.keys())]


def _defaultdict_unflatten(values, context):
    factory, keys = context
    return defaultdict(factory, zip(keys, values, strict=True))


def _deque_unflatten(values, maxlen):
    return deque(values, maxlen=maxlen)


SUPPORTED_NODES.update(
    {
        tuple: _sequence(tuple),
        list: _sequence(list),
        dict: NodeDef(dict, _dict_flatten, lambda values, keys: dict(zip(keys, values, strict=True))),
        namedtuple: NodeDef(namedtuple, lambda t: (list(t), type(t)), lambda values, cls: cls(*values)),
        OrderedDict: NodeDef(OrderedDict, _dict_flatten, lambda v, keys: OrderedDict(zip(keys, v, strict=True))),
        defaultdict: NodeDef(defaultdict, _defaultdict_flatten, _defaultdict_unflatten),
        deque: NodeDef(deque, lambda d: (list(d), d.maxlen), _deque_unflatten),
        Size: _sequence(Size),
    }
)
