"""Keras 3's HDF5 weights layout (`.weights.h5`), so weight files move to and from real Keras.

Keras 3 (`keras/src/saving/saving_lib.py`) stores every object that owns state as an HDF5 group
at the object's path; the object's own variables are datasets "0", "1", ... of its `vars`
subgroup (trainable first, then non-trainable, each in creation order), and `vars` carries the
object's display name as the attribute `name`. Paths are built like this:

- Sequential and functional models visit `layers` first; then every object visits its children
  in sorted attribute order (private names last; layerflow never tracks private attributes);
- members of a list, tuple or dict are named by their snake-cased class name with a counter
  (`layers/dense`, `layers/dense_1`), nested containers `container`, `container_1`, ...;
- an object reachable twice is stored once, at the first path (tied weights).

h5py is imported lazily (the `h5` extra). Writes are atomic (temporary file, fsync, rename).
Loading validates the whole file against the model first and reports every missing group,
unexpected dataset, shape and dtype mismatch in one error; on any problem nothing is assigned.
A file h5py cannot read raises `WeightsFileError`. HDF5 stores no checksums (Keras writes
none), so a flipped byte inside a tensor's data cannot be detected; damage to the file's
structure can, and is reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import Variable
from layerflow._src.saving import restore
from layerflow._src.saving.restore import LoadStatus
from layerflow._src.saving.weights_file import WeightsFileError
from layerflow._src.utils.files import atomic_write

__all__ = ["load", "save", "layout"]

# Keras 3 writes optimizer state beside the model's layers when the model was compiled;
# `load_weights` restores layers only (as Keras 2 did for HDF5), so those groups are reported
# as not consumed rather than as errors.
_OPTIMIZER_GROUP = "optimizer"


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise ImportError(
            "Reading and writing Keras HDF5 weights (.h5, .weights.h5) needs h5py: "
            "`pip install layerflow[h5]` (or `pip install h5py`). Without it, save to any other "
            "file name to get layerflow's safetensors format."
        ) from None
    return h5py


def _snake(name: str) -> str:
    # Keras 3's naming.to_snake_case, byte for byte: group names must match Keras's.
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _unique(name: str, used: dict[str, int]) -> str:
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


class Entry:
    """One state-owning object of the layout: its group path, the object, its own variables."""

    __slots__ = ("path", "obj", "variables", "name")

    def __init__(self, path: str, obj: Any, variables: list[Variable]) -> None:
        self.path = path
        self.obj = obj
        self.variables = variables
        name = getattr(obj, "name", None)
        self.name = name if isinstance(name, str) else None

    @property
    def vars_group(self) -> str:
        return _join(self.path, "vars")


def _own_variables(children: dict[str, Any]) -> list[Variable]:
    """Variables held directly (or in containers) by an object, trainable first (Keras)."""
    out: list[Variable] = []
    seen: set[int] = set()
    stack: list[Any] = list(reversed(list(children.values())))
    while stack:
        item = stack.pop()
        if isinstance(item, Variable):
            if id(item) not in seen:
                seen.add(id(item))
                out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return [v for v in out if v.trainable] + [v for v in out if not v.trainable]


def _lists_layers_first(obj: Any) -> bool:
    d = getattr(obj, "__dict__", {})
    return "_stack" in d or bool(d.get("_is_graph_network"))


def layout(root: Any) -> list[Entry]:
    """Every state-owning object reachable from `root` with its Keras 3 group path.

    >>> # [e.path for e in layout(model)] -> ['', 'layers/dense', 'layers/dense_1']
    """
    entries: list[Entry] = []
    visited: set[int] = set()

    def visit(obj: Any, path: str) -> None:
        if id(obj) in visited:
            return
        visited.add(id(obj))
        children = obj._trackable_children()
        entries.append(Entry(path, obj, _own_variables(children)))
        names = sorted(
            (k for k in children if not isinstance(children[k], Variable)),
            key=lambda n: f"~{n}" if n.startswith("_") else n,
        )
        if _lists_layers_first(obj) and "layers" in names:
            names.remove("layers")
            names.insert(0, "layers")
        for name in names:
            child = children[name]
            if isinstance(child, Trackable):
                visit(child, _join(path, name))
            elif isinstance(child, list | tuple | dict):
                container(child, _join(path, name), set())

    def container(items: Any, path: str, seen: set[int]) -> None:
        if id(items) in seen:
            return
        seen.add(id(items))
        used: dict[str, int] = {}
        for item in items.values() if isinstance(items, dict) else items:
            if isinstance(item, Variable):
                continue  # owned by the enclosing object (its `vars`)
            if isinstance(item, Trackable):
                visit(item, _join(path, _unique(_snake(type(item).__name__), used)))
            elif isinstance(item, list | tuple | dict):
                container(item, _join(path, _unique("container", used)), seen)

    if not isinstance(root, Trackable):
        raise TypeError(
            f"Keras HDF5 weights need a layer, model or tf.Module, got {type(root).__name__}."
        )
    visit(root, "")
    return entries


# --- saving -------------------------------------------------------------------------------------
def save(root: Any, path: str | os.PathLike, overwrite: bool = True) -> None:
    """Write `root`'s variables in Keras 3's `.weights.h5` layout, atomically.

    >>> # model.save_weights("model.weights.h5")  # then keras_model.load_weights(...) reads it
    """
    h5py = _h5py()
    entries = layout(root)
    with atomic_write(path, overwrite) as tmp, h5py.File(tmp, "w") as f:
        for entry in entries:
            if entry.name is None and not entry.variables:
                continue
            group = f.require_group(entry.path) if entry.path else f
            vars_group = group.create_group("vars")
            if entry.name is not None:
                vars_group.attrs["name"] = entry.name
            for i, var in enumerate(entry.variables):
                vars_group.create_dataset(str(i), data=var.numpy())


# --- reading the file ---------------------------------------------------------------------------
def _damaged(path: str, what: str) -> WeightsFileError:
    return WeightsFileError(
        f"Cannot read Keras HDF5 weights file '{path}': {what}. The file is damaged or is not "
        "a Keras weights file; nothing was loaded. Save it again or restore it from a copy."
    )


class _FileVars:
    """The `vars` groups of an open file: {group path: {index: dataset}} and display names."""

    def __init__(self, f: Any, path: str) -> None:
        h5py = _h5py()
        self.groups: dict[str, dict[int, Any]] = {}
        self.size = f.id.get_filesize()  # of the file we hold open, not of what `path` names now
        self.names: dict[str, str | None] = {}
        found = [  # walked first: nothing below looks up a name that could leave the file
            (name, obj)
            for name, obj in _walk(f, path, h5py)
            if isinstance(obj, h5py.Group) and name.rsplit("/", 1)[-1] == "vars"
        ]
        if "layer_names" in f.attrs or "model_weights" in f:
            raise WeightsFileError(
                f"'{path}' is a Keras 2 (legacy) HDF5 weights file; layerflow reads Keras 3's "
                "layout (`.weights.h5` from Keras 3's save_weights). Load it in Keras 2, or "
                "re-save it with Keras 3."
            )
        for name, obj in found:
            self._add(path, name, obj, h5py)

    def _add(self, path: str, name: str, group: Any, h5py: Any) -> None:
        if not isinstance(group, h5py.Group):
            raise _damaged(path, f"'{name}' is not a group")
        datasets: dict[int, Any] = {}
        for key, item in group.items():
            if not key.isdigit() or not isinstance(item, h5py.Dataset):
                raise _damaged(path, f"'{name}/{key}' is not a numbered dataset")
            # Numbers, or variable-length strings (the vocabulary variables of lookup layers).
            text = item.dtype.kind == "O" and h5py.check_string_dtype(item.dtype) is not None
            if (item.dtype.kind not in "biufc" and not text) or item.shape is None:
                raise _damaged(path, f"'{name}/{key}' has dtype {item.dtype}, not a number")
            if item.compression is None and item.size * item.dtype.itemsize > self.size:
                # A damaged header can claim any shape; never allocate what the file can't hold.
                raise _damaged(
                    path,
                    f"'{name}/{key}' claims shape {item.shape}, more bytes than the whole file has",
                )
            datasets[int(key)] = item
        if sorted(datasets) != list(range(len(datasets))):
            raise _damaged(path, f"'{name}' has datasets {sorted(datasets)}, expected 0..n-1")
        self.groups[name] = datasets
        raw = group.attrs.get("name")
        self.names[name] = raw.decode() if isinstance(raw, bytes) else raw


def _walk(f: Any, path: str, h5py: Any) -> Iterator[tuple[str, Any]]:
    """(name, object) for everything in the file, refusing whatever reads outside it.

    HDF5 can make a file read other files: external links, datasets whose bytes live in
    another file (external storage) or are mapped from other files (virtual datasets). A soft
    link can alias any path, and hard links can form cycles. Keras writes none of these, so
    each is refused with its name instead of followed; the walk is iterative (no recursion
    limit) and visits every group once.
    """
    seen: dict[Any, str] = {h5py.h5o.get_info(f.id).addr: "/"}
    stack: list[tuple[str, Any, str]] = [(_join("", k), f, k) for k in reversed(list(f))]
    while stack:  # depth first, in name order, like HDF5's own visit
        name, parent, key = stack.pop()
        link = parent.get(key, getlink=True)
        if isinstance(link, h5py.SoftLink | h5py.ExternalLink):
            kind = "a soft link" if isinstance(link, h5py.SoftLink) else "an external link"
            raise _damaged(
                path,
                f"'{name}' is {kind} to {link.path!r}; a weights file must hold its objects "
                "itself (HDF5 links are never followed)",
            )
        obj = parent[key]
        if isinstance(obj, h5py.Dataset) and (obj.external or obj.is_virtual):
            where = obj.external or "a virtual dataset"
            raise _damaged(
                path,
                f"'{name}' keeps its data in other files ({where}); a weights file must hold "
                "its data itself",
            )
        if isinstance(obj, h5py.Group):
            addr = h5py.h5o.get_info(obj.id).addr
            first = seen.get(addr)
            if first is not None:
                raise _damaged(
                    path,
                    f"'{name}' is a second link to the group '{first}' (a link cycle or a "
                    "shared group; Keras weights files have neither)",
                )
            seen[addr] = name
            stack.extend((_join(name, k), obj, k) for k in reversed(list(obj)))
        yield name, obj


def _open(path: str) -> Any:
    h5py = _h5py()
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"No weights file at '{path}'. Check the path (save_weights writes exactly the path "
            "it is given)."
        )
    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise _damaged(path, f"HDF5 cannot open it ({e})") from None


# --- loading ------------------------------------------------------------------------------------
class _InOrder:
    """The `RestoreSource` of an unbuilt object: the k-th variable it creates gets array k.

    Keras files number an object's variables, they do not name them, so an unbuilt object's
    values are handed out in creation order; the post-build check re-assigns them in Keras's
    order (trainable first) and validates every shape, then closes the source.
    """

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays
        self.next = 0

    def take(self, key: str) -> np.ndarray | None:
        if self.next >= len(self.arrays):
            return None
        self.next += 1
        return self.arrays[self.next - 1]

    def __contains__(self, key: str) -> bool:  # LoadStatus.pending asks about "#<index>"
        return int(key[1:]) >= self.next

    def close(self) -> None:
        """Hand out nothing more (variables created after the check keep their initializers)."""
        self.next = len(self.arrays)


def _describe(var: Variable) -> str:
    return f"{tuple(var.shape.as_list())} {np.dtype(var.dtype.np)}"


def _compare(entry: Entry, key: str, var: Variable, data: Any) -> str | None:
    want = (tuple(var.shape.as_list()), np.dtype(var.dtype.np))
    if (tuple(data.shape), np.dtype(data.dtype)) == want:
        return None
    return (
        f"'{key}' ({var.name}): the model has shape {_describe(var)}, the file has "
        f"{tuple(data.shape)} {data.dtype}"
    )


def _is_unbuilt(obj: Any) -> bool:
    return getattr(obj, "built", True) is False


def load(
    root: Any, path: str | os.PathLike, skip_mismatch: bool = False, by_name: bool = False
) -> LoadStatus:
    """Validate a Keras 3 `.weights.h5` file against `root`, then assign (or defer) each value."""
    path = os.fspath(path)
    status = LoadStatus(path)
    status._partial = skip_mismatch or by_name
    with _open(path) as f:
        try:
            plan = _plan(root, f, path, status, skip_mismatch, by_name)
            if plan.problems:
                arrays = {}
            else:
                arrays = {key: np.asarray(ds[()]) for key, ds in plan.reads.items()}
        except WeightsFileError:
            raise
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
            raise _damaged(
                path, f"HDF5 failed while reading it ({type(e).__name__}: {e})"
            ) from None
    if plan.problems:
        raise restore._mismatch_error(path, plan.problems, _HINT)
    for key, var in plan.assign:
        var._write(arrays[key])
        status.loaded.append(key)
    sources: dict[str, _InOrder] = {}
    for entry, keys in plan.deferred:
        source = sources[keys[0].rsplit("/", 1)[0]] = _InOrder([arrays[k] for k in keys])
        entry.obj._restore_on_create(source)
        status._pending.extend((source, f"#{i}", k) for i, k in enumerate(keys))
    if plan.deferred:
        _hook(root, status, {k: arrays[k] for _, keys in plan.deferred for k in keys}, sources)
    return status


class _Plan:
    def __init__(self) -> None:
        self.reads: dict[str, Any] = {}
        self.assign: list[tuple[str, Variable]] = []
        self.deferred: list[tuple[Entry, list[str]]] = []
        self.problems: list[str] = []


def _plan(
    root: Any, f: Any, path: str, status: LoadStatus, skip_mismatch: bool, by_name: bool
) -> _Plan:
    file = _FileVars(f, path)
    plan = _Plan()
    problems: list[str] = []
    claimed: set[str] = set()
    if by_name:
        by_display: dict[str, str] = {}
        for g, n in file.names.items():
            if n is not None:
                by_display.setdefault(n, g)
    for entry in layout(root):
        group = by_display.get(entry.name or "") if by_name else entry.vars_group
        datasets = file.groups.get(group) if group is not None else None
        if datasets is None:
            if entry.variables:
                what = f"'{entry.vars_group}' ({entry.name})"
                status.missing.extend(
                    f"{entry.vars_group}/{i}" for i in range(len(entry.variables))
                )
                problems.append(
                    f"{what}: the model has {len(entry.variables)} variable(s) here, "
                    "the file has no such group"
                )
            continue
        claimed.add(group)
        keys = [f"{group}/{i}" for i in range(len(datasets))]
        if _is_unbuilt(entry.obj) and not entry.variables and datasets:
            plan.deferred.append((entry, keys))
            plan.reads.update(zip(keys, datasets.values()))
            continue
        if len(datasets) != len(entry.variables):
            problems.append(
                f"'{group}' ({entry.name}): the model has {len(entry.variables)} variable(s) "
                f"{[v.name for v in entry.variables]}, the file has {len(datasets)}"
            )
            if skip_mismatch:
                status.skipped.append((group, problems.pop()))
            continue
        for i, var in enumerate(entry.variables):
            reason = _compare(entry, keys[i], var, datasets[i])
            if reason is None:
                plan.assign.append((keys[i], var))
                plan.reads[keys[i]] = datasets[i]
            elif skip_mismatch:
                status.skipped.append((keys[i], reason))
            else:
                problems.append(reason)
    for group, datasets in file.groups.items():
        if group in claimed or not datasets:
            continue
        keys = [f"{group}/{i}" for i in range(len(datasets))]
        status.unexpected.extend(keys)
        if group.split("/", 1)[0] != _OPTIMIZER_GROUP and not by_name:
            problems.append(
                f"'{group}' ({file.names.get(group)}): the file has "
                f"{len(datasets)} variable(s) here, the model has no such object"
            )
    if not (skip_mismatch or by_name):
        plan.problems = problems
    if by_name or skip_mismatch:
        status.skipped.extend((p, "the model has no such variable") for p in status.missing)
    return plan


_HINT = (
    "Keras HDF5 files are keyed by object paths (attribute names; list members by class name, "
    "`layers/dense_1`). Build the same architecture, or pass skip_mismatch=True (or "
    "by_name=True, matching layer names) to load what matches and get a report of the rest."
)


def _hook(
    root: Any, status: LoadStatus, values: dict[str, np.ndarray], sources: dict[str, _InOrder]
) -> None:
    """After the first call builds the model: check and assign every deferred value."""
    done = False

    def check() -> None:
        nonlocal done
        if done:  # registered on several unbuilt objects: the first build checks
            return
        done = True
        entries = {e.vars_group: e for e in layout(root)}
        problems: list[str] = []
        late: list[tuple[str, Variable, np.ndarray]] = []
        groups: dict[str, list[str]] = {}
        for key in values:
            groups.setdefault(key.rsplit("/", 1)[0], []).append(key)
        for group, keys in groups.items():
            entry = entries.get(group)
            if entry is None or _is_unbuilt(entry.obj):
                continue  # still not built: its layer was not used by this call
            sources[group].close()
            keys.sort(key=lambda k: int(k.rsplit("/", 1)[1]))
            if len(keys) != len(entry.variables):
                problems.append(
                    f"'{group}' ({entry.name}): the model created "
                    f"{len(entry.variables)} variable(s), the file has {len(keys)}"
                )
                continue
            for key, var in zip(keys, entry.variables):
                reason = _compare(entry, key, var, values[key])
                if reason is None:
                    late.append((key, var, values[key]))
                else:
                    problems.append(reason)
        if problems and not status._partial:
            raise restore._mismatch_error(
                status.path,
                problems,
                "These were found when the model was built, after load_weights kept the file's "
                "values for it. " + _HINT,
            )
        for key, var, value in late:
            var._write(value)
            status.loaded.append(key)
        status.skipped.extend((p, "unmatched when the model was built") for p in problems)

    for obj in _outermost_unbuilt(root):
        obj._call_after_build(check)


def _outermost_unbuilt(root: Any) -> Iterator[Any]:
    if _is_unbuilt(root):
        yield root
        return
    for entry in layout(root):
        if entry.obj is not root and _is_unbuilt(entry.obj):
            yield entry.obj  # a built parent with unbuilt children: hook each (rare)
