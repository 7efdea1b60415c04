"""Finding, downloading and reading the four IDX files of MNIST-style datasets.

Lookup order: `$LAYERFLOW_DATASETS/<name>/`, then the user cache `~/.layerflow/datasets/<name>/`,
then a download into the cache from the official mirrors. Downloads are verified against the
official SHA-256 and written atomically (temporary file in the same folder, fsync, rename), so an
interrupted or corrupted download never leaves a file under the final name. Files already in
place are read as they are, without checksums: the copies in this project's shared data folder
are a faithful re-split with different checksums.

`LAYERFLOW_DATASETS_MIRROR` (comma-separated base URLs) replaces the mirrors, e.g. for a local
copy served over HTTP.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import pathlib
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from layerflow._src.utils.files import atomic_write

FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
ENV_DATA = "LAYERFLOW_DATASETS"
ENV_MIRROR = "LAYERFLOW_DATASETS_MIRROR"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Source:
    """One dataset: its folder name, its mirrors (base URLs) and the official SHA-256 per file."""

    name: str
    mirrors: tuple[str, ...]
    sha256: dict[str, str] = field(default_factory=dict)


def cache_root() -> pathlib.Path:
    return pathlib.Path.home() / ".layerflow" / "datasets"


def _complete(folder: pathlib.Path) -> bool:
    return all((folder / f).is_file() for f in FILES)


def locate(name: str, cache_dir: pathlib.Path | None = None) -> pathlib.Path | None:
    """The first folder holding all four files, or None."""
    candidates = []
    env = os.environ.get(ENV_DATA)
    if env:
        candidates.append(pathlib.Path(env).expanduser() / name)
    candidates.append((cache_dir or cache_root()) / name)
    for folder in candidates:
        if _complete(folder):
            return folder
    return None


Splits = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def load(source: Source, mirrors: Sequence[str] | None = None,
         sha256: dict[str, str] | None = None, cache_dir: pathlib.Path | None = None,
         progress: bool = True) -> Splits:  # fmt: skip
    """`(x_train, y_train), (x_test, y_test)` as uint8 arrays, downloading when needed.

    `mirrors` and `sha256` override the source's (tests point them at a local server).
    """
    folder = locate(source.name, cache_dir)
    if folder is None:
        folder = (cache_dir or cache_root()) / source.name
        download(source, folder, mirrors, sha256, progress)
    x_train = read_idx(folder / FILES[0])
    y_train = read_idx(folder / FILES[1])
    x_test = read_idx(folder / FILES[2])
    y_test = read_idx(folder / FILES[3])
    for x, y, what in ((x_train, y_train, "training"), (x_test, y_test, "test")):
        if x.shape[0] != y.shape[0]:
            raise ValueError(
                f"The {what} files in {folder} disagree: {x.shape[0]} images but {y.shape[0]} "
                "labels. Delete the folder's files and run again to re-download them."
            )
    return (x_train, y_train), (x_test, y_test)


def _mirrors(source: Source, mirrors: Sequence[str] | None) -> list[str]:
    if mirrors is not None:
        return list(mirrors)
    env = os.environ.get(ENV_MIRROR)
    if env:
        return [m.strip() for m in env.split(",") if m.strip()]
    return list(source.mirrors)


def download(source: Source, folder: pathlib.Path, mirrors: Sequence[str] | None = None,
             sha256: dict[str, str] | None = None, progress: bool = True) -> None:  # fmt: skip
    """Fetch the missing files into `folder`, each verified and renamed into place atomically."""
    sums = source.sha256 if sha256 is None else sha256
    bases = _mirrors(source, mirrors)
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _unavailable(source, folder, [f"cannot create {folder}: {err}"]) from None
    for fname in FILES:
        target = folder / fname
        if target.is_file():
            continue
        failures = []
        for base in bases:
            url = base.rstrip("/") + "/" + fname
            try:
                _fetch(url, target, sums.get(fname), progress)
                break
            except (OSError, ValueError) as err:
                failures.append(f"{url}: {err}")
        else:
            if created and not any(folder.iterdir()):
                folder.rmdir()  # leave no trace of a download that never happened
            raise _unavailable(source, folder, failures)


def _unavailable(source: Source, folder: pathlib.Path, failures: list[str]) -> FileNotFoundError:
    files = ", ".join(FILES)
    tried = "\n  ".join(failures) if failures else "(no mirrors configured)"
    return FileNotFoundError(
        f"{source.name} is not available: its files are not on this machine and downloading "
        f"them failed.\nTried:\n  {tried}\nTo fix it, put the four files {files} in {folder} "
        f"(or in a folder <dir>/{source.name}/ and set {ENV_DATA}=<dir>), or run again with a "
        "network connection."
    )


def _fetch(url: str, target: pathlib.Path, expected: str | None, progress: bool) -> None:
    digest = hashlib.sha256()
    with atomic_write(target) as tmp:
        with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            bar = _progress_bar(target.name, total) if progress else None
            try:
                while True:
                    chunk = response.read(_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    digest.update(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
            finally:
                if bar is not None:
                    bar.close()
        got = digest.hexdigest()
        if expected is not None and got != expected:
            raise ValueError(
                f"checksum mismatch for {target.name}: expected SHA-256 {expected}, got {got}; "
                "the download was discarded"
            )


def _progress_bar(name: str, total: int | None) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        print(f"Downloading {name} ...", file=sys.stderr)
        return None
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                desc=f"Downloading {name}", file=sys.stderr)  # fmt: skip


def read_idx(path: pathlib.Path) -> np.ndarray:
    """An IDX file (gzip-compressed or not) as a uint8 array of its stated shape."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as err:
        raise ValueError(
            f"{path} cannot be read ({err}). Delete it and run again to download it anew."
        ) from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(
            f"{path} is not an unsigned-byte IDX file (bad magic number {raw[:4].hex()}). "
            "Delete it and run again to download it anew."
        )
    ndim = raw[3]
    header = 4 + 4 * ndim
    dims = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = int(np.prod(dims)) if dims else 1
    if len(raw) - header != expected:
        raise ValueError(
            f"{path} is truncated or corrupt: its header says shape {dims} ({expected} bytes) "
            f"but it holds {len(raw) - header}. Delete it and run again to download it anew."
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims).copy()
