"""How per-replica values combine: `tf.distribute.ReduceOp`, the checks every reduction makes
(one shape and dtype across replicas, never broadcasting), and reducing onto destinations."""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Any

from layerflow._src import backend
from layerflow._src.distribute.values import DistributedValues, Mirrored, MirroredVariable
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import VariableAggregation


class ReduceOp(enum.Enum):
    """How per-replica values combine: `SUM` or `MEAN` (`tf.distribute.ReduceOp`)."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation: int) -> ReduceOp:
        mapping = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}
        if aggregation not in mapping:
            raise ValueError(
                f"Could not convert from VariableAggregation {aggregation} to ReduceOp."
            )
        return mapping[aggregation]


def as_reduce_op(reduce_op: Any) -> str:
    """ "SUM" or "MEAN" from a ReduceOp or its name in any case."""
    if isinstance(reduce_op, ReduceOp):
        return reduce_op.value
    if isinstance(reduce_op, str) and reduce_op.upper() in ("SUM", "MEAN"):
        return reduce_op.upper()
    raise ValueError(
        f"reduce_op must be tf.distribute.ReduceOp.SUM or tf.distribute.ReduceOp.MEAN, got "
        f"{reduce_op!r}."
    )


def reduce_to(
    cross_ops: Any,  # a CrossDeviceOps (which imports this module: no import back)
    reduce_op: Any,
    value: Any,
    destinations: Any,
    num_replicas: int | None = None,
) -> Any:
    """Reduce `value` with `cross_ops` onto `destinations`; a Tensor for one destination device,
    a Mirrored for several."""
    op = as_reduce_op(reduce_op)
    targets = _destination_devices(destinations)
    if isinstance(value, MirroredVariable):
        parts: list[Any] = list(value.values)
    elif isinstance(value, DistributedValues):
        parts = [v if isinstance(v, TensorLike) else convert_to_tensor(v) for v in value.values]
    else:
        if op == "SUM" and (num_replicas or 1) != 1:
            raise ValueError(
                f"A non-DistributedValues value {value!r} cannot be reduced with the given "
                "reduce op ReduceOp.SUM: it is not per-replica, so the sum over replicas is "
                "ambiguous. Produce it inside strategy.run, or use ReduceOp.MEAN."
            )
        parts = [value if isinstance(value, TensorLike) else convert_to_tensor(value)]
    check_same_spec(parts, f"Reducing ({op})")
    outs = cross_ops.reduce_arrays(
        op, [p._data for p in parts], [p._device for p in parts], targets
    )
    tensors = [Tensor(a, d) for a, d in zip(outs, targets)]
    return tensors[0] if len(tensors) == 1 else Mirrored(tensors)


def check_same_spec(parts: Sequence[Any], what: str) -> None:
    """Raise unless every replica's tensor has one shape and one dtype: a reduction must never
    broadcast one replica's value against another's."""
    first = parts[0]._data
    for i, p in enumerate(parts[1:], 1):
        if p._data.shape != first.shape or p._data.dtype != first.dtype:
            first = parts[0]
            specs = ", ".join(
                f"replica {k}: {q.dtype.name} {tuple(q.shape)}" for k, q in enumerate(parts)
            )
            raise ValueError(
                f"{what}: every replica must hand in a tensor of the same shape and dtype, but "
                f"replica 0 has {first.dtype.name} {tuple(first.shape)} and replica {i} has "
                f"{p.dtype.name} {tuple(p.shape)} ({specs}). Reduce each replica's value to a "
                "common shape first (e.g. with strategy.reduce(..., axis=0) or "
                "tf.reduce_sum inside strategy.run)."
            )


def _destination_devices(destinations: Any) -> list[backend.Device]:
    if isinstance(destinations, MirroredVariable):
        return list(destinations._devices)
    if isinstance(destinations, DistributedValues):
        return [v._device for v in destinations.values]
    if isinstance(destinations, TensorLike):
        return [destinations._device]
    if isinstance(destinations, list | tuple):
        return [resolve_device(d, "destinations") for d in destinations]
    return [resolve_device(destinations, "destinations")]


_KIND_INDEX = re.compile(r"(?i)(cpu|gpu)(?::(\d+))?$")


def resolve_device(spec: Any, who: str) -> backend.Device:
    """A logical device that must exist (no soft placement: a strategy needs real devices)."""
    if isinstance(spec, backend.Device):
        return spec
    if spec is None:
        return backend.current_device()
    name = spec.name if hasattr(spec, "name") and not isinstance(spec, str) else spec
    device = backend.parse_device(name)
    m = _KIND_INDEX.search(str(name).strip())
    if (
        device is None
        or m is None
        or (device.kind != m.group(1).upper() or device.index != int(m.group(2) or 0))
    ):
        names = ", ".join(d.name for d in backend.list_logical_devices())
        raise ValueError(
            f"{who}: device {spec!r} does not exist. The logical devices are: {names}. "
            "Split a physical device with tf.config.set_logical_device_configuration to get more."
        )
    return device
