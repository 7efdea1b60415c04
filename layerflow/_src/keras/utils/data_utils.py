"""`tf.keras.utils.get_file`: download into Keras's cache, verify, extract safely.

The cache is `cache_dir` (default `$KERAS_HOME`, else `~/.keras`), falling back to `/tmp/.keras`
when that folder cannot be written, as Keras does. Downloads go to a temporary file in the target
folder and are renamed into place only once complete and verified, so an interrupted or
corrupted download never leaves a file under the final name. Archives are untrusted input: a
member with an absolute path, a `..` that leaves the folder, a link, or a device is refused
before anything is extracted.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from typing import Any
from urllib.parse import urlsplit

from layerflow._src.keras.utils import io_utils
from layerflow._src.keras.utils.progress import Progbar
from layerflow._src.utils.files import atomic_write

_CHUNK = 1 << 16


def keras_home() -> str:
    """`$KERAS_HOME`, else `~/.keras` (the folder Keras keeps its config and caches in)."""
    env = os.environ.get("KERAS_HOME")
    if env:
        return os.path.expanduser(env)
    return os.path.join(os.path.expanduser("~"), ".keras")


def _writable_base(cache_dir: str) -> str:
    base = os.path.expanduser(cache_dir)
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        pass
    if os.path.isdir(base) and os.access(base, os.W_OK):
        return base
    return os.path.join(tempfile.gettempdir() if os.name != "posix" else "/tmp", ".keras")


def _hasher(algorithm: str, file_hash: str | None = None) -> Any:
    if algorithm == "sha256" or (
        algorithm == "auto" and file_hash is not None and len(file_hash) == 64
    ):
        return hashlib.sha256()
    if algorithm in ("md5", "auto"):
        return hashlib.md5()  # legacy hashes (32 hex digits), as Keras accepts them
    raise ValueError(f"hash_algorithm must be 'auto', 'sha256' or 'md5', got {algorithm!r}.")


def hash_file(fpath: str, algorithm: str = "sha256", chunk_size: int = _CHUNK) -> str:
    """The file's SHA-256 (or MD5) as hex digits."""
    hasher = _hasher(algorithm) if isinstance(algorithm, str) else algorithm
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto",
                  chunk_size: int = _CHUNK) -> bool:  # fmt: skip
    """Whether the file's sha256/md5 hash equals `file_hash` ('auto': by its length)."""
    return hash_file(fpath, _hasher(algorithm, file_hash), chunk_size) == str(file_hash).lower()


def _inside(base: str, name: str) -> bool:
    if os.path.isabs(name) or name.startswith(("/", "\\")) or ":" in name.split("/")[0]:
        return False
    target = os.path.realpath(os.path.join(base, name))
    return os.path.commonpath([base, target]) == base


def _check_tar(archive: tarfile.TarFile, base: str, fpath: str) -> list[tarfile.TarInfo]:
    members = archive.getmembers()
    for m in members:
        if not _inside(base, m.name):
            raise ValueError(
                f"Refusing to extract {fpath}: member {m.name!r} would be written outside "
                f"{base}. The archive is unsafe; nothing was extracted."
            )
        if m.issym() or m.islnk():
            raise ValueError(
                f"Refusing to extract {fpath}: member {m.name!r} is a link (to "
                f"{m.linkname!r}); links in downloaded archives are not extracted. Nothing "
                "was extracted."
            )
        if not (m.isfile() or m.isdir()):
            raise ValueError(
                f"Refusing to extract {fpath}: member {m.name!r} is not a regular file or "
                "folder (a device or FIFO). Nothing was extracted."
            )
    return members


def _check_zip(archive: zipfile.ZipFile, base: str, fpath: str) -> None:
    for info in archive.infolist():
        mode = info.external_attr >> 16
        if not _inside(base, info.filename):
            raise ValueError(
                f"Refusing to extract {fpath}: member {info.filename!r} would be written "
                f"outside {base}. The archive is unsafe; nothing was extracted."
            )
        if mode and (mode & 0o170000) == 0o120000:
            raise ValueError(
                f"Refusing to extract {fpath}: member {info.filename!r} is a symbolic link. "
                "Nothing was extracted."
            )


def extract_archive(file_path: str, path: str = ".", archive_format: Any = "auto") -> bool:
    """Extract a tar (gz/bz2/xz) or zip archive into `path`; False if it is neither.

    Every member is checked before anything is written (see the module docstring), and the
    members are extracted into a temporary folder next to `path` and moved into place.
    """
    if archive_format is None:
        return False
    if archive_format == "auto":
        archive_format = ["tar", "zip"]
    if isinstance(archive_format, str):
        archive_format = [archive_format]
    file_path, path = os.fspath(file_path), os.fspath(path)
    for kind in archive_format:
        if kind not in ("tar", "zip"):
            raise ValueError(f"archive_format must be 'auto', 'tar', 'zip' or None, got {kind!r}.")
        is_match = tarfile.is_tarfile if kind == "tar" else zipfile.is_zipfile
        if not is_match(file_path):
            continue
        os.makedirs(path, exist_ok=True)
        base = os.path.realpath(path)
        staging = tempfile.mkdtemp(prefix=".extract-", dir=base)
        try:
            if kind == "tar":
                with tarfile.open(file_path) as archive:
                    members = _check_tar(archive, base, file_path)
                    for m in members:
                        archive.extract(m, staging, set_attrs=False, filter="data")
            else:
                with zipfile.ZipFile(file_path) as archive:
                    _check_zip(archive, base, file_path)
                    archive.extractall(staging)
            for entry in os.listdir(staging):
                dest = os.path.join(base, entry)
                if os.path.isdir(dest) and not os.path.islink(dest):
                    shutil.rmtree(dest)
                elif os.path.lexists(dest):
                    os.remove(dest)
                os.replace(os.path.join(staging, entry), dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return True
    return False


class _DownloadBar:
    def __init__(self) -> None:
        self.bar: Progbar | None = None

    def __call__(self, done: int, total: int | None) -> None:
        if self.bar is None:
            self.bar = Progbar(total)
        self.bar.update(min(done, total) if total else done)


def _download(origin: str, fpath: str, file_hash: str | None, algorithm: str) -> None:
    io_utils.print_msg(f"Downloading data from {origin}")
    hasher = _hasher(algorithm, file_hash) if file_hash is not None else None
    progress = _DownloadBar()
    try:
        with atomic_write(fpath) as tmp:
            with urllib.request.urlopen(origin, timeout=60) as response, open(tmp, "wb") as out:
                total = int(response.headers.get("Content-Length") or 0) or None
                done = 0
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    if hasher is not None:
                        hasher.update(chunk)
                    progress(done, total)
                if total is not None and done != total:
                    raise OSError(f"the connection closed after {done} of {total} bytes")
            if hasher is not None and hasher.hexdigest() != file_hash.lower():
                raise ValueError(
                    f"Incomplete or corrupted file detected. The {hasher.name} file hash of the "
                    f"download from {origin} is {hasher.hexdigest()}, not the provided value of "
                    f"{file_hash}. The download was discarded."
                )
    except urllib.error.HTTPError as err:
        raise OSError(f"URL fetch failure on {origin}: {err.code} -- {err.msg}") from None
    except urllib.error.URLError as err:
        raise OSError(f"URL fetch failure on {origin}: None -- {err.reason}") from None


def get_file(fname: str | os.PathLike | None = None, origin: str | None = None,
             untar: bool = False, md5_hash: str | None = None, file_hash: str | None = None,
             cache_subdir: str = "datasets", hash_algorithm: str = "auto",
             extract: bool = False, archive_format: Any = "auto",
             cache_dir: str | os.PathLike | None = None) -> str:  # fmt: skip
    """Download a file from a URL unless it is already in the cache; return its path.

    The file lands in `<cache_dir>/<cache_subdir>/<fname>` (default `~/.keras/datasets/`).
    A cached file whose `file_hash` (sha256 or md5) does not match is downloaded again;
    a download whose hash does not match raises ValueError and leaves nothing behind.
    `extract=True` (or `untar=True`) unpacks tar/zip archives next to the file.

    >>> import layerflow as tf
    >>> path = tf.keras.utils.get_file(origin="https://example.com/data.csv")  # doctest: +SKIP
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if file_hash is not None:
        _hasher(hash_algorithm, file_hash)  # reject an unknown algorithm before downloading
    base = _writable_base(os.fspath(cache_dir) if cache_dir is not None else keras_home())
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    fname = os.fspath(fname) if fname is not None else ""
    if not fname:
        fname = os.path.basename(urlsplit(origin).path)
        if not fname:
            raise ValueError(
                f"Can't parse the file name from the origin provided: '{origin}'. "
                "Please specify the `fname` as the input param."
            )
    untar_fpath = ""
    if untar:
        if fname.endswith(".tar.gz"):
            fname = str(pathlib.Path(fname).with_suffix("").with_suffix(""))
        untar_fpath = os.path.join(datadir, fname)
        fpath = untar_fpath + ".tar.gz"
    else:
        fpath = os.path.join(datadir, fname)

    download = not os.path.exists(fpath)
    if not download and file_hash is not None:
        if not validate_file(fpath, file_hash, algorithm=hash_algorithm):
            io_utils.print_msg(
                "A local file was found, but it seems to be incomplete or outdated because the "
                f"{hash_algorithm} file hash does not match the original value of {file_hash} "
                "so we will re-download the data."
            )
            download = True
    if download:
        _download(origin, fpath, file_hash, hash_algorithm)
    if untar:
        if not os.path.exists(untar_fpath):
            extract_archive(fpath, datadir, archive_format="tar")
        return untar_fpath
    if extract:
        extract_archive(fpath, datadir, archive_format)
    return fpath
