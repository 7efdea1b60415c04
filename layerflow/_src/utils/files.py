"""Atomic file writes: a temporary file in the target's folder, fsync, rename.

Every file layerflow writes (weights, checkpoints, downloads, plots) goes through here, so a process
killed at any moment leaves either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator


def default_file_mode() -> int:
    """The mode `open(path, "w")` would give: 0o666 less the process umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(folder: str | os.PathLike) -> None:
    """Make a rename in `folder` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, overwrite: bool = True) -> Iterator[str]:
    """Yield a temporary path in the target's folder; on success fsync it and rename over `path`.

    The new file gets the usual permissions (0o666 less the umask), not mkstemp's 0600.

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "f.bin")
    >>> with atomic_write(target) as tmp, open(tmp, "wb") as f:
    ...     _ = f.write(b"ok")
    >>> with open(target, "rb") as f:
    ...     f.read()
    b'ok'
    """
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(
            f"'{path}' already exists and overwrite=False; pass overwrite=True to replace it "
            "or choose another path."
        )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"Cannot save to '{path}': the folder '{folder}' does not exist. Create it first "
            "(os.makedirs)."
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, default_file_mode())
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            # link() fails if the target appeared meanwhile, so overwrite=False never clobbers.
            os.link(tmp, path)
            os.unlink(tmp)
        fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
