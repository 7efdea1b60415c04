"""Optimizer methods of tf_keras's API beyond stepping: `compute_gradients`,
`aggregate_gradients`, `set_weights`, `save_own_variables` / `load_own_variables`.

A mixin of `Optimizer` (kept apart from optimizer.py, the stepping core); it uses only the
optimizer's public surface (`variables`, `name`) and `Variable.assign`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.distribute import context as distribute_context


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    if shape is None:
        shape = np.shape(value)
    return tuple(int(d) for d in shape)


class OptimizerMethods:
    """`compute_gradients`, `aggregate_gradients`, `set_weights`, `save_own_variables`,
    `load_own_variables` (tf_keras 2.11+ semantics), and the deferred-restore side of the
    Trackable protocol: a checkpoint restored into an optimizer that has no slots yet hands
    them their values when the first `apply_gradients` has built them, before that step."""

    @property
    def built(self) -> bool:
        """Whether the slots exist (`build` ran, by hand or from the first apply_gradients)."""
        return bool(getattr(self, "_built", False))

    def _call_after_build(self, fn: Any) -> bool:
        self.__dict__.setdefault("_after_build_fns", []).append(fn)
        return True

    def _run_after_build(self) -> None:
        """Run the restores waiting for the slots (apply_gradients calls it once built)."""
        fns = self.__dict__.get("_after_build_fns")
        if fns and self.built:
            self.__dict__["_after_build_fns"] = []
            for fn in fns:
                fn()

    def compute_gradients(self, loss: Any, var_list: Any, tape: GradientTape | None = None):
        """`[(gradient, variable), ...]` of `loss` for `var_list`; a gradient may be None.

        `loss` is a zero-argument callable, or a tensor recorded by `tape`; `var_list` is a list
        of variables or a callable returning one (called after `loss`, so variables created by
        the loss exist).

        >>> import layerflow as tf
        >>> v = tf.Variable(3.0)
        >>> opt = tf.keras.optimizers.SGD()
        >>> [(float(g), w is v) for g, w in opt.compute_gradients(lambda: v * v, [v])]
        [(6.0, True)]
        """
        if not callable(loss) and tape is None:
            raise ValueError(
                f"{self.name}.compute_gradients: `tape` is required when a tensor loss is "
                f"passed; pass the GradientTape that recorded it, or pass `loss` as a callable. "
                f"Received: loss={loss!r}, tape=None."
            )
        if callable(loss):
            tape = GradientTape() if tape is None else tape
            with tape:
                if not callable(var_list):
                    tape.watch(list(var_list))
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list)
        return list(zip(grads, var_list))

    def aggregate_gradients(self, grads_and_vars: Any) -> list[tuple[Any, Any]]:
        """Sum the gradients across replicas (inside `strategy.run`); outside a replica
        context the pairs come back as they are. Pairs whose gradient is None are dropped, as
        tf_keras does; all of them None is an error.
        """
        pairs = list(grads_and_vars)
        kept = [(g, v) for g, v in pairs if g is not None]
        if pairs and not kept:
            names = [getattr(v, "name", repr(v)) for _, v in pairs]
            raise ValueError(
                f"No gradients provided for any variable: {names}. Check that the loss is "
                "computed from the variables inside the GradientTape."
            )
        entry = distribute_context.top()
        if entry is None or entry.replica_context is None or not kept:
            return kept
        summed = entry.replica_context.all_reduce("SUM", [g for g, _ in kept])
        return list(zip(summed, [v for _, v in kept]))

    def _check_values(self, values: list[Any], what: str) -> None:
        variables = list(self.variables)
        if len(values) != len(variables):
            raise ValueError(
                f"{self.name}.{what}: the optimizer has {len(variables)} variables but "
                f"{len(values)} values were given. Build the optimizer for the same model "
                "variables first (optimizer.build(model.trainable_variables))."
            )
        bad = [
            f"{v.name}: expected shape {_shape(v)}, got {_shape(w)}"
            for v, w in zip(variables, values)
            if _shape(v) != _shape(w)
        ]
        if bad:
            raise ValueError(
                f"{self.name}.{what}: {len(bad)} value(s) do not fit (nothing was assigned): "
                + "; ".join(bad)
            )

    def set_weights(self, weights: Any) -> None:
        """Assign `weights` (arrays or variables, in the order of `optimizer.variables`).

        Every shape is checked before anything is assigned.
        """
        if not getattr(self, "_built", False):
            raise ValueError(
                f"You are calling set_weights() on optimizer '{self.name}' that has not yet "
                "been built. Call optimizer.build(trainable_variables) to create the optimizer "
                "weights before calling set_weights()."
            )
        weights = list(weights)
        self._check_values(weights, "set_weights")
        for variable, weight in zip(self.variables, weights):
            variable.assign(weight)

    def save_own_variables(self, store: Any) -> None:
        """Write the state into `store` under the keys "0", "1", ... (the variables' order)."""
        for i, variable in enumerate(self.variables):
            store[str(i)] = variable.numpy()

    def load_own_variables(self, store: Any) -> None:
        """Read the state written by `save_own_variables`. A count mismatch skips the load with
        a warning (tf_keras); a shape mismatch is an error and assigns nothing."""
        variables = list(self.variables)
        if len(store.keys()) != len(variables):
            msg = (
                f"Skipping variable loading for optimizer '{self.name}', because it has "
                f"{len(variables)} variables whereas the saved optimizer has "
                f"{len(store.keys())} variables."
            )
            if len(variables) <= 1:
                msg += " This is likely because the optimizer has not been called/built yet."
            warnings.warn(msg, stacklevel=2)
            return
        values = [store[str(i)] for i in range(len(variables))]
        self._check_values(values, "load_own_variables")
        for variable, value in zip(variables, values):
            variable.assign(value)
