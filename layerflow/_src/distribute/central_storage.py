"""`tf.distribute.experimental.CentralStorageStrategy`: one copy of every variable, on one
device; the computation replicated on several (MirroredStrategy's replica threads).

Each replica reads the variables from the parameter device; gradients are all-reduced and
applied once, to the single copy (`optimizer.apply_gradients` inside `strategy.run` does it,
as under MirroredStrategy), so training gives the same numbers as MirroredStrategy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.distribute import context
from layerflow._src.distribute.context import Entry
from layerflow._src.distribute.cross_device_ops import ReductionToOneDevice
from layerflow._src.distribute.distribute_lib import Strategy, resolve_device
from layerflow._src.distribute.mirrored import MirroredExtended
from layerflow._src.distribute.values import MirroredVariable

_log = logging.getLogger("layerflow")


class AggregatingVariable(MirroredVariable):
    """A variable of CentralStorageStrategy: its one copy lives on the parameter device and
    every replica reads it there; writes inside `strategy.run` are aggregated first (its
    `aggregation`), as TF's `AggregatingVariable` does."""

    @property
    def _data(self) -> Any:  # type: ignore[override]
        return self._copies[0]

    @_data.setter
    def _data(self, array: Any) -> None:
        self._copies[0] = array

    @property
    def _device(self) -> backend.Device:  # type: ignore[override]
        return self._devices[0]

    def _update(self, fn: Callable[..., Any], *args: Any) -> AggregatingVariable:
        # The all-reduced arguments live on the first compute device: bring them over.
        device = self._devices[0]
        moved = [
            backend.to_device(a, device)
            if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, np.generic)
            else a
            for a in args
        ]
        super()._update(fn, *moved)
        return self

    def __repr__(self) -> str:
        return (
            f"<AggregatingVariable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
            f"device={self._devices[0].name}>"
        )


class CentralStorageExtended(MirroredExtended):
    def __init__(
        self,
        container: Strategy,
        compute_devices: Sequence[backend.Device],
        parameter_device: backend.Device,
    ) -> None:
        super().__init__(container, compute_devices, ReductionToOneDevice(parameter_device.name))
        self._parameter_device = parameter_device

    @property
    def parameter_devices(self) -> tuple[str, ...]:
        return (self._parameter_device.name,)

    def _make_mirrored(self, next_creator: Callable[..., Any], kwargs: dict) -> Any:
        device = self._parameter_device
        with context.push(Entry(self._container)), backend.device_scope(device):
            primary = next_creator(**kwargs)
        variable = AggregatingVariable._mirror(primary, [device], self._container)
        self._created[id(variable)] = variable
        return variable

    def variable_created_in_scope(self, v: Any) -> bool:
        return isinstance(v, AggregatingVariable) and v._strategy is self._container


class CentralStorageStrategy(Strategy):
    """Variables on one device (`parameter_device`), computation mirrored on
    `compute_devices` (all GPUs, or the CPU, by default).

    >>> s = CentralStorageStrategy(["/cpu:0"])
    >>> s.extended.parameter_devices
    ('/job:localhost/replica:0/task:0/device:CPU:0',)
    """

    def __init__(
        self, compute_devices: Sequence[str] | None = None, parameter_device: str | None = None
    ) -> None:
        if compute_devices is None:
            gpus = backend.list_logical_devices("GPU")
            names = [d.name for d in gpus] or ["/device:CPU:0"]
        else:
            if isinstance(compute_devices, str):
                raise TypeError(
                    "CentralStorageStrategy(compute_devices=...) takes a list of device names, "
                    f"got the string {compute_devices!r}; write [{compute_devices!r}]."
                )
            names = list(compute_devices)
        if not names:
            raise ValueError("CentralStorageStrategy: `compute_devices` cannot be empty.")
        resolved = [resolve_device(d, "CentralStorageStrategy") for d in names]
        if len({d.name for d in resolved}) != len(resolved):
            raise ValueError(
                f"No duplicates allowed in `compute_devices`: {tuple(d.name for d in resolved)}."
            )
        if parameter_device is None:
            # TF: the only compute device, or the CPU when there are several.
            param = resolved[0] if len(resolved) == 1 else backend.cpu_device()
        else:
            param = resolve_device(parameter_device, "CentralStorageStrategy")
        super().__init__(CentralStorageExtended(self, resolved, param))
        _log.info(
            "CentralStorageStrategy: variables on %s, compute on %r",
            param.name,
            tuple(d.name for d in resolved),
        )
