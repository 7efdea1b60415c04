"""`tf.io.gfile`: TF's file API on the local file system, with TF's errors.

Only local paths (plain or `file://`) are served; any other scheme (`gs://`, `s3://`, `hdfs://`)
raises `UnimplementedError`, as TF does for a file system it has no plugin for.

Writing in mode "w"/"wb" goes to a temporary file in the target's folder that `close()` renames
into place (`utils.files.atomic_write`), so a reader never sees half a file and a crash keeps the
old one; leaving a `with` block by an exception discards what was written. Mode "a" appends in
place. Like TF's, a `GFile` opens lazily: a missing file raises `NotFoundError` on first read.

>>> import os, tempfile
>>> import layerflow as tf
>>> path = tf.io.gfile.join(tempfile.mkdtemp(), "notes.txt")
>>> with tf.io.gfile.GFile(path, "w") as f:
...     f.write("one\\ntwo\\n")
>>> tf.io.gfile.GFile(path).readlines(), tf.io.gfile.stat(path).length
(['one\\n', 'two\\n'], 8)
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import posixpath
import shutil
from collections.abc import Callable, Iterator
from typing import Any

from layerflow._src.framework import errors
from layerflow._src.utils.files import atomic_write

_MODES = ("r", "rb", "w", "wb", "a", "ab")


def _local(path: Any) -> str:
    """The local path of `path`; `UnimplementedError` for a scheme other than `file://`."""
    path = os.fsdecode(os.fspath(path)) if not isinstance(path, str) else path
    scheme, sep, rest = path.partition("://")
    if not sep or "/" in scheme:
        return path
    if scheme == "file":
        return rest
    raise errors.UnimplementedError(
        None, None,
        f"File system scheme '{scheme}' not implemented (file: '{path}'). layerflow's "
        f"tf.io.gfile serves local paths only (schemes {get_registered_schemes()}); copy the "
        "data to a local folder first.",
    )  # fmt: skip


def _raise_os(e: OSError, path: str) -> None:
    """Re-raise an OSError as the `tf.errors` class TF gives it."""
    what = e.strerror or str(e)
    if isinstance(e, FileNotFoundError):
        cls = errors.NotFoundError
    elif isinstance(e, FileExistsError):
        cls = errors.AlreadyExistsError
    elif isinstance(e, (IsADirectoryError, NotADirectoryError)):
        cls = errors.FailedPreconditionError
    elif isinstance(e, PermissionError):
        cls = errors.PermissionDeniedError
    else:
        cls = errors.UnknownError
    raise cls(None, None, f"{path}; {what}") from e


def get_registered_schemes() -> list[str]:
    """The URL schemes served: "" (a plain path) and "file"."""
    return ["", "file"]


def exists(path: Any) -> bool:
    """Whether a file or folder exists at `path`."""
    return os.path.exists(_local(path))


def isdir(path: Any) -> bool:
    """Whether `path` is a folder (False when nothing is there)."""
    return os.path.isdir(_local(path))


def join(path: Any, *paths: Any) -> str:
    """Join path parts as `os.path.join`; a URL (`gs://b`) joins with "/" on every system."""
    path = os.fsdecode(os.fspath(path))
    parts = [os.fsdecode(os.fspath(p)) for p in paths]
    if "://" in path:
        return posixpath.join(path, *parts)
    return os.path.join(path, *parts)


def listdir(path: Any) -> list[str]:
    """The names in folder `path` (sorted; not "." or ".."); `NotFoundError` if not a folder."""
    local = _local(path)
    if not os.path.isdir(local):
        raise errors.NotFoundError(None, None, f"Could not find directory {path}")
    return sorted(os.listdir(local))


def glob(pattern: Any) -> list[str]:
    """The paths matching `pattern` (or any of a list of patterns), sorted; `*` matches dotfiles."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    found: list[str] = []
    for p in patterns:
        p = os.fsdecode(os.fspath(p))
        local = _local(p)
        prefix = p[: len(p) - len(local)]
        found.extend(prefix + m for m in _glob.glob(local, include_hidden=True))
    return sorted(set(found))


def mkdir(path: Any) -> None:
    """Create folder `path` (no error if it exists, as TF); its parent must exist."""
    local = _local(path)
    try:
        os.mkdir(local)
    except FileExistsError:
        if not os.path.isdir(local):
            raise errors.FailedPreconditionError(
                None, None, f"{path} exists and is not a directory; remove it or choose another "
                "path.") from None  # fmt: skip
    except OSError as e:
        _raise_os(e, str(path))


def makedirs(path: Any) -> None:
    """Create folder `path` and its missing parents (no error if it exists)."""
    local = _local(path)
    head = os.path.abspath(local)
    while not os.path.exists(head) and os.path.dirname(head) != head:
        head = os.path.dirname(head)
    if not os.path.isdir(head):
        raise errors.FailedPreconditionError(
            None, None, f"{head} is not a directory; remove that file or choose another path."
        )
    try:
        os.makedirs(local, exist_ok=True)
    except OSError as e:
        _raise_os(e, str(path))


def remove(path: Any) -> None:
    """Delete file `path`; `NotFoundError` if missing, `FailedPreconditionError` for a folder."""
    local = _local(path)
    if os.path.isdir(local) and not os.path.islink(local):
        raise errors.FailedPreconditionError(
            None, None, f"{path}; Is a directory. Use tf.io.gfile.rmtree to delete a folder."
        )
    try:
        os.unlink(local)
    except OSError as e:
        _raise_os(e, str(path))


def rmtree(path: Any) -> None:
    """Delete folder `path` and everything in it (or the file `path`)."""
    local = _local(path)
    if not os.path.lexists(local):
        raise errors.NotFoundError(None, None, f"{path} not found")
    try:
        if os.path.isdir(local) and not os.path.islink(local):
            shutil.rmtree(local)
        else:
            os.unlink(local)
    except OSError as e:
        _raise_os(e, str(path))


def _check_target(old: str, new: str, overwrite: bool) -> tuple[str, str]:
    src, dst = _local(old), _local(new)
    if not os.path.exists(src):
        raise errors.NotFoundError(None, None, f"{old}; No such file or directory")
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(
            None, None, f"file already exists: {new}; pass overwrite=True to replace it."
        )
    return src, dst


def copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:
    """Copy file `oldpath` to `newpath` (written atomically); `AlreadyExistsError` if `newpath`
    exists and `overwrite` is False."""
    src, dst = _check_target(oldpath, newpath, overwrite)
    if os.path.isdir(src) or os.path.isdir(dst):
        raise errors.InvalidArgumentError(
            None, None, f"Cannot copy {oldpath} to {newpath}: copy works on files, and one of "
            "them is a directory.")  # fmt: skip
    try:
        with atomic_write(dst, overwrite=True) as tmp:
            shutil.copyfile(src, tmp)
    except OSError as e:
        _raise_os(e, str(newpath))


def rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:
    """Move `oldname` to `newname`; `AlreadyExistsError` if it exists and `overwrite` is False."""
    src, dst = _check_target(oldname, newname, overwrite)
    try:
        os.replace(src, dst)
    except OSError as e:
        _raise_os(e, str(newname))


class FileStatistics:
    """What `stat` returns: `length` (bytes), `mtime_nsec`, `is_directory`."""

    def __init__(self, length: int = 0, mtime_nsec: int = 0, is_directory: bool = False):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory

    def __repr__(self) -> str:
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")  # fmt: skip


def stat(path: Any) -> FileStatistics:
    """Size, modification time (ns) and kind of `path`; `NotFoundError` if it is missing."""
    try:
        st = os.stat(_local(path))
    except OSError as e:
        _raise_os(e, str(path))
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(_local(path)))


def walk(
    top: Any, topdown: bool = True, onerror: Callable[[errors.OpError], Any] | None = None
) -> Iterator[tuple[str, list, list]]:
    """Yield `(folder, subfolder names, file names)` for `top` and each folder below it, parents
    first when `topdown` (then editing the subfolder list prunes the walk). A folder that cannot
    be listed is passed to `onerror` (if given) as a `NotFoundError` and skipped."""
    top = os.fsdecode(os.fspath(top))
    try:
        names = listdir(top)
    except errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    dirs = [n for n in names if isdir(join(top, n))]
    files = [n for n in names if n not in dirs]
    if topdown:
        yield top, dirs, files
    for d in dirs:
        yield from walk(join(top, d), topdown, onerror)
    if not topdown:
        yield top, dirs, files


class GFile:
    """A file of TF's API: `GFile(name, mode="r")` with modes r, rb, w, wb, a, ab.

    Text modes read and write UTF-8 `str`; binary modes `bytes` (either is accepted by write, as
    TF). Positions (`tell`, `seek`) are byte offsets. Mode "w" writes atomically on `close`.
    """

    def __init__(self, name: Any, mode: str = "r"):
        if mode not in _MODES:
            raise errors.InvalidArgumentError(
                None, None, f"GFile({name!r}) got mode {mode!r}; expected one of {list(_MODES)}."
            )
        self._filename = name if isinstance(name, str) else os.fsdecode(os.fspath(name))
        self._path = _local(self._filename)
        self._mode = mode
        self._binary = "b" in mode
        self._handle: Any = None
        self._commit: Any = None  # the atomic_write context of mode "w", while writing

    name = property(lambda self: self._filename, doc="The path this file was opened with.")
    mode = property(lambda self: self._mode, doc="The mode this file was opened with.")

    # --- opening lazily, as TF -------------------------------------------------------------
    def _reader(self) -> Any:
        if self._mode[0] != "r":
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        if self._handle is None:
            try:
                self._handle = open(self._path, "rb")  # noqa: SIM115 - closed by close()
            except OSError as e:
                _raise_os(e, self._filename)
        return self._handle

    def _writer(self) -> Any:
        if self._mode[0] == "r":
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        if self._handle is None:
            try:
                if self._mode[0] == "a":
                    self._handle = open(self._path, "ab")  # noqa: SIM115 - closed by close()
                else:
                    commit = atomic_write(self._path)
                    tmp = commit.__enter__()
                    self._commit = commit
                    self._handle = open(tmp, "wb")  # noqa: SIM115 - closed by close()
            except FileNotFoundError as e:
                _raise_os(e, self._filename)
        return self._handle

    def _out(self, data: bytes) -> str | bytes:
        return data if self._binary else data.decode("utf-8")

    # --- reading ---------------------------------------------------------------------------
    def read(self, n: int = -1) -> str | bytes:
        """`n` bytes (all that remain when `n` is -1)."""
        return self._out(self._reader().read(-1 if n is None else n))

    def readline(self) -> str | bytes:
        """The next line with its newline ("" at the end)."""
        return self._out(self._reader().readline())

    def readlines(self) -> list:
        """All remaining lines."""
        return [self._out(line) for line in self._reader().readlines()]

    def __iter__(self) -> GFile:
        return self

    def __next__(self) -> str | bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None) -> None:
        """Move the read position (`position` is TF's deprecated name for `offset`)."""
        if position is not None:
            offset = position
        self._reader().seek(offset, whence)

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        """The byte offset of the read or write position."""
        if self._handle is None:
            return self._reader().tell() if self._mode[0] == "r" else self._writer().tell()
        return self._handle.tell()

    def size(self) -> int:
        """The length in bytes of the file at `name` (for mode "w": once closed)."""
        return stat(self._filename).length

    # --- writing ---------------------------------------------------------------------------
    def write(self, file_content: str | bytes) -> None:
        """Append `file_content` (str is written as UTF-8)."""
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        self._writer().write(bytes(data))

    def flush(self) -> None:
        """Push written data to the OS (mode "w": to the temporary file, renamed on close)."""
        if self._handle is not None and self._mode[0] != "r":
            self._handle.flush()

    def close(self) -> None:
        """Close the file; for mode "w" move the written file into place. Reads may reopen."""
        self._finish(None)

    def _finish(self, exc: BaseException | None) -> None:
        handle, commit = self._handle, self._commit
        self._handle = self._commit = None
        if handle is None:
            return
        handle.close()
        if commit is not None:
            if exc is None:
                commit.__exit__(None, None, None)
            else:  # discard: the temporary file is removed, the old file stays
                with contextlib.suppress(BaseException):
                    commit.__exit__(type(exc), exc, exc.__traceback__)

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._finish(exc)

    def __del__(self) -> None:
        # TF flushes an unclosed file when it is collected (`GFile(p, "w").write(s)` is common).
        if getattr(self, "_handle", None) is not None:
            self.close()
