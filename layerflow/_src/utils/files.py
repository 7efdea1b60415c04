"""Atomic file writes: a temporary file in the target's folder, fsync, rename.

Every file layerflow writes (weights, checkpoints, downloads, plots) goes through here, so a process
killed at any moment leaves either the old file or the new one, never a mix.

A killed writer does leave its temporary file behind. Temporary files are named
`.<name>.layerflow-tmp-<pid>-<host>-<random>`, and every write first removes the ones in its
folder that are older than `STALE_AFTER_S` seconds, were made on this host, and whose writer
process is gone, so leftovers never pile up and a live writer's file is never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import tempfile
import time
import zlib
from collections.abc import Iterator

STALE_AFTER_S = 60.0
_TMP_MARK = ".layerflow-tmp-"
_TMP_NAME = re.compile(r"\..+\.layerflow-tmp-([0-9]+)-([0-9a-f]{8})-[a-z0-9_]+")


def _host_tag() -> str:
    # On a shared folder (NFS, a volume mounted in several containers) a pid means something
    # only on the host that wrote it: files from other hosts are never judged by our pids.
    return f"{zlib.crc32(socket.gethostname().encode()):08x}"


def _pid_alive(pid: int) -> bool:
    if os.name != "posix" or pid <= 0:
        return True  # cannot tell safely (os.kill(pid, 0) terminates on Windows): keep it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, owned by someone else
        return True
    return True


def remove_stale_temporaries(
    folder: str | os.PathLike, older_than: float = STALE_AFTER_S
) -> list[str]:
    """Delete temporary files of writers that died in `folder`; return their paths.

    Only regular files named by `atomic_write`, from this host, unmodified for `older_than`
    seconds, whose writer pid is not alive. Anything else is left alone.
    """
    removed: list[str] = []
    host, now = _host_tag(), time.time()
    try:
        entries = os.scandir(folder)
    except OSError:
        return removed
    with entries:
        for entry in entries:
            if _TMP_MARK not in entry.name:
                continue
            m = _TMP_NAME.fullmatch(entry.name)
            if m is None or m.group(2) != host:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < older_than:
                continue
            if _pid_alive(int(m.group(1))):
                continue
            with contextlib.suppress(FileNotFoundError):  # another sweeper was faster
                os.unlink(entry.path)
                removed.append(entry.path)
    return removed


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
    remove_stale_temporaries(folder)
    # The target's name is cut so the temporary name stays within the usual 255-byte limit.
    base = os.path.basename(path).encode()[:180].decode(errors="ignore")
    prefix = f".{base}{_TMP_MARK}{os.getpid()}-{_host_tag()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
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
