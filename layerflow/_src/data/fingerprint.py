"""`Dataset.fingerprint()`: a uint64 hash of what determines a dataset's elements.

TF hashes the dataset's graph; layerflow hashes the pipeline it holds: each node's class and
arguments, source tensors by dtype, shape and bytes, and each user function by its code
(bytecode, constants, names), the values its closure and the globals it reads hold, and its
defaults. So two pipelines built the same way have the same fingerprint (also in another
process), and a different function, constant, seed or argument gives another one. TF's
contract holds: equal fingerprints mean equal elements as long as upstream files do not change
and the functions are deterministic; equal elements need not mean equal fingerprints.

Anything whose content cannot be read (an open resource, a Python generator, an object of an
unknown class) is hashed by identity, which can only make fingerprints differ, never collide.
Iteration state (the pass counter of a reshuffling node, a cache's filled buffers, the element
spec cache) is not part of the hash: iterating never changes a fingerprint.
"""

from __future__ import annotations

import hashlib
import types
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.tensor import TensorLike

# Attributes that change while a dataset is iterated, never its elements.
_RUNTIME_STATE = {"_spec_cache", "_passes", "_chunks", "_own_options"}
_CACHE_STATE = {"_items"}  # CacheDataset's filled buffer (ListDataset's `_items` is data)
_LIBRARIES = {"layerflow", "numpy", "scipy", "cupy", "ml_dtypes"}


class _Hasher:
    def __init__(self, dataset_type: type) -> None:
        self._dataset_type = dataset_type
        self._h = hashlib.blake2b(digest_size=8)
        self._active: set[int] = set()  # objects on the current path (cycles)

    def digest(self) -> int:
        return int.from_bytes(self._h.digest(), "little")

    def _put(self, tag: str, payload: bytes = b"") -> None:
        self._h.update(tag.encode() + b"\x00" + len(payload).to_bytes(8, "little") + payload)

    def value(self, v: Any) -> None:
        if v is None or isinstance(v, bool | int | float | complex | str | bytes | range | slice):
            self._put(type(v).__name__, repr(v).encode())
            return
        if isinstance(v, np.generic):
            self._put("npscalar", f"{v.dtype}:{v!r}".encode())
            return
        if isinstance(v, TensorLike):
            self.array(backend.to_host(v._data))
            return
        if isinstance(v, np.ndarray):
            self.array(v)
            return
        if id(v) in self._active:
            self._put("cycle")
            return
        self._active.add(id(v))
        try:
            self._compound(v)
        finally:
            self._active.discard(id(v))

    def array(self, a: np.ndarray) -> None:
        self._put("array", f"{a.dtype}:{a.shape}".encode())
        if a.dtype.kind == "O":
            for item in a.reshape(-1).tolist():
                self.value(item)
        else:
            self._h.update(np.ascontiguousarray(a).tobytes())

    def _compound(self, v: Any) -> None:
        if isinstance(v, self._dataset_type):
            self.dataset(v)
        elif isinstance(v, list | tuple):
            self._put(type(v).__name__, str(len(v)).encode())
            for item in v:
                self.value(item)
        elif isinstance(v, set | frozenset):
            self._put(type(v).__name__, str(len(v)).encode())
            for item in sorted(v, key=repr):
                self.value(item)
        elif isinstance(v, dict):
            self._put("dict", str(len(v)).encode())
            for k in sorted(v, key=repr):
                self.value(k)
                self.value(v[k])
        elif isinstance(v, types.FunctionType):
            self.function(v)
        elif isinstance(v, types.MethodType):
            self._put("method")
            self.value(v.__func__)
            self.value(v.__self__)
        elif isinstance(v, types.BuiltinFunctionType | types.ModuleType | type):
            name = v.__qualname__ if isinstance(v, type) else v.__name__
            self._put("named", f"{getattr(v, '__module__', '')}.{name}".encode())
        elif isinstance(v, backend.Device):
            self._put("device", str(v.name).encode())
        elif hasattr(v, "__dict__") and type(v).__module__.startswith("layerflow."):
            # A layerflow value object (a DType, a TensorSpec, options): its class and state.
            self._put("object", type(v).__qualname__.encode())
            self.value(vars(v))
        elif hasattr(type(v), "__slots__") and type(v).__module__.startswith("layerflow."):
            self._put("object", type(v).__qualname__.encode())
            for name in _slots(type(v)):
                self.value(getattr(v, name, None))
        else:
            # Content unknown (a generator, a file, a lock): identity, so no false equality.
            self._put("opaque", f"{type(v).__qualname__}@{id(v)}".encode())

    def function(self, fn: types.FunctionType) -> None:
        module = fn.__module__ or ""
        if module.split(".")[0] in _LIBRARIES or "site-packages" in fn.__code__.co_filename:
            # A library function (a layerflow op, a NumPy helper): its name says what it does.
            self._put("library-function", f"{module}.{fn.__qualname__}".encode())
            return
        self._put("function")
        self.code(fn.__code__)
        self.value(fn.__defaults__)
        self.value(fn.__kwdefaults__)
        cells = fn.__closure__ or ()
        for cell in cells:
            try:
                self.value(cell.cell_contents)
            except ValueError:  # an empty cell
                self._put("empty-cell")
        globals_ = fn.__globals__
        for name in _global_names(fn.__code__):
            if name in globals_:
                self._put("global", name.encode())
                self.value(globals_[name])

    def code(self, code: types.CodeType) -> None:
        self._put("code", code.co_code)
        self._put("names", repr((code.co_names, code.co_varnames, code.co_freevars)).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const)
            else:
                self.value(const)

    def dataset(self, ds: Any) -> None:
        cls = type(ds)
        self._put("dataset", f"{cls.__module__}.{cls.__qualname__}".encode())
        state = vars(ds) if hasattr(ds, "__dict__") else {}
        skip = _RUNTIME_STATE | (_CACHE_STATE if cls.__name__ == "CacheDataset" else set())
        for name in sorted(state):
            if name not in skip:
                self._put("attr", name.encode())
                self.value(state[name])


def _slots(cls: type) -> list[str]:
    out: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        out.extend([slots] if isinstance(slots, str) else slots)
    return [s for s in out if s not in ("__weakref__", "__dict__")]


def _global_names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_global_names(const))
    return sorted(set(names))


def fingerprint(dataset: Any, dataset_type: type) -> int:
    """The dataset's fingerprint as a Python int in [0, 2**64); `dataset_type` is the Dataset
    class (passed in: `dataset.py` imports this module)."""
    h = _Hasher(dataset_type)
    h.value(dataset)
    return h.digest()
