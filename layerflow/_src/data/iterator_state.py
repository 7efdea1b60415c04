"""Checkpointing a dataset iterator: `tf.train.Checkpoint(iterator=iter(ds))`.

TF stores an iterator's internal buffers. layerflow stores what determines its position
exactly: how many elements it has produced, the pass counters its reshuffling nodes had when
it was created (a `shuffle(reshuffle_each_iteration=True)` draws another order on each pass),
and the dataset's fingerprint. A restore re-creates the underlying iterator with those pass
counters and advances it that many elements, so `next(it)` continues where it was at save time,
also in a fresh iterator of the same dataset, or of the same pipeline built again.

This is exact for deterministic pipelines: shuffles with a seed, or under `tf.random.set_seed`
(TF's seed rules make the op seeds reproducible). A shuffle without any seed draws its seed
from OS entropy when the pipeline is built, so a pipeline built again has another fingerprint
and a restore into it is refused with an error saying to pass a seed; a restore into an iterator
of the same dataset object is still exact. Functions that draw random numbers themselves are
not covered by the fingerprint: give them seeds too.

The saved state is untrusted input: every field is checked before the iterator changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

# A produced-count above this cannot be real (2**53: exact in every JSON reader).
MAX_COUNT = 2**53
_VERSION = 1


def pass_nodes(dataset: Any, dataset_type: type) -> list[Any]:
    """The nodes of the pipeline that count their passes (an int `_passes`), in a fixed
    depth-first order, each once."""
    found: list[Any] = []
    seen: set[int] = set()
    stack = [dataset]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        state = vars(node) if hasattr(node, "__dict__") else {}
        if isinstance(state.get("_passes"), int) and not isinstance(state["_passes"], bool):
            found.append(node)
        children: list[Any] = []
        for value in state.values():
            if isinstance(value, dataset_type):
                children.append(value)
            elif isinstance(value, list | tuple) and value and isinstance(value[0], dataset_type):
                # lists of inputs (zip, concatenate); a source's list of elements is not walked
                children += [v for v in value if isinstance(v, dataset_type)]
        stack.extend(reversed(children))
    return found


def encode(fingerprint: int, produced: int, passes: list[int]) -> bytes:
    state = {"version": _VERSION, "fingerprint": f"{fingerprint:016x}", "produced": produced,
             "passes": passes}  # fmt: skip
    return json.dumps(state, sort_keys=True).encode("utf-8")


def _int_field(state: dict, key: str, bound: int, what: str) -> int:
    value = state.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= bound:
        raise ValueError(
            f"Cannot restore the dataset iterator: the checkpoint's {what} must be an integer "
            f"in [0, {bound}], got {value!r}. The checkpoint is corrupt or was not written by "
            "layerflow."
        )
    return value


def decode(data: bytes, fingerprint: int, cardinality: int, n_passes: int) -> tuple[int, list]:
    """(produced, passes) from saved bytes, checked against the iterator restored into."""
    try:
        state = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        state = None
    if not isinstance(state, dict) or state.get("version") != _VERSION:
        raise ValueError(
            "Cannot restore the dataset iterator: the checkpoint entry is not a layerflow "
            f"iterator state (version {_VERSION} JSON). The checkpoint is corrupt or was "
            "written for another kind of object."
        )
    saved = state.get("fingerprint")
    if saved != f"{fingerprint:016x}":
        raise ValueError(
            "Cannot restore the dataset iterator: it was saved from a different input pipeline "
            f"(dataset fingerprint {saved!r}, this iterator's dataset has {fingerprint:016x}). "
            "Restore into an iterator of the same pipeline: same sources, functions, arguments "
            "and seeds. A `shuffle` without a seed draws a new seed each time the pipeline is "
            "built; pass `seed=` (or call `tf.random.set_seed` first) to make it restorable."
        )
    bound = cardinality if cardinality >= 0 else MAX_COUNT
    produced = _int_field(state, "produced", bound, "number of elements produced")
    passes = state.get("passes")
    if not isinstance(passes, list) or len(passes) != n_passes:
        raise ValueError(
            f"Cannot restore the dataset iterator: the checkpoint's pass counters must be a "
            f"list of {n_passes} integers, got {passes!r}. The checkpoint is corrupt."
        )
    passes = [_int_field({"p": p}, "p", MAX_COUNT, "pass counter") for p in passes]
    return produced, passes


def replay(dataset: Any, nodes: list[Any], passes: list[int], produced: int) -> Iterator[Any]:
    """A new element iterator of `dataset`, created with the given pass counters and advanced
    `produced` elements. The counters are left where the replay leaves them (a pass may draw
    its order lazily, at its first element), so the restored iterator's later passes draw the
    orders the saved one would have; on failure they are put back."""
    before = [n._passes for n in nodes]
    for node, p in zip(nodes, passes, strict=True):
        node._passes = p
    it = dataset._elements()
    for i in range(produced):
        try:
            next(it)
        except BaseException as err:
            for node, b in zip(nodes, before, strict=True):
                node._passes = b
            if not isinstance(err, StopIteration):
                raise
            raise ValueError(
                f"Cannot restore the dataset iterator: the checkpoint says it produced "
                f"{produced} elements, but the pipeline ends after {i}. The pipeline is not "
                "deterministic (a function drawing random numbers without a seed, or changed "
                "input files), or the checkpoint is corrupt."
            ) from None
    return it
