"""`tf.nn.compute_average_loss` and `tf.nn.scale_regularization_loss`: per-replica losses whose
gradients, summed across replicas, are the gradients of the loss over the whole global batch.

One difference from TF, where TF's result is wrong: without `global_batch_size`, TF divides by
`per_replica_batch_size * num_replicas_in_sync`, which overcounts when the global batch does not
split evenly (a short last batch). layerflow sums the replicas' actual batch sizes (one small
all-reduce), which is the same number for even splits and the right one otherwise, so a custom
loop under `MirroredStrategy` trains exactly like the same loop on one device.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.distribute import distribute_lib
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import compare_ops, core_ops


def _replica_context_or_raise(what: str) -> Any:
    if distribute_lib.has_strategy() and distribute_lib.in_cross_replica_context():
        raise RuntimeError(
            f"You are calling `{what}` in cross replica context, while it was expected to be "
            "called in replica context (inside strategy.run)."
        )
    return distribute_lib.get_replica_context()


def compute_average_loss(
    per_example_loss: Any, sample_weight: Any = None, global_batch_size: Any = None
) -> Any:
    """The sum of `per_example_loss` (times `sample_weight`) over the global batch size.

    >>> import layerflow as tf
    >>> float(compute_average_loss(tf.constant([1.0, 2.0, 6.0])))
    3.0
    >>> float(compute_average_loss(tf.constant([1.0, 2.0]), global_batch_size=4))
    0.75
    """
    loss = convert_to_tensor(per_example_loss)
    if loss.shape.rank == 0:
        raise ValueError(
            "Invalid value passed for `per_example_loss`. Expected a tensor with at least rank "
            f"1, got a scalar {loss!r}. Pass the per-example losses (a Loss with "
            "reduction=NONE) and let compute_average_loss average them."
        )
    dtype = loss.dtype
    if sample_weight is not None:
        weight = compare_ops.cast(convert_to_tensor(sample_weight), dtype)
        loss = loss * weight
    if global_batch_size is None:
        ctx = _replica_context_or_raise("compute_average_loss")
        rows = int(loss.shape[0])
        if ctx is not None and ctx.num_replicas_in_sync > 1:
            total = ctx.all_reduce("SUM", convert_to_tensor(rows))
            rows = int(total)
        global_batch_size = rows
    else:
        if isinstance(global_batch_size, TensorLike):
            if global_batch_size.shape.rank != 0 or not global_batch_size.dtype.is_integer:
                raise TypeError(
                    "global_batch_size must be a scalar integer, got a "
                    f"{global_batch_size.dtype.name} tensor of shape {global_batch_size.shape}."
                )
            global_batch_size = int(global_batch_size)
        elif isinstance(global_batch_size, bool) or not isinstance(global_batch_size, int):
            raise TypeError(
                f"global_batch_size must be a scalar integer, got {global_batch_size!r}."
            )
        if global_batch_size < 0:
            raise ValueError(f"global_batch_size must be non-negative, got {global_batch_size}.")
    total = core_ops.reduce_sum(loss)
    if global_batch_size == 0:
        return compare_ops.zeros_like(total)
    return total / compare_ops.cast(convert_to_tensor(global_batch_size), dtype)


def scale_regularization_loss(regularization_loss: Any) -> Any:
    """The sum of `regularization_loss` divided by the number of replicas, so that summing it
    over the replicas counts it once.

    >>> import layerflow as tf
    >>> float(scale_regularization_loss([tf.constant(1.0), tf.constant(2.0)]))
    3.0
    """
    ctx = _replica_context_or_raise("scale_regularization_loss")
    n = ctx.num_replicas_in_sync if ctx is not None else 1
    return core_ops.reduce_sum(regularization_loss) / n
