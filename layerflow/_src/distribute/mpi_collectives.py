"""Collectives between MPI processes that check their inputs and never hang on a dead peer.

Design (the choice issue 8 left open: non-blocking collectives watched for failure notices,
plus an excepthook that ends the job with MPI_Abort):

- **Agreement first.** Before its data moves, every collective exchanges a fixed-size integer
  header (what the call is, dtype, rank, shape, byte size). Workers that call different
  collectives, or hand in tensors that disagree, all raise the same `ValueError` naming both
  sides, instead of MPICH returning garbage (same byte size) or aborting with its own message.
  Headers are plain integers: nothing a peer sends is ever unpickled.
- **No blocking waits.** Each collective is non-blocking (`Iallgather`, `Iallreduce`, ...) and
  is waited for in a loop that also watches a control communicator (a duplicate of the job's)
  for notices from other workers.
- **A failing worker says so.** `sys.excepthook` prints the traceback, sends every peer
  "rank r failed: <error>", waits up to `ABORT_GRACE_S` seconds for each peer to answer (so
  every worker prints its own error), then calls `MPI_Abort`, which stops every process of the
  job, also one busy in a long computation that would never reach a collective.
- **An exiting worker says so.** An `atexit` handler sends "rank r exited after k
  collective call(s)" (end of the script, `sys.exit`). A worker that dies without Python's help
  (`os._exit`, a signal) is caught by `mpiexec` (hydra), which stops the job.
- A worker waiting in a collective that has heard such a notice, and whose collective does not
  complete within `GRACE_S` seconds, raises `tf.errors.UnavailableError` naming the rank that
  failed or left and the collective it was waiting in. The grace period lets a collective the
  peer completed before it left finish normally.

Failures before the strategy exists (an error in the first lines of the script) are not covered:
run the script with `mpiexec -n N python -m mpi4py train.py` for those.
"""

from __future__ import annotations

import atexit
import sys
import time
from typing import Any

import numpy as np

from layerflow._src.framework import errors

GRACE_S = 1.0
OUTPUT_RELAY_S = 0.3
ABORT_GRACE_S = 5.0
_NOTICE_TAG = 7351
_NOTICE_BYTES = 2048
MAX_RANK = 16

ALL_REDUCE, BROADCAST_VARIABLE, BROADCAST_FIRST, ALL_GATHER, NEXT_STEP = 1, 2, 3, 4, 5
_KIND_NAMES = {
    ALL_REDUCE: "all-reduce",
    BROADCAST_VARIABLE: "broadcast of a new variable's initial value",
    BROADCAST_FIRST: "broadcast of the first replica's value",
    ALL_GATHER: "all-gather",
    NEXT_STEP: "end-of-data check of a distributed dataset",
}
_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64", "complex64", "complex128")  # fmt: skip
# Header layout: kind, dtype index, ndim, nbytes, a small value, then up to MAX_RANK dims.
_KIND, _DTYPE, _NDIM, _NBYTES, _VALUE, _DIMS = 0, 1, 2, 3, 4, 5
_HEADER = _DIMS + MAX_RANK


def _describe(row: np.ndarray) -> str:
    kind = _KIND_NAMES.get(int(row[_KIND]), f"unknown collective {int(row[_KIND])}")
    if int(row[_KIND]) == NEXT_STEP:
        return kind
    d = int(row[_DTYPE])
    dtype = _DTYPES[d] if 0 <= d < len(_DTYPES) else "an unknown dtype"
    ndim = int(row[_NDIM])
    dims = [int(x) for x in row[_DIMS : _DIMS + min(ndim, MAX_RANK)]]
    shape = "(" + ", ".join(map(str, dims)) + ("," if ndim == 1 else "")
    shape += ", ...)" if ndim > MAX_RANK else ")"
    return f"{kind} of {dtype} {shape} ({int(row[_NBYTES])} bytes)"


class Collectives:
    """Checked, non-blocking collectives on `comm`; one per communicator and process."""

    def __init__(self, comm: Any, mpi: Any) -> None:
        self.comm = comm
        self.mpi = mpi
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.ctl = comm.Dup()
        self.count = 0
        self.notices: dict[int, str] = {}
        self._announced = False
        self._pending: list[Any] = []
        self._previous_hook: Any = None

    # --- the collectives ------------------------------------------------------------------
    def allreduce_sum(self, host: np.ndarray) -> np.ndarray:
        self._agree(ALL_REDUCE, host)
        out = np.empty_like(host)
        self._wait(self.comm.Iallreduce(host, out, op=self.mpi.SUM), ALL_REDUCE)
        return out

    def broadcast(self, host: np.ndarray, kind: int) -> np.ndarray:
        """Rank 0's `host` in every process (`host` is overwritten in place and returned)."""
        self._agree(kind, host)
        self._wait(self.comm.Ibcast(host, root=0), kind)
        return host

    def allgather(self, host: np.ndarray, axis: int) -> list[np.ndarray]:
        """Every worker's `host`, in rank order; shapes may differ only along `axis`."""
        rows = self._agree(ALL_GATHER, host, value=axis)
        shapes = [tuple(int(x) for x in r[_DIMS : _DIMS + int(r[_NDIM])]) for r in rows]
        counts = [int(r[_NBYTES]) for r in rows]
        flat = np.empty(sum(counts), np.uint8)
        src = np.ascontiguousarray(host).view(np.uint8).reshape(-1)
        displs = list(np.cumsum([0] + counts[:-1]))
        recv = [flat, counts, displs, self.mpi.BYTE]
        self._wait(self.comm.Iallgatherv([src, self.mpi.BYTE], recv), ALL_GATHER)
        return [
            flat[o : o + c].view(host.dtype).reshape(s) for o, c, s in zip(displs, counts, shapes)
        ]

    def next_step(self, has_next: bool, step: int) -> bool:
        """Whether every worker has another batch; raises when some have and some have not."""
        rows = self._agree(NEXT_STEP, None, value=int(has_next))
        flags = [bool(r[_VALUE]) for r in rows]
        if all(flags) or not any(flags):
            return flags[0]
        done = [r for r, f in enumerate(flags) if not f]
        more = [r for r, f in enumerate(flags) if f]
        raise ValueError(
            f"MultiWorkerMirroredStrategy: at step {step} of a distributed dataset, worker "
            f"rank(s) {done} ran out of data while rank(s) {more} have another batch. Every "
            "worker must run the same number of steps (TensorFlow's contract for multi-worker "
            "training): give every worker the same dataset, of which each takes its share of "
            "every global batch, or shard it evenly (or repeat it) and pass steps_per_epoch, "
            "so that no worker runs out before the others."
        )

    # --- agreement ------------------------------------------------------------------------
    def _header(self, kind: int, host: np.ndarray | None, value: int) -> np.ndarray:
        row = np.zeros(_HEADER, np.int64)
        row[_KIND], row[_VALUE] = kind, value
        if host is not None:
            name = host.dtype.name
            row[_DTYPE] = _DTYPES.index(name) if name in _DTYPES else -1
            row[_NDIM], row[_NBYTES] = host.ndim, host.nbytes
            dims = host.shape[:MAX_RANK]
            row[_DIMS : _DIMS + len(dims)] = dims
        return row

    def _agree(self, kind: int, host: np.ndarray | None, value: int = 0) -> np.ndarray:
        self.count += 1
        mine = self._header(kind, host, value)
        rows = np.empty((self.size, _HEADER), np.int64)
        self._wait(self.comm.Iallgather(mine, rows), kind)
        for r in range(self.size):
            if not _compatible(rows[0], rows[r], kind):
                raise ValueError(
                    f"MultiWorkerMirroredStrategy: the workers disagree about collective "
                    f"#{self.count}: rank 0 calls {_describe(rows[0])}, but rank {r} calls "
                    f"{_describe(rows[r])}. Every worker must make the same collective calls, "
                    "in the same order, with tensors of the same dtype and shape (run the same "
                    "program on the same kind of data in every worker)."
                )
        return rows

    # --- waiting, and hearing about failures -----------------------------------------------
    def _wait(self, request: Any, kind: int) -> None:
        if request.Test():
            return
        pause = 0.0
        heard = None
        while not request.Test():
            self._poll_notices()
            if self.notices:
                heard = heard or time.monotonic()
                if time.monotonic() - heard > GRACE_S:
                    self._give_up(kind)
            time.sleep(pause)
            pause = min(pause * 2 or 1e-5, 2e-3)

    def _give_up(self, kind: int) -> None:
        about = "; ".join(self.notices[r] for r in sorted(self.notices))
        ranks = sorted(self.notices)
        raise errors.UnavailableError(
            None,
            None,
            f"MultiWorkerMirroredStrategy: worker rank(s) {ranks} stopped ({about}) while "
            f"rank {self.rank} waits in collective #{self.count} ({_KIND_NAMES[kind]}), which "
            "can no longer complete. Look at the failed worker's error above; every worker "
            "must make the same collective calls (the same number of steps).",
        )

    def _poll_notices(self) -> None:
        status = self.mpi.Status()
        while self.ctl.Iprobe(source=self.mpi.ANY_SOURCE, tag=_NOTICE_TAG, status=status):
            buf = np.empty(_NOTICE_BYTES, np.uint8)
            self.ctl.Recv([buf, self.mpi.BYTE], source=status.Get_source(), tag=_NOTICE_TAG)
            n = status.Get_count(self.mpi.BYTE)
            text = bytes(buf[:n]).decode("utf-8", "replace")
            self.notices[status.Get_source()] = text

    def announce(self, text: str) -> None:
        """Tell every peer (once) that this worker failed or is leaving."""
        if self._announced:
            return
        self._announced = True
        data = np.frombuffer(text.encode("utf-8")[:_NOTICE_BYTES], np.uint8).copy()
        self._pending = [
            (data, self.ctl.Isend([data, self.mpi.BYTE], dest=r, tag=_NOTICE_TAG))
            for r in range(self.size)
            if r != self.rank
        ]
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and not all(req.Test() for _, req in self._pending):
            time.sleep(1e-3)

    # --- process hooks ----------------------------------------------------------------------
    def install_hooks(self) -> None:
        self._previous_hook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._at_exit)

    def _excepthook(self, exc_type: Any, exc: Any, tb: Any) -> None:
        previous = self._previous_hook or sys.__excepthook__
        previous(exc_type, exc, tb)
        summary = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
        self.announce(f"rank {self.rank} failed: {summary}")
        deadline = time.monotonic() + ABORT_GRACE_S
        while len(self.notices) < self.size - 1 and time.monotonic() < deadline:
            self._poll_notices()
            time.sleep(1e-3)
        print(
            f"layerflow: rank {self.rank} of {self.size} failed ({summary}); stopping every "
            "worker of the job with MPI_Abort.",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        # mpiexec relays each process's output through its own proxy, which MPI_Abort tears
        # down at once: give it a moment to forward the error text above.
        time.sleep(OUTPUT_RELAY_S)
        self.comm.Abort(1)

    def _at_exit(self) -> None:
        if not self._announced:
            self.announce(f"rank {self.rank} exited after {self.count} collective call(s)")


def _compatible(a: np.ndarray, b: np.ndarray, kind: int) -> bool:
    if a[_KIND] != b[_KIND]:
        return False
    if kind == NEXT_STEP:
        return True
    if kind != ALL_GATHER:
        return bool((a == b).all())
    axis = int(a[_VALUE])
    ndim = int(a[_NDIM])
    if b[_VALUE] != a[_VALUE] or b[_DTYPE] != a[_DTYPE] or b[_NDIM] != ndim or ndim == 0:
        return False
    keep = [_DIMS + k for k in range(min(ndim, MAX_RANK)) if k != axis % ndim]
    return bool((a[keep] == b[keep]).all())
