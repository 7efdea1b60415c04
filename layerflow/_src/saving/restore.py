"""Write a trackable graph to one weights file and restore it: validated, all-or-nothing, deferred.

Keys are structural paths (`hidden/kernel`, `layers/1/bias`). A variable reachable by several
paths is stored once under its first path; the others are recorded as aliases of it.

Restoring into a graph whose parts are not built yet keeps their values, through Trackable's
restore protocol: each unbuilt owner gets a source of {relative path: array} with
`_restore_on_create` (for a layer, the relative path is its weight name), which it consults as
it creates variables; a check registered with `_call_after_build` then assigns what creation did
not consume and reports file entries nothing claimed and variables the file lacked.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.trackable import Trackable, walk
from layerflow._src.framework.variables import Variable
from layerflow._src.saving import python_state, sharded_file, weights_file
from layerflow._src.saving.weights_file import WeightsFileError

FORMAT_NAME = "layerflow.weights"


# --- the graph --------------------------------------------------------------------------------
def variables_by_path(root: Any) -> list[tuple[str, Variable]]:
    """(path, variable) for every path that reaches a variable, in walk order."""
    return list(walk(root))


def trackables_by_path(root: Any) -> Iterator[tuple[str, Any]]:
    """(path, trackable) for every trackable reachable from `root`, the root as ''."""
    seen: set[int] = set()

    def visit(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
        if isinstance(obj, Variable):
            return
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield from visit(v, f"{path}/{k}" if path else str(k))
        elif isinstance(obj, list | tuple):
            for i, v in enumerate(obj):
                yield from visit(v, f"{path}/{i}" if path else str(i))
        elif isinstance(obj, Trackable) and id(obj) not in seen:
            seen.add(id(obj))
            yield path, obj
            for name, child in obj._trackable_children().items():
                yield from visit(child, f"{path}/{name}" if path else name)
            seen.discard(id(obj))

    yield from visit(root, "")


def _is_built(obj: Any) -> bool:
    return getattr(obj, "built", True) is not False


# --- saving -------------------------------------------------------------------------------------
def save(
    root: Any, path: str | os.PathLike, overwrite: bool = True, kind: str = FORMAT_NAME
) -> None:
    """Write every variable reachable from `root` to one safetensors file at `path`."""
    tensors, info = snapshot(root, kind)
    weights_file.write(path, tensors, info, overwrite=overwrite)


def snapshot(root: Any, kind: str = FORMAT_NAME, copy: bool = False) -> tuple[dict, dict]:
    """(tensors, info) that `save` writes; `copy` detaches the arrays from the variables (for a
    write in another thread while training goes on)."""
    tensors: dict[str, np.ndarray] = {}
    names: dict[str, str] = {}
    aliases: dict[str, str] = {}
    stored_at: dict[int, str] = {}
    for p, var in variables_by_path(root):
        first = stored_at.get(id(var))
        if first is not None:
            aliases[p] = first
            continue
        stored_at[id(var)] = p
        host = backend.to_host(var._data)
        tensors[p] = np.array(host, copy=True) if copy else host
        names[p] = var.name
    for p, obj in _python_states(root):  # tf.train.experimental.PythonState objects
        tensors[python_state.state_key(p)] = python_state.encode(obj, p)
    return tensors, {"format": kind, "names": names, "aliases": aliases}


def _python_states(root: Any) -> list[tuple[str, Any]]:
    return [(p, t) for p, t in trackables_by_path(root) if isinstance(t, python_state.PythonState)]


# --- the status -------------------------------------------------------------------------------
class LoadStatus:
    """What a load did, like TF's `CheckpointLoadStatus`.

    `loaded`: paths assigned; `skipped`: (path, reason) pairs a partial load left out;
    `pending`: file entries waiting for variables that are not created yet.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.loaded: list[str] = []
        self.skipped: list[tuple[str, str]] = []
        self.missing: list[str] = []
        self.unexpected: list[str] = []
        self._pending: list[tuple[Any, str, str]] = []  # (kept values, key in them, full path)
        self._partial = False
        self._lenient = False

    @property
    def pending(self) -> list[str]:
        return [full for kept, rel, full in self._pending if rel in kept]

    def expect_partial(self) -> LoadStatus:
        """Silence reports of unmatched entries, now and when deferred parts are built."""
        self._partial = True
        return self

    def assert_consumed(self) -> LoadStatus:
        """Raise AssertionError unless every file entry and every variable was matched."""
        problems = self._problems()
        if self.skipped:
            problems.append(f"skipped: {[p for p, _ in self.skipped]}")
        if self.pending:
            problems.append(f"waiting for variables not created yet: {self.pending}")
        if problems:
            raise AssertionError(f"Loading '{self.path}' was not complete: " + "; ".join(problems))
        return self

    def assert_existing_objects_matched(self) -> LoadStatus:
        """Raise AssertionError if an existing variable got no value from the file."""
        if self.missing:
            raise AssertionError(
                f"'{self.path}' holds no value for existing variables: {self.missing}"
            )
        return self

    def assert_nontrivial_match(self) -> LoadStatus:
        if not self.loaded and not self.pending:
            raise AssertionError(f"Nothing in '{self.path}' matched the object being restored.")
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Eager: everything already ran (TF 1 compatibility)."""

    def initialize_or_restore(self, session: Any = None) -> None:
        """Eager: everything already ran (TF 1 compatibility)."""

    def _problems(self) -> list[str]:
        out = []
        if self.missing:
            out.append(f"variables the file does not hold: {self.missing}")
        if self.unexpected:
            out.append(f"file entries no variable claimed: {self.unexpected}")
        return out

    def __repr__(self) -> str:
        return (
            f"<LoadStatus '{self.path}': {len(self.loaded)} loaded, {len(self.skipped)} skipped, "
            f"{len(self.pending)} pending>"
        )


class _ByName:
    """The deferred values of one owner, by path relative to it (a `RestoreSource`)."""

    def __init__(self) -> None:
        self.values: dict[str, np.ndarray] = {}

    def take(self, key: str) -> np.ndarray | None:
        return self.values.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self.values


def _mismatch_error(path: str, lines: list[str], hint: str) -> ValueError:
    body = "\n".join(f"  - {line}" for line in lines)
    return ValueError(
        f"Cannot load weights from '{path}': {len(lines)} problem(s), nothing was assigned.\n"
        f"{body}\n{hint}"
    )


_HINT = (
    "The file's keys are structural paths (attribute names and list indices). Build the same "
    "architecture, or pass skip_mismatch=True (or by_name=True) to load what matches and get a "
    "report of what was skipped."
)


# --- loading ------------------------------------------------------------------------------------
def load(
    root: Any,
    path: str | os.PathLike,
    skip_mismatch: bool = False,
    by_name: bool = False,
    strict_structure: bool = True,
) -> LoadStatus:
    """Validate the file against `root`'s variables, then assign (or defer) every value.

    `strict_structure=False` (checkpoints, as TF's `Checkpoint.restore`): missing and
    unexpected entries are only recorded in the status; shape and dtype mismatches still raise.
    """
    path = os.fspath(path)
    # One open file for the header and every tensor: a concurrent atomic save cannot mix them.
    with sharded_file.open_checkpoint(path) as reader:
        return _load(root, reader, skip_mismatch, by_name, strict_structure)


def _load(
    root: Any,
    reader: weights_file.Reader,
    skip_mismatch: bool,
    by_name: bool,
    strict_structure: bool,
) -> LoadStatus:
    path, header, info = reader.path, reader.header, reader.info
    aliases = info.get("aliases", {})
    names = info.get("names", {})
    if not isinstance(aliases, dict) or any(t not in header for t in aliases.values()):
        raise WeightsFileError(f"Cannot read weights file '{path}': its alias table is damaged.")
    # Every path the file can answer, and the stored key that answers it.
    source = {k: k for k in header} | dict(aliases)
    status = LoadStatus(path)
    partial = skip_mismatch or by_name
    status._partial = partial
    status._lenient = not strict_structure
    structural: list[str] = []

    model = variables_by_path(root)
    if by_name:
        by_display = {names.get(k): k for k in header if names.get(k)}
        plan = [(p, v, by_display.get(v.name)) for p, v in model]
    else:
        plan = [(p, v, source.get(p)) for p, v in model]

    owners = {p: t for p, t in trackables_by_path(root)}
    problems: list[str] = []
    assign: list[tuple[str, Variable, str]] = []
    claimed: set[str] = set()
    for p, var, key in plan:
        if key is None:
            status.missing.append(p)
            continue
        claimed.add(p if not by_name else key)
        entry = header[key]
        want_shape, want_dtype = tuple(var.shape.as_list()), np.dtype(var.dtype.np)
        got_shape, got_dtype = tuple(entry["shape"]), weights_file.entry_dtype(entry)
        if got_shape != want_shape or got_dtype != want_dtype:
            reason = (
                f"'{p}' ({var.name}): the model has shape {want_shape} {want_dtype}, the file has "
                f"'{key}' of shape {got_shape} {got_dtype or entry['dtype']}"
            )
            if skip_mismatch:
                status.skipped.append((p, reason))
            else:
                problems.append(reason)
            continue
        assign.append((p, var, key))
    states = []  # (path, PythonState, stored key): deserialized with the variables below
    for p, obj in [] if by_name else _python_states(root):
        key = python_state.state_key(p)
        if key in header:
            states.append((p, obj, key))
            claimed.add(key)
        else:
            status.missing.append(key)
    for p in status.missing:
        structural.append(f"'{p}': the model has this variable, the file does not")

    # File entries no existing variable claimed: deferred if their owner is not built yet.
    deferred: list[tuple[Any, str, str, str]] = []  # (owner, rel, full path, stored key)
    leftovers = [] if by_name else [p for p in source if p not in claimed]
    for p in leftovers:
        owner_path = _owner_path(p, owners)
        chain = [owners[q] for q in _prefixes(owner_path) if q in owners]
        if owner_path is not None and not all(_is_built(t) for t in chain):
            deferred.append((owners[owner_path], p[len(owner_path) + 1 :] if owner_path else p,
                             p, source[p]))  # fmt: skip
        else:
            status.unexpected.append(p)
            structural.append(f"'{p}': the file has this entry, the model has no such variable")
    if strict_structure:
        problems += structural
    if by_name:
        used = {key for _, _, key in plan if key is not None}
        status.unexpected.extend(k for k in header if k not in used)

    if problems and not partial:
        raise _mismatch_error(path, problems, _HINT)
    if partial:
        status.skipped.extend((p, "the model has no such variable") for p in status.missing)
        status.skipped.extend((p, "the file entry matched no variable") for p in status.unexpected)

    needed = {key for _, _, key in assign} | {key for *_, key in deferred}
    needed |= {key for *_, key in states}
    # Every byte is verified (streaming) before anything changes; then one tensor at a time
    # is read and assigned, so loading needs memory for one tensor, not for the whole file.
    reader.verify(needed)
    get = reader.get
    # Python states first: a state that rejects its saved value (a dataset iterator restored
    # into another pipeline) raises before any variable has changed.
    for _, obj, key in states:
        python_state.decode(obj, get(key))
        status.loaded.append(key)
    for p, var, key in assign:
        var._write(get(key))
        status.loaded.append(p)
    kept: dict[int, tuple[Any, _ByName]] = {}
    for owner, rel, full, key in deferred:
        values = kept.setdefault(id(owner), (owner, _ByName()))[1]
        values.values[rel] = get(key)
        status._pending.append((values, rel, full))
    for owner, values in kept.values():
        owner._restore_on_create(values)
    if deferred:
        _register_callbacks(root, owners, status, source, header)
    return status


def _prefixes(path: str | None) -> list[str]:
    if path is None:
        return []
    parts = path.split("/") if path else []
    return [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _owner_path(path: str, owners: dict[str, Any]) -> str | None:
    """The deepest reachable trackable whose path is a proper prefix of `path`."""
    parts = path.split("/")
    for i in range(len(parts) - 1, -1, -1):
        candidate = "/".join(parts[:i])
        if candidate in owners:
            return candidate
    return None


def _register_callbacks(
    root: Any, owners: dict[str, Any], status: LoadStatus, source: dict, header: dict
) -> None:
    """Hook the check onto the outermost unbuilt trackables that accept after-build calls."""
    hooks: list[str] = []
    for p, t in sorted(owners.items(), key=lambda item: item[0].count("/") + bool(item[0])):
        if _is_built(t) or any(h == "" or p == h or p.startswith(h + "/") for h in hooks):
            continue
        if t._call_after_build(_after_build(t, p, status, source, header)):
            hooks.append(p)


def _after_build(hook: Any, hook_path: str, status: LoadStatus, source: dict, header: dict) -> Any:
    def check() -> None:
        prefix = hook_path + "/" if hook_path else ""
        model = {prefix + p: v for p, v in variables_by_path(hook)}
        problems: list[str] = []  # shapes and dtypes: always errors unless partial
        structural: list[str] = []  # errors unless partial or lenient
        late: list[tuple[str, Variable, np.ndarray]] = []
        for kept, rel, full in status._pending:
            if not full.startswith(prefix):
                continue
            value = kept.take(rel)
            if value is None:  # taken when its variable was created
                status.loaded.append(full)
                continue
            var = model.get(full)
            if var is None:
                status.unexpected.append(full)
                structural.append(
                    f"'{full}': the file has this entry, the model has no such variable"
                )
            elif tuple(var.shape.as_list()) != value.shape or var._data.dtype != value.dtype:
                problems.append(
                    f"'{full}' ({var.name}): the model has shape {tuple(var.shape.as_list())} "
                    f"{var.dtype.name}, the file has {value.shape} {value.dtype}"
                )
            else:
                late.append((full, var, value))  # created without consulting the pending values
        for full in model:
            if full not in source and full not in status.missing:
                status.missing.append(full)
                structural.append(f"'{full}': the model has this variable, the file does not")
        if not status._lenient:
            problems += structural
        for full, var, value in late:
            var._write(value)
            status.loaded.append(full)
        if problems and not status._partial:
            raise _mismatch_error(
                status.path,
                problems,
                "These were found when the model was built, after load_weights kept the file's "
                "values for it. " + _HINT + " Or call status.expect_partial() before the first "
                "call.",
            )
        status.skipped.extend((p, "unmatched when the model was built") for p in problems)

    return check


def describe(path: str | os.PathLike) -> dict[str, Any]:
    """The file's entries (path -> shape, dtype, display name) without reading the data.

    >>> # describe("mlp.params")["hidden/kernel"] -> {'shape': [20, 256], 'dtype': 'F32', ...}
    """
    header, info = sharded_file.read_header(path)
    names = info.get("names", {})
    out = {
        k: {"shape": e["shape"], "dtype": e["dtype"], "name": names.get(k)}
        for k, e in header.items()
    }
    for alias, key in info.get("aliases", {}).items():
        out[alias] = dict(out[key], alias_of=key)
    return out
