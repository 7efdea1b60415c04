"""`tf.distribute.MultiWorkerMirroredStrategy` over MPI: one replica per process.

Launch N processes with `mpiexec -n N python train.py`; every process runs the same program.
Variables created in `scope()` start from rank 0's value (broadcast), every all-reduce and
`strategy.reduce` is an MPI all-reduce, and each global batch is split so that rank r takes
the r-th slice. mpi4py is imported on first use (`pip install "layerflow[mpi]"`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.distribute import context
from layerflow._src.distribute.context import Entry
from layerflow._src.distribute.distribute_lib import Strategy, StrategyExtended
from layerflow._src.distribute.values import DistributedValues, Mirrored, MirroredVariable
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike

_log = logging.getLogger("layerflow")


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


class MultiWorkerExtended(StrategyExtended):
    def __init__(self, container: Strategy, comm: Any) -> None:
        self._comm = comm
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
        host = np.ascontiguousarray(backend.to_host(primary._data))
        self._comm.Bcast(host, root=0)
        primary._data[...] = backend.to_device(host, device)
        return MirroredVariable._mirror(primary, self._devices, self._container)

    # --- collectives ------------------------------------------------------------------------
    def _allreduce_array(self, op: str, array: Any, device: backend.Device) -> Any:
        host = np.ascontiguousarray(backend.to_host(array))
        out = np.empty_like(host)
        self._comm.Allreduce(host, out, op=_mpi().SUM)
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
        host = np.ascontiguousarray(backend.to_host(value._data))
        self._comm.Bcast(host, root=0)
        return Tensor(backend.to_device(host, value._device), value._device)

    def _all_reduce(self, op: str, value: Any) -> Any:
        if value is None:
            return None
        local = self._local_sum(value)
        device = self._devices[0]
        return Mirrored([Tensor(self._allreduce_array(op, local._data, device), device)])

    def reduce_to(self, reduce_op: Any, value: Any, destinations: Any, options: Any = None) -> Any:
        from layerflow._src.distribute.distribute_lib import _destination_devices, as_reduce_op

        op = as_reduce_op(reduce_op)
        local = self._local_sum(value)
        target = _destination_devices(destinations)[0]
        return Tensor(self._allreduce_array(op, local._data, target), target)

    def _reduce(self, op: str, value: Any) -> Any:
        return self.reduce_to(op, value, backend.scoped_device() or backend.cpu_device())

    def _concat(self, parts: Any, axis: int, device: backend.Device) -> Tensor:
        local = parts[0] if isinstance(parts[0], TensorLike) else convert_to_tensor(parts[0])
        pieces = self._comm.allgather(backend.to_host(local._data))
        return Tensor(backend.to_device(np.concatenate(pieces, axis=axis), device), device)


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data parallelism across processes (and machines) over MPI.

    Run the same script in every process: `mpiexec -n 2 python train.py`. Each process is one
    replica (`num_replicas_in_sync` is the number of processes) on its GPU, or its CPU.
    """

    def __init__(
        self, cluster_resolver: Any = None, communication_options: Any = None, comm: Any = None
    ) -> None:
        mpi = _mpi()
        comm = comm if comm is not None else mpi.COMM_WORLD
        super().__init__(MultiWorkerExtended(self, comm))
        _log.info(
            "Using MultiWorkerMirroredStrategy: rank %d of %d on %s",
            comm.Get_rank(),
            comm.Get_size(),
            self._extended._devices[0].name,
        )

    @property
    def cluster_resolver(self) -> Any:
        return None
