"""Where Keras keeps downloaded datasets, and fetching into it through `get_file`.

Lookup order for a Keras-format file: `cache_dir` when given; else `$KERAS_HOME/datasets/` and
`~/.keras/datasets/` when the file is already there (verified by its hash when it has one);
else a download through `get_file` into `$KERAS_HOME` (or `~/.keras`).
"""

from __future__ import annotations

import os

from layerflow._src.keras.utils.data_utils import get_file, keras_home, validate_file

BASE_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def homes() -> list[str]:
    """The Keras home folders to look in: `$KERAS_HOME` (if set), then `~/.keras`."""
    out = [keras_home()]
    default = os.path.join(os.path.expanduser("~"), ".keras")
    if default not in out:
        out.append(default)
    return out


def find(fname: str, file_hash: str | None = None, subdir: str = "datasets") -> str | None:
    """The path of `fname` in a Keras cache when present (and its hash matches), else None."""
    for home in homes():
        path = os.path.join(home, subdir, fname)
        if os.path.isfile(path) and (file_hash is None or validate_file(path, file_hash)):
            return path
        if os.path.isdir(path) and file_hash is None:
            return path
    return None


def fetch(fname: str, origin: str, file_hash: str | None, cache_dir: str | None = None,
          untar: bool = False) -> str:  # fmt: skip
    """`get_file`, reading from whichever Keras cache already holds the file."""
    if cache_dir:
        cache_dir = os.path.expanduser(cache_dir)
        os.makedirs(cache_dir, exist_ok=True)
        return get_file(fname, origin=origin, untar=untar, file_hash=file_hash,
                        cache_dir=cache_dir)  # fmt: skip
    for home in homes():
        target = os.path.join(home, "datasets", fname)
        if untar and os.path.isdir(target):
            return target
        if not untar and os.path.isfile(target):
            if file_hash is None or validate_file(target, file_hash):
                return target
    return get_file(fname, origin=origin, untar=untar, file_hash=file_hash)
