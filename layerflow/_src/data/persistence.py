"""`Dataset.save`, `Dataset.load` and `Dataset.snapshot`: datasets on disk, in a safe format.

A saved dataset is a folder: `shard-NNNNN.safetensors` files (layerflow's weights format: one
entry `i/j` per component j of element i; a string component is its bytes, `i/j`, plus their
lengths, `i/j/lengths`) and `dataset_spec.json`, written last, naming the element structure,
the shards and the element counts. No pickle anywhere.

Loading is untrusted input: the JSON is size- and depth-limited, shard names must be plain
`shard-NNNNN.safetensors` names inside the folder, every shard is validated by the weights
reader (header, sizes, checksums) before use, and every element must match the recorded
structure, dtypes and shapes.

`snapshot(path)` is cache-to-path: the first complete pass writes the dataset to `path` (in
this format), later passes and later programs read it back (TF keys snapshots by a graph
fingerprint and can resume partial ones; layerflow keeps one snapshot per path).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.transforms import _Unary
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor, SparseTensorSpec
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.saving import weights_file
from layerflow._src.utils import nest
from layerflow._src.utils.files import atomic_write

SPEC_FILE = "dataset_spec.json"
FORMAT = "layerflow.dataset"
_SHARD = re.compile(r"shard-[0-9]{5}\.safetensors")
_MAX_SPEC_BYTES = 16 * 1024 * 1024
_MAX_DEPTH = 64
_SHARD_ELEMENTS = 4096


def _encode_spec(spec: Any) -> Any:
    if isinstance(spec, tuple):
        return {"tuple": [_encode_spec(s) for s in spec]}
    if isinstance(spec, dict):
        return {"dict": {str(k): _encode_spec(v) for k, v in spec.items()}}
    if isinstance(spec, SparseTensorSpec):
        return {"sparse": _encode_spec(structure.TensorSpec(spec.shape, spec.dtype))}
    if not isinstance(spec, structure.TensorSpec):
        raise TypeError(f"Dataset.save: cannot save elements of type {spec!r}.")
    shape = None if spec.shape.rank is None else list(spec.shape)
    return {"dtype": spec.dtype.name, "shape": shape}


def _widen(a: Any, b: Any) -> Any:
    dims = [x if x == y else None for x, y in zip(a.shape, b.shape)]
    return type(a)(dims, a.dtype)


def _bad(path: str, what: str) -> errors.DataLossError:
    return errors.DataLossError(
        None, None, f"Dataset.load: '{path}' is not a valid saved dataset: {what}."
    )


def _decode_spec(doc: Any, path: str, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH or not isinstance(doc, dict) or len(doc) not in (1, 2):
        raise _bad(path, "the element structure is malformed")
    if "tuple" in doc and isinstance(doc["tuple"], list):
        return tuple(_decode_spec(d, path, depth + 1) for d in doc["tuple"])
    if "dict" in doc and isinstance(doc["dict"], dict):
        return {k: _decode_spec(v, path, depth + 1) for k, v in doc["dict"].items()}
    if "sparse" in doc and len(doc) == 1:
        dense = _decode_spec(doc["sparse"], path, depth + 1)
        if not isinstance(dense, structure.TensorSpec):
            raise _bad(path, "a sparse component's spec is malformed")
        return SparseTensorSpec(dense.shape, dense.dtype)
    shape, name = doc.get("shape"), doc.get("dtype")
    if not isinstance(name, str) or not (
        shape is None
        or (
            isinstance(shape, list) and all(d is None or (type(d) is int and d >= 0) for d in shape)
        )
    ):
        raise _bad(path, "a component's dtype or shape is malformed")
    try:
        dt = dtypes.as_dtype(name)
    except (TypeError, ValueError, KeyError):
        raise _bad(path, f"unknown dtype {name!r}") from None
    return structure.TensorSpec(TensorShape(shape), dt)


def _arrays_of(index: int, element: Any) -> dict[str, np.ndarray]:
    out = {}
    for j, leaf in enumerate(nest.flatten(element)):
        key = f"{index}/{j}"
        if isinstance(leaf, SparseTensor):  # i/j: its values; i/j/indices, i/j/dense_shape
            out[f"{key}/indices"] = leaf.host_indices()
            out[f"{key}/dense_shape"] = np.asarray(leaf.host_shape(), np.int64)
            leaf = leaf.values
        value = leaf.numpy()
        if leaf.dtype.name == "string":
            items = [bytes(v) for v in np.asarray(value, dtype=object).reshape(-1)]
            out[key] = np.frombuffer(b"".join(items), np.uint8).copy()
            lengths = np.asarray([len(b) for b in items], np.int64)
            out[f"{key}/lengths"] = lengths.reshape(np.shape(value))
        else:
            out[key] = np.asarray(value)
    return out


def save(dataset: Dataset, path: Any, compression: Any = None, shard_func: Any = None,
         checkpoint_args: Any = None) -> None:  # fmt: skip
    """Write every element of `dataset` under the folder `path` (see the module docstring)."""
    if compression not in (None, "NONE", ""):
        raise NotImplementedError(
            f"Dataset.save: compression={compression!r} is not supported; layerflow writes "
            "uncompressed shards (compression=None)."
        )
    if checkpoint_args is not None:
        raise NotImplementedError("Dataset.save: checkpoint_args is not supported.")
    folder = os.fspath(path)
    os.makedirs(folder, exist_ok=True)
    merged: list[Any] | None = None  # the element spec, widened to every element seen
    first: Any = None
    shards: dict[int, list[Any]] = {}
    written: list[tuple[str, int]] = []

    def flush(shard_id: int, items: list[Any]) -> None:
        name = f"shard-{len(written):05d}.safetensors"
        tensors: dict[str, np.ndarray] = {}
        for i, element in enumerate(items):
            tensors.update(_arrays_of(i, element))
        weights_file.write(os.path.join(folder, name), tensors, {"format": FORMAT})
        written.append((name, len(items)))

    for element in dataset._elements():
        specs = nest.flatten(structure.spec_of(element))
        if merged is None:
            merged, first = specs, element
        elif len(specs) != len(merged) or any(
            a.dtype != b.dtype or len(a.shape) != len(b.shape) or type(a) is not type(b)
            for a, b in zip(specs, merged)
        ):
            raise errors.InvalidArgumentError(
                None, None,
                f"Dataset.save: the elements differ in structure, dtype or rank: "
                f"{structure.describe(first)} vs {structure.describe(element)}.",
            )  # fmt: skip
        else:
            merged = [_widen(a, b) for a, b in zip(merged, specs)]
        if shard_func is None:
            key = 0
        else:
            key = int(np.asarray(structure.call(shard_func, element).numpy()))
            if key < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Dataset.save: shard_func returned {key}; it must be >= 0."
                )
        group = shards.setdefault(key, [])
        group.append(element)
        if len(group) >= _SHARD_ELEMENTS:
            flush(key, shards.pop(key))
    for key in sorted(shards):
        flush(key, shards[key])
    spec = dataset.element_spec if merged is None else structure.pack(first, merged)
    encoded = _encode_spec(spec)
    doc = {
        "format": FORMAT,
        "version": 1,
        "element_spec": encoded,
        "shards": [{"file": n, "count": c} for n, c in written],
    }
    with atomic_write(os.path.join(folder, SPEC_FILE)) as tmp, open(tmp, "w") as f:
        json.dump(doc, f)


def _read_doc(folder: str) -> dict | None:
    spec_path = os.path.join(folder, SPEC_FILE)
    try:
        with open(spec_path, "rb") as f:
            raw = f.read(_MAX_SPEC_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if len(raw) > _MAX_SPEC_BYTES:
        raise _bad(folder, f"{SPEC_FILE} is larger than {_MAX_SPEC_BYTES} bytes")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise _bad(folder, f"{SPEC_FILE} does not parse") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != 1:
        raise _bad(folder, f"{SPEC_FILE} is not a layerflow dataset spec (version 1)")
    shards = doc.get("shards")
    if not isinstance(shards, list) or not all(
        isinstance(s, dict)
        and isinstance(s.get("file"), str)
        and _SHARD.fullmatch(s["file"])
        and type(s.get("count")) is int
        and s["count"] >= 0
        for s in shards
    ):
        raise _bad(folder, "the shard list is malformed (names must be shard-NNNNN.safetensors)")
    return doc


class LoadDataset(Dataset):
    def __init__(self, folder: str, doc: dict, element_spec: Any) -> None:
        self._folder = folder
        self._shards = [(s["file"], s["count"]) for s in doc["shards"]]
        stored = _decode_spec(doc.get("element_spec"), folder)
        if element_spec is not None:
            same = nest.flatten(element_spec)
            try:
                nest.assert_same_structure(element_spec, stored, check_types=False)
                ok = all(a.dtype == b.dtype for a, b in zip(same, nest.flatten(stored)))
            except (ValueError, TypeError):
                ok = False
            if not ok:
                raise ValueError(
                    f"Dataset.load: element_spec {element_spec} does not match the saved "
                    f"dataset's {stored}."
                )
        self._spec = stored

    def _element(self, get: Callable, header: dict, i: int) -> Any:
        leaves = []
        for j, spec in enumerate(nest.flatten(self._spec)):
            key = f"{i}/{j}"
            if key not in header:
                raise _bad(self._folder, f"element {i} lacks component {j}")
            if spec.dtype.name == "string":
                if f"{key}/lengths" not in header:
                    raise _bad(self._folder, f"string component {key} lacks its lengths")
                data, lengths = get(key), get(f"{key}/lengths")
                if lengths.dtype != np.int64 or (lengths < 0).any() or lengths.sum() != data.size:
                    raise _bad(self._folder, f"string component {key} has invalid lengths")
                ends = np.cumsum(lengths.reshape(-1))
                raw = data.tobytes()
                items = [raw[e - n : e] for e, n in zip(ends, lengths.reshape(-1))]
                value = np.array(items + [b""], dtype=object)[:-1].reshape(lengths.shape)
            else:
                value = get(key)
                if value.dtype != spec.dtype.np:
                    raise _bad(self._folder, f"component {key} has dtype {value.dtype}")
            if isinstance(spec, SparseTensorSpec):
                leaves.append(self._sparse(get, header, key, spec, value))
                continue
            if not spec.shape.is_compatible_with(value.shape):
                raise _bad(self._folder, f"component {key} has shape {list(value.shape)}")
            leaves.append(convert_to_tensor(value, dtype=spec.dtype))
        return structure.pack(self._spec, leaves)

    def _sparse(self, get: Callable, header: dict, key: str, spec: Any, values: Any) -> Any:
        """A SparseTensor component, its indices checked against its dense shape."""
        if f"{key}/indices" not in header or f"{key}/dense_shape" not in header:
            raise _bad(self._folder, f"sparse component {key} lacks its indices or dense_shape")
        indices, shape = get(f"{key}/indices"), get(f"{key}/dense_shape")
        if (
            indices.dtype != np.int64 or shape.dtype != np.int64 or shape.ndim != 1
            or indices.ndim != 2 or indices.shape[1] != shape.shape[0]
            or values.ndim != 1 or values.shape[0] != indices.shape[0]
            or (shape < 0).any() or (indices < 0).any() or (indices >= shape).any()
            or not spec.shape.is_compatible_with(shape.tolist())
        ):  # fmt: skip
            raise _bad(self._folder, f"sparse component {key} has invalid indices or shape")
        return SparseTensor(indices, convert_to_tensor(values, dtype=spec.dtype), shape)

    def _elements(self) -> Iterator[Any]:
        for name, count in self._shards:
            with weights_file.open_file(os.path.join(self._folder, name)) as reader:
                if reader.info.get("format") != FORMAT:
                    raise _bad(self._folder, f"{name} is not a dataset shard")
                for i in range(count):
                    yield self._element(reader.get, reader.header, i)

    def _cardinality(self) -> int:
        return sum(c for _, c in self._shards)

    def _element_spec(self) -> Any:
        return self._spec


def load(path: Any, element_spec: Any = None, compression: Any = None,
         reader_func: Any = None) -> Dataset:  # fmt: skip
    """The dataset saved under `path` by `Dataset.save` (validated as untrusted input)."""
    folder = os.fspath(path)
    doc = _read_doc(folder)
    if doc is None:
        raise errors.NotFoundError(
            None, None,
            f"Dataset.load: no saved dataset at '{folder}' ({SPEC_FILE} is missing). Save one "
            "with dataset.save(path) first.",
        )  # fmt: skip
    loaded = LoadDataset(folder, doc, element_spec)
    if reader_func is not None:
        out = reader_func(loaded)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.load: reader_func must return a Dataset, got {out!r}.")
        return out
    return loaded


class SnapshotDataset(_Unary):
    def __init__(self, input_dataset: Dataset, path: str, shard_func: Any) -> None:
        super().__init__(input_dataset)
        self._path = path
        self._shard_func = shard_func

    def _elements(self) -> Iterator[Any]:
        doc = _read_doc(self._path)
        if doc is not None:
            yield from LoadDataset(self._path, doc, None)._elements()
            return
        items = []
        for element in self._input._elements():
            items.append(element)
            yield element
        from layerflow._src.data.transforms_extra import ListDataset

        save(ListDataset(items), self._path, shard_func=self._shard_func)


__all__ = ["LoadDataset", "SnapshotDataset", "load", "save"]
