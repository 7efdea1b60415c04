"""One synchronous data-parallel training step, for custom loops and for `Model.fit`.

Every replica computes its loss and gradients on its slice of the batch; the gradients are
summed across replicas (all-reduce), and the update is applied once, in cross-replica context,
after which every copy of every mirrored variable equals the primary again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.distribute.distribute_lib import Strategy, get_replica_context
from layerflow._src.distribute.values import MirroredVariable, select_replica


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
    replica's loss is divided by `num_replicas_in_sync` before differentiating, as TF's
    `scale_loss_for_distribution` does, so the summed gradient is the gradient of the mean loss
    (exactly the full-batch gradient when the replicas get equal slices). `apply_gradients`
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

    def apply(strategy: Strategy, grouped: Any) -> None:
        grads = select_replica(0, grouped)
        pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if pairs:
            apply_gradients(pairs)
        # The optimizer may have written primaries in place (v._data -= ...): re-sync copies.
        for v in variables:
            if isinstance(v, MirroredVariable):
                v._broadcast_from_primary()

    def replica_step(*args: Any) -> Any:
        with GradientTape() as tape:
            out = loss_fn(*args)
            loss, aux = out if isinstance(out, tuple) else (out, None)
            scaled = loss / n if n > 1 else loss
        grads = tape.gradient(scaled, variables)
        ctx = get_replica_context()
        grads = ctx.all_reduce("SUM", list(grads))
        ctx.merge_call(apply, args=(grads,))
        return scaled, aux

    args = inputs if isinstance(inputs, tuple) else (inputs,)
    scaled, aux = strategy.run(replica_step, args=args)
    loss = strategy.reduce("SUM", scaled, axis=None)
    return loss if aux is None else (loss, aux)
