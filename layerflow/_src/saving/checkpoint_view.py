"""`tf.train.CheckpointView` and `tf.train.TrackableView`: the object graph of a checkpoint file
and of live objects, node by node, and how the two match.

A layerflow checkpoint stores each variable under its structural path (`model/dense/kernel`);
the object graph is the tree of those paths: node 0 is the root, every path prefix is a node
(an object, a list or a dict), and each variable a leaf. A variable saved under two paths (one
object reachable twice) is one node with two parents, as in TF. Node ids are given in
breadth-first order, children by name, so they are stable for a file.

The live side follows what a save would store: a Trackable's `_trackable_children()`, a list's
items by index, a dict's items by key; variables are leaves. `match` walks both graphs from
their roots by child name, as TF does.

>>> import os, tempfile, layerflow as tf
>>> ckpt = tf.train.Checkpoint(model=tf.Module(), step=tf.Variable(1))
>>> view = tf.train.CheckpointView(ckpt.save(os.path.join(tempfile.mkdtemp(), "c")))
>>> view.children(0)
{'save_counter': 1, 'step': 2}
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator
from typing import Any

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.saving import sharded_file
from layerflow._src.saving.checkpoint_utils import _checkpoint_file


def _live_children(obj: Any) -> dict[str, Any]:
    """What a save walks below `obj` (see the module docstring)."""
    if isinstance(obj, Variable):
        return {}
    if isinstance(obj, dict):
        return {str(k): v for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return {str(i): v for i, v in enumerate(obj)}
    if isinstance(obj, Trackable):
        return dict(obj._trackable_children())
    return {}


def _is_node(obj: Any) -> bool:
    return isinstance(obj, Variable | Trackable | list | tuple | dict)


class TrackableView:
    """The object graph below a live root (`tf.train.TrackableView`).

    >>> import layerflow as tf
    >>> m = tf.Module()
    >>> m.v = tf.Variable(1.0)
    >>> list(tf.train.TrackableView.children(m))
    ['v']
    """

    def __init__(self, root: Any) -> None:
        if not _is_node(root):
            raise ValueError(
                f"TrackableView expects a Trackable root (a tf.Module, layer, model, "
                f"checkpoint or variable), got {root!r} of type {type(root).__name__}."
            )
        self._root = root

    @property
    def root(self) -> Any:
        return self._root

    @classmethod
    def children(cls, obj: Any, save_type: str = "checkpoint", **kwargs: Any) -> dict[str, Any]:
        """{name: child} of every trackable attached to `obj`."""
        return {k: v for k, v in _live_children(obj).items() if _is_node(v)}

    def descendants(self) -> list[Any]:
        """Every trackable reachable from the root, the root first, breadth first, each once."""
        return [obj for obj, _ in _bfs_live(self._root)]


def _bfs_live(root: Any) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """(object, path) breadth first, each object once (by identity)."""
    seen = {id(root)}
    queue = collections.deque([(root, ())])
    while queue:
        obj, path = queue.popleft()
        yield obj, path
        for name, child in TrackableView.children(obj).items():
            if id(child) not in seen:
                seen.add(id(child))
                queue.append((child, (*path, name)))


class CheckpointView:
    """The object graph stored in a checkpoint (`tf.train.CheckpointView`); `save_path` is a
    checkpoint file or a folder (its latest checkpoint)."""

    def __init__(self, save_path: Any) -> None:
        path = _checkpoint_file(os.fspath(save_path))
        header, info = sharded_file.read_header(path)
        aliases = {a: k for a, k in (info.get("aliases") or {}).items() if k in header}
        # The tree of paths; an alias's leaf is the node of the path it aliases.
        tree: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {(): {}}
        target: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key in [*header, *aliases]:
            parts = tuple(key.split("/"))
            for i in range(1, len(parts) + 1):
                tree.setdefault(parts[:i], {})
                tree[parts[: i - 1]][parts[i - 1]] = parts[:i]
        for alias, key in aliases.items():
            target[tuple(alias.split("/"))] = tuple(key.split("/"))
        # Breadth-first ids, children by name; an aliased leaf shares its target's id.
        ids: dict[tuple[str, ...], int] = {(): 0}
        order = [()]
        queue = collections.deque([()])
        while queue:
            node = queue.popleft()
            for name in sorted(tree[node]):
                child = tree[node][name]
                real = target.get(child, child)
                if real not in ids:
                    ids[real] = len(order)
                    order.append(real)
                    queue.append(real)
        self._children = {
            ids[node]: {name: ids[target.get(c, c)] for name, c in sorted(kids.items())}
            for node, kids in tree.items()
            if node in ids
        }
        self._variables = {ids[tuple(k.split("/"))] for k in header}
        self._path = path

    def children(self, node_id: int) -> dict[str, int]:
        """{name: node_id} of the children of node `node_id` (0 is the root)."""
        if node_id not in self._children:
            raise ValueError(
                f"CheckpointView: no node {node_id!r} in {self._path}; node ids run from 0 to "
                f"{len(self._children) - 1}."
            )
        return dict(self._children[node_id])

    def descendants(self) -> list[int]:
        """Every node id, the root first, breadth first."""
        return sorted(self._children)

    def _match(self, obj: Any) -> tuple[dict[int, Any], set[tuple[str, ...]]]:
        if not _is_node(obj):
            raise ValueError(f"Expected a Trackable, got {obj} of type {type(obj)}.")
        found: dict[int, Any] = {0: obj}
        paths: set[tuple[str, ...]] = {()}
        queue = collections.deque([(0, obj, ())])
        while queue:
            node, live, path = queue.popleft()
            kids = TrackableView.children(live)
            for name, child_id in self._children[node].items():
                if name in kids and child_id not in found:
                    found[child_id] = kids[name]
                    paths.add((*path, name))
                    queue.append((child_id, kids[name], (*path, name)))
        return found, paths

    def match(self, obj: Any) -> dict[int, Any]:
        """{node_id: trackable} of the objects of `obj`'s graph found at the same names and
        positions as nodes of the checkpoint (obj's root is node 0)."""
        return self._match(obj)[0]

    def diff(self, obj: Any) -> tuple[dict[int, Any], list[int], list[Any]]:
        """(matched {node_id: trackable}, node ids only in the checkpoint, trackables only in
        `obj`): what a restore of `obj` from this checkpoint would leave out, both ways."""
        matched, paths = self._match(obj)
        only_ckpt = [n for n in self.descendants() if n not in matched]
        used = {id(v) for v in matched.values() if not isinstance(v, list | tuple | dict)}
        # Containers (lists, dicts) are compared by position: an object may hand out a fresh
        # list of its children each time it is asked.
        only_obj = [
            t
            for t, path in _bfs_live(obj)
            if path not in paths and (isinstance(t, list | tuple | dict) or id(t) not in used)
        ]
        return matched, only_ckpt, only_obj


__all__ = ["CheckpointView", "TrackableView"]
