"""Tensor methods that need ops: TF's deprecated device copies `Tensor.cpu()` / `Tensor.gpu()`.

They are installed on Tensor with `register_operator` (as the operators are), because a copy
to another device is recorded on the tape (`copy_to_device`), which lives above `framework/`.
"""

from __future__ import annotations

from layerflow._src import backend
from layerflow._src.autodiff.op import copy_to_device
from layerflow._src.framework.tensor import Tensor, register_operator


def _cpu(self: Tensor) -> Tensor:
    """A copy of the tensor on the CPU (TF: deprecated, use `tf.identity` under `tf.device`)."""
    return copy_to_device(self, backend.cpu_device())


def _gpu(self: Tensor, gpu_index: int = 0) -> Tensor:
    """A copy of the tensor on GPU `gpu_index`; RuntimeError when there is no such GPU, as TF."""
    gpus = backend.list_logical_devices("GPU")
    if not 0 <= gpu_index < len(gpus):
        raise RuntimeError(f"GPU:{gpu_index} unknown device.")
    return copy_to_device(self, backend.parse_device(gpus[gpu_index].name))


register_operator("cpu", _cpu, Tensor)
register_operator("gpu", _gpu, Tensor)
