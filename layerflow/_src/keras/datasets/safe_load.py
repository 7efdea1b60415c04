"""Reading the pickle-based dataset formats without running code from the file.

CIFAR batches are Python pickles and the IMDB/Reuters `.npz` files hold object arrays (pickles
of lists of ints). Both are untrusted input: a pickle can name any importable callable. The
`RestrictedUnpickler` here resolves only what those files need -- NumPy's array reconstruction
(`ndarray`, `dtype`, `_reconstruct`, `scalar`) and `_codecs.encode` for protocol-2 bytes -- and
refuses every other global, so containers, numbers, strings, bytes and arrays load and nothing
else does. `.npz` members are read with `allow_pickle=False` unless their header says object
dtype; every member's stated size is checked against its bytes before anything is allocated.
"""

from __future__ import annotations

import codecs
import io
import os
import pickle
import zipfile
from typing import Any

import numpy as np


def _dtype(obj: Any, *args: Any) -> np.dtype:
    return np.dtype(obj, *args)


def _reconstruct(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"refusing to rebuild an array of type {subtype!r}")
    return np.ndarray.__new__(np.ndarray, shape, dtype)


def _scalar(dtype: Any, data: Any = None) -> Any:
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise pickle.UnpicklingError("refusing to rebuild a NumPy scalar of object dtype")
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise pickle.UnpicklingError("a NumPy scalar's bytes do not match its dtype")
    return np.frombuffer(data, dtype=dtype)[0]


def _encode(text: str, encoding: str = "utf-8") -> bytes:
    if encoding != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError("refusing _codecs.encode other than protocol 2's latin1")
    return codecs.encode(text, "latin1")


_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _dtype,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.multiarray", "scalar"): _scalar,
    ("numpy._core.multiarray", "scalar"): _scalar,
    ("_codecs", "encode"): _encode,
}


class RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler that builds only containers, numbers, strings, bytes and NumPy arrays."""

    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(
                f"refusing to load the global {module}.{name}: dataset files may hold only "
                "containers, numbers, strings and arrays"
            )
        return found


def restricted_loads(data: bytes, encoding: str = "bytes") -> Any:
    """`pickle.loads` that refuses every global but NumPy array reconstruction."""
    return RestrictedUnpickler(io.BytesIO(data), encoding=encoding).load()


def load_pickle(path: str | os.PathLike, encoding: str = "bytes") -> Any:
    """A pickle file, through `RestrictedUnpickler`; ValueError naming the file if refused."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return restricted_loads(data, encoding)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise ValueError(
            f"{path} is not a valid dataset pickle ({err}). Delete it and run again to "
            "download it anew."
        ) from None


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> np.ndarray:
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"{where}: unsupported .npy version {version}")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        rest = info.file_size - f.tell()
        if dtype.hasobject:
            obj = restricted_loads(f.read(), encoding="latin1")
            if not isinstance(obj, np.ndarray) or obj.shape != tuple(shape):
                raise ValueError(f"{where}: the pickled array does not match its header")
            return obj
        if count * dtype.itemsize != rest:
            raise ValueError(
                f"{where}: the header says shape {shape} of {dtype} ({count * dtype.itemsize} "
                f"bytes) but the member holds {rest} bytes"
            )
        data = np.frombuffer(f.read(), dtype=dtype, count=count)
        return data.reshape(shape, order="F" if fortran else "C").copy()


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of a `.npz` file, object arrays through `RestrictedUnpickler`."""
    out: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                key = info.filename[: -len(".npy")]
                out[key] = _read_member(zf, info, f"{path}[{key}]")
    except (zipfile.BadZipFile, pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise ValueError(
            f"{path} is not a valid dataset .npz file ({err}). Delete it and run again to "
            "download it anew."
        ) from None
    return out


def require(arrays: dict[str, np.ndarray], keys: tuple[str, ...], path: Any) -> None:
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ValueError(
            f"{path} lacks the arrays {missing} (it holds {sorted(arrays)}). Delete it and run "
            "again to download it anew."
        )
