"""`Layer.save_weights` / `Layer.load_weights`: the engine delegates here.

Any path (`mlp.params`, `w.safetensors`, ...) gets layerflow's format: one safetensors file keyed
by structural paths. Paths ending in `.h5`/`.hdf5` (including `.weights.h5`) use Keras 3's HDF5
weights layout instead, so files move between layerflow and Keras (needs h5py: the `h5` extra).
"""

from __future__ import annotations

import os
from typing import Any

from layerflow._src.saving import restore
from layerflow._src.saving.restore import LoadStatus
from layerflow._src.saving.weights_file import WeightsFileError

__all__ = ["LoadStatus", "WeightsFileError", "load_weights", "save_weights"]

_H5_SUFFIXES = (".h5", ".hdf5", ".keras_weights")


def _is_h5(filepath: str, save_format: Any = None) -> bool:
    if save_format is not None:
        fmt = str(save_format).lower()
        if fmt in ("h5", "hdf5", "keras"):
            return True
        if fmt not in ("tf", "safetensors", "layerflow"):
            raise ValueError(
                f"save_format={save_format!r} is not known; use 'h5' (Keras HDF5 layout) or "
                "'tf'/'safetensors' (layerflow's safetensors file), or leave it None to choose "
                "by the file name."
            )
        return False
    return filepath.lower().endswith(_H5_SUFFIXES)


def _path(filepath: Any) -> str:
    try:
        return os.fspath(filepath)
    except TypeError:
        raise TypeError(
            f"save_weights/load_weights need a file path (str or os.PathLike), got "
            f"{type(filepath).__name__}."
        ) from None


def save_weights(
    root: Any,
    filepath: Any,
    overwrite: bool = True,
    save_format: Any = None,
    options: Any = None,
) -> None:
    """Save every variable reachable from `root` to `filepath`, atomically.

    >>> # net.save_weights("mlp.params")  # one safetensors file, keys like "hidden/kernel"
    """
    path = _path(filepath)
    if _is_h5(path, save_format):
        from layerflow._src.keras.saving import h5_weights

        h5_weights.save(root, path, overwrite=overwrite)
        return
    restore.save(root, path, overwrite=overwrite)


def load_weights(
    root: Any,
    filepath: Any,
    skip_mismatch: bool = False,
    by_name: bool = False,
    options: Any = None,
) -> LoadStatus:
    """Load `filepath` into `root`: validated first, all or nothing; deferred where unbuilt.

    Returns a status (`assert_consumed()`, `expect_partial()`, `loaded`, `skipped`).

    >>> # clone = MLP(); clone.load_weights("mlp.params"); clone(X)  # uses the file's values
    """
    path = _path(filepath)
    if _is_h5(path):
        from layerflow._src.keras.saving import h5_weights

        return h5_weights.load(root, path, skip_mismatch=skip_mismatch, by_name=by_name)
    return restore.load(root, path, skip_mismatch=skip_mismatch, by_name=by_name)
