"""`tf.distribute.MultiWorkerMirroredStrategy` over MPI: one replica per process.

Launch N processes with `mpiexec -n N python train.py`; every process runs the same program.
Variables created in `scope()` start from rank 0's value (broadcast), every all-reduce and
`strategy.reduce` is an MPI all-reduce, and each global batch is split so that rank r takes
the r-th slice. mpi4py is imported on first use (`pip install "layerflow[mpi]"`).

A job never hangs on a failed, exited or diverging worker: the collectives check that every
worker agrees on the call, dtype and shape before data moves, and a worker that raises or exits
tells the others, which raise `tf.errors.UnavailableError` naming it; see `mpi_collectives` for
the design. Iterating a distributed dataset (as `fit`, `evaluate` and custom loops do) checks at
every step that all workers still have data, so uneven data stops every worker with an error at
the step where they diverge instead of leaving one waiting forever.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.distribute import context, mpi_collectives
from layerflow._src.distribute.context import Entry
from layerflow._src.distribute.distribute_lib import Strategy, StrategyExtended
from layerflow._src.distribute.values import DistributedValues, Mirrored, MirroredVariable
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike

_log = logging.getLogger("layerflow")
# One set of checked collectives (and process hooks) per communicator handle.
_COLLECTIVES: dict[int, mpi_collectives.Collectives] = {}


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise ImportError(
            "MultiWorkerMirroredStrategy needs mpi4py, which is not installed: "
            'pip install "layerflow[mpi]" (mpi4py and mpich), then start one process per '
            "worker with `mpiexec -n 2 python your_script.py`."
        ) from err
    return MPI


def _collectives(comm: Any, mpi: Any) -> mpi_collectives.Collectives:
    key = int(mpi._handleof(comm)) if hasattr(mpi, "_handleof") else id(comm)
    found = _COLLECTIVES.get(key)
    if found is None:
        found = _COLLECTIVES[key] = mpi_collectives.Collectives(comm, mpi)
        if not any(c._previous_hook is not None for c in _COLLECTIVES.values()):
            found.install_hooks()
    return found


class MPIClusterResolver:
    """Where this process sits in the MPI job, with TF's `ClusterResolver` accessors: the
    `task_type` is "worker" and the `task_id` is the MPI rank.

    >>> r = MPIClusterResolver(task_id=1, num_workers=2)
    >>> r.task_type, r.task_id, r.num_accelerators()
    ('worker', 1, {})
    """

    def __init__(self, task_id: int, num_workers: int, rpc_layer: str | None = None) -> None:
        self.task_type = "worker"
        self.task_id = task_id
        self.num_workers = num_workers
        self.rpc_layer = rpc_layer
        self.environment = ""

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto: Any = None
    ) -> dict[str, int]:
        """Accelerators per worker by type, e.g. `{"GPU": 1}`; `{}` on a CPU-only machine."""
        gpus = len(backend.list_logical_devices("GPU"))
        return {"GPU": gpus} if gpus else {}

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        return ""

    def __repr__(self) -> str:
        return (
            f"<MPIClusterResolver task_type={self.task_type!r} task_id={self.task_id} "
            f"of {self.num_workers} workers>"
        )


class MultiWorkerExtended(StrategyExtended):
    def __init__(self, container: Strategy, comm: Any, mpi: Any) -> None:
        self._comm = comm
        self._coll = _collectives(comm, mpi)
        rank, size = comm.Get_rank(), comm.Get_size()
        gpus = backend.list_logical_devices("GPU")
        name = gpus[rank % len(gpus)].name if gpus else "/device:CPU:0"
        super().__init__(container, [backend.parse_device(name)])
        self._first_local_replica = rank
        self._size = size

    @property
    def _num_replicas_in_sync(self) -> int:
        return self._size

    @property
    def worker_devices(self) -> tuple[str, ...]:
        return (self._devices[0].name.replace("/task:0/", f"/task:{self._first_local_replica}/"),)

    def _input_context(self) -> Any:
        from layerflow._src.distribute.input_lib import InputContext

        return InputContext(self._size, self._first_local_replica, self._size)

    # --- variables: rank 0's initial value everywhere ----------------------------------
    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        device = self._devices[0]
        with context.push(Entry(self._container)), backend.device_scope(device):
            primary = next_creator(**kwargs)
        host = np.array(backend.to_host(primary._data), copy=True, order="C")
        self._coll.broadcast(host, mpi_collectives.BROADCAST_VARIABLE)
        primary._write(host)
        return MirroredVariable._mirror(primary, self._devices, self._container)

    # --- collectives ------------------------------------------------------------------------
    def _allreduce_array(self, op: str, array: Any, device: backend.Device) -> Any:
        out = self._coll.allreduce_sum(np.ascontiguousarray(backend.to_host(array)))
        if op == "MEAN":
            out = out / self._size
        return backend.to_device(out, device)

    def _local_sum(self, value: Any) -> Tensor:
        if isinstance(value, MirroredVariable):
            return value.values[0]
        if isinstance(value, DistributedValues):
            parts = value.values
            if len(parts) != 1:
                raise ValueError("MultiWorkerMirroredStrategy holds one replica per process.")
            value = parts[0]
        return value if isinstance(value, TensorLike) else convert_to_tensor(value)

    def _reduce_values(self, op: str, tensors: Any, destination: backend.Device) -> Tensor:
        local = tensors[0]
        return Tensor(self._allreduce_array(op, local._data, destination), destination)

    def _first_replica_value(self, value: Tensor) -> Tensor:
        host = np.array(backend.to_host(value._data), copy=True, order="C")
        self._coll.broadcast(host, mpi_collectives.BROADCAST_FIRST)
        return Tensor(backend.to_device(host, value._device), value._device)

    def _all_reduce(self, op: str, value: Any) -> Any:
        if value is None:
            return None
        local = self._local_sum(value)
        device = self._devices[0]
        return Mirrored([Tensor(self._allreduce_array(op, local._data, device), device)])

    def reduce_to(self, reduce_op: Any, value: Any, destinations: Any, options: Any = None) -> Any:
        from layerflow._src.distribute.reduction import _destination_devices, as_reduce_op

        op = as_reduce_op(reduce_op)
        local = self._local_sum(value)
        target = _destination_devices(destinations)[0]
        return Tensor(self._allreduce_array(op, local._data, target), target)

    def _next_step(self, has_next: bool, step: int) -> bool:
        return self._coll.next_step(has_next, step)

    def _sum_over_workers(self, count: int) -> int:
        return int(self._coll.allreduce_sum(np.asarray([count], np.int64))[0])

    def _reduce(self, op: str, value: Any) -> Any:
        return self.reduce_to(op, value, backend.scoped_device() or backend.cpu_device())

    def _concat(self, parts: Any, axis: int, device: backend.Device) -> Tensor:
        local = parts[0] if isinstance(parts[0], TensorLike) else convert_to_tensor(parts[0])
        host = np.ascontiguousarray(backend.to_host(local._data))
        if host.ndim == 0:
            raise ValueError("gather/all_gather needs tensors of rank >= 1; got a scalar.")
        pieces = self._coll.allgather(host, axis)
        return Tensor(backend.to_device(np.concatenate(pieces, axis=axis), device), device)


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data parallelism across processes (and machines) over MPI.

    Run the same script in every process: `mpiexec -n 2 python train.py`. Each process is one
    replica (`num_replicas_in_sync` is the number of processes) on its GPU, or its CPU.
    `cluster_resolver` tells each process its place (`task_type` "worker", `task_id` = rank).
    """

    def __init__(
        self, cluster_resolver: Any = None, communication_options: Any = None, comm: Any = None
    ) -> None:
        mpi = _mpi()
        comm = comm if comm is not None else mpi.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        if cluster_resolver is not None:
            got = (getattr(cluster_resolver, "task_type", None), cluster_resolver.task_id)
            if got[0] not in ("worker", "chief") or got[1] != rank:
                raise ValueError(
                    f"MultiWorkerMirroredStrategy: the cluster_resolver says this process is "
                    f"task {got[0]!r} #{got[1]}, but it is MPI rank {rank} of {size}; the MPI "
                    "rank decides. Omit cluster_resolver, or pass one whose task_id is the rank."
                )
        self._cluster_resolver = cluster_resolver or MPIClusterResolver(rank, size)
        super().__init__(MultiWorkerExtended(self, comm, mpi))
        _log.info(
            "Using MultiWorkerMirroredStrategy: rank %d of %d on %s",
            comm.Get_rank(),
            comm.Get_size(),
            self._extended._devices[0].name,
        )

    @property
    def cluster_resolver(self) -> Any:
        """Where this process sits in the job (`task_type`, `task_id`, `num_accelerators()`)."""
        return self._cluster_resolver
