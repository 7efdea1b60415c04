"""One synchronous data-parallel training step, for custom loops and for `Model.fit`.

Every replica computes its loss and gradients on its slice of the batch; the gradients are
summed across replicas (all-reduce), and the update is applied once, in cross-replica context;
it writes through `Variable.assign*`/`Variable._update`, which keep every copy of a mirrored
variable equal, so nothing here re-synchronizes copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.distribute.distribute_lib import Strategy, get_replica_context
from layerflow._src.distribute.values import select_replica
from layerflow._src.ops import compare_ops
from layerflow._src.utils import nest


def distributed_train_step(
    strategy: Strategy,
    loss_fn: Callable[..., Any],
    variables: Sequence[Any],
    apply_gradients: Callable[[list[tuple[Any, Any]]], Any],
    inputs: Any,
) -> Any:
    """Run one training step of `loss_fn` on `inputs` under `strategy`; return the loss.

    `loss_fn(*replica_inputs)` returns the replica's loss as a mean over its own examples (what
    Keras losses return), or `(loss, aux)`; `aux` comes back per replica (for metrics). Each
    replica's loss is weighted by its share of the global batch (its rows over the rows of all
    replicas) before differentiating, so the summed gradient is the gradient of the mean loss
    over the whole batch, also when the batch does not split evenly (a short last batch): TF's
    `scale_loss_for_distribution` divides by `num_replicas_in_sync` instead, which is the same
    only for even splits. A replica that got no rows contributes zeros. `apply_gradients`
    (for example `optimizer.apply_gradients`) is called once per step with `(grad, variable)`
    pairs; unconnected variables (gradient None) are left out. `inputs` is one element of
    `strategy.experimental_distribute_dataset(...)`; a tuple is spread over `loss_fn`'s
    arguments.

    >>> import layerflow as tf
    >>> w = tf.Variable(2.0)
    >>> step = distributed_train_step(tf.distribute.get_strategy(), lambda x: (w * x) ** 2, [w],
    ...                               lambda gv: [v.assign_sub(0.1 * g) for g, v in gv], 1.0)
    >>> float(step), round(float(w), 4)
    (4.0, 1.6)
    """
    n = strategy.num_replicas_in_sync
    variables = list(variables)
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    shares = _shares(strategy, args) if n > 1 else [1.0]

    def apply(strategy: Strategy, grouped: Any) -> None:
        grads = select_replica(0, grouped)
        pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if pairs:
            apply_gradients(pairs)

    def replica_step(*args: Any) -> Any:
        ctx = get_replica_context()
        share = shares[ctx._local_index]
        with GradientTape() as tape:
            out = loss_fn(*args)
            loss, aux = out if isinstance(out, tuple) else (out, None)
            scaled = loss * share if share != 1.0 else loss
        if share == 0.0:
            # No rows here: the loss of an empty slice may be NaN, and 0 * NaN is not 0.
            grads = [compare_ops.zeros_like(v) for v in variables]
            scaled = compare_ops.zeros_like(loss)
        else:
            grads = tape.gradient(scaled, variables)
        grads = ctx.all_reduce("SUM", list(grads))
        ctx.merge_call(apply, args=(grads,))
        return scaled, aux

    scaled, aux = strategy.run(replica_step, args=args)
    loss = strategy.reduce("SUM", scaled, axis=None)
    return loss if aux is None else (loss, aux)


def _rows(structure: Any) -> int | None:
    """The batch size of one replica's inputs: the first axis of the first non-scalar leaf."""
    for leaf in nest.flatten(structure):
        shape = getattr(leaf, "shape", None)
        if shape is None:
            shape = np.shape(leaf)
        if len(shape):
            return int(shape[0])
    return None


def _shares(strategy: Strategy, args: tuple) -> list[float]:
    """Each local replica's fraction of the rows of the whole (global) batch."""
    local = len(strategy.extended._devices)
    rows = [_rows(select_replica(i, args)) for i in range(local)]
    if any(r is None for r in rows):
        return [1.0 / strategy.num_replicas_in_sync] * local
    total = strategy.extended._sum_over_workers(sum(rows))
    if total == 0:
        return [1.0 / strategy.num_replicas_in_sync] * local
    return [r / total for r in rows]
