"""Tensor, Variable and IndexedSlices methods that need ops, installed at import.

The framework layer defines the classes; methods whose result must be recorded on the tape
live here, one layer up, and are attached with `register_operator` (as the operators are):
TF's deprecated device copies `Tensor.cpu()` / `Tensor.gpu()`, `Variable.sparse_read` and
`Variable.gather_nd`, and the differentiable dense value of an `IndexedSlices`.
"""

from __future__ import annotations

from typing import Any

from layerflow._src import backend
from layerflow._src.autodiff.op import copy_to_device, recording
from layerflow._src.framework.convert import as_ints
from layerflow._src.framework.indexed_slices import IndexedSlices
from layerflow._src.framework.tensor import Tensor, register_operator
from layerflow._src.framework.variables import Variable
from layerflow._src.ops import gather_ops
from layerflow._src.ops.math_ops import reshape
from layerflow._src.ops.segment_ops import _segment_sum


def _cpu(self: Tensor) -> Tensor:
    """A copy of the tensor on the CPU (TF: deprecated, use `tf.identity` under `tf.device`)."""
    return copy_to_device(self, backend.cpu_device())


def _gpu(self: Tensor, gpu_index: int = 0) -> Tensor:
    """A copy of the tensor on GPU `gpu_index`; RuntimeError when there is no such GPU, as TF."""
    gpus = backend.list_logical_devices("GPU")
    if not 0 <= gpu_index < len(gpus):
        raise RuntimeError(f"GPU:{gpu_index} unknown device.")
    return copy_to_device(self, backend.parse_device(gpus[gpu_index].name))


def _sparse_read(self: Variable, indices: Any, name: str | None = None) -> Tensor:
    """Rows of the variable at `indices` (`tf.gather(v, indices)`), differentiable."""
    return gather_ops.gather(self, indices)


def _gather_nd(self: Variable, indices: Any, name: str | None = None) -> Tensor:
    """`tf.gather_nd(v, indices)`, differentiable."""
    return gather_ops.gather_nd(self, indices)


def _densify(values: Tensor, indices: Tensor, dense_shape: Tensor) -> Tensor:
    """`unsorted_segment_sum(values, indices, dense_shape[0])` reshaped to `dense_shape`:
    duplicate indices add up, and gradients flow back to `values`."""
    shape = as_ints(dense_shape, "dense_shape", "IndexedSlices")
    if not shape:
        raise ValueError("IndexedSlices: dense_shape must have at least one dimension, got [].")
    rows = _segment_sum(values, indices, shape[0])
    return rows if tuple(rows.shape) == shape else reshape(rows, shape)


_plain_read = Variable.read_value


def _read_value(self: Variable) -> Tensor:
    """`Variable.read_value`/`value`: a snapshot of the value; under a recording tape, a read
    the tape sees (TF's ReadVariableOp is differentiable), so `tf.convert_to_tensor(v)`, `v.value()`
    and `v.read_value()` pass gradients to `v`."""
    if recording():
        from layerflow._src.ops.array_ops import identity

        return identity(self)
    return _plain_read(self)


register_operator("read_value", _read_value, Variable)
register_operator("value", _read_value, Variable)
register_operator("cpu", _cpu, Tensor)
register_operator("gpu", _gpu, Tensor)
register_operator("sparse_read", _sparse_read, Variable)
register_operator("gather_nd", _gather_nd, Variable)
IndexedSlices._densify = staticmethod(_densify)
