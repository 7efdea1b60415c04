"""`tf.keras.models.experimental.SharpnessAwareMinimization`: the SAM training step.

As tf_keras: for each sub-batch (the batch split into `num_batch_splits`), the gradient `g` of
the compiled loss at the weights `w` gives the step `e = rho * g / ||g||` (the global 2-norm of
every gradient); the gradient of the loss at `w + e` is that sub-batch's gradient, and `w` is put
back. The sub-batches' gradients are summed and applied once by the optimizer; the compiled
metrics see the whole batch's first-pass predictions.
"""

from __future__ import annotations

import copy
from typing import Any

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.keras import serialization
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.training import data_adapter as da
from layerflow._src.ops import array_ops, core_ops, reduce_ops


class SharpnessAwareMinimization(Model):
    """Sharpness-aware minimization (Foret et al., 2020) of a wrapped `model`.

    `rho`: the size of the weight perturbation (0.05); `num_batch_splits`: split each batch into
    that many sub-batches, each perturbed by its own gradient (None: no split).

    >>> import layerflow as tf, numpy as np
    >>> inner = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    >>> sam = tf.keras.models.experimental.SharpnessAwareMinimization(inner, rho=0.05)
    >>> sam.compile("sgd", "mse")
    >>> h = sam.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    """

    def __init__(self, model: Any, rho: float = 0.05, num_batch_splits: int | None = None,
                 name: str | None = None) -> None:  # fmt: skip
        if not isinstance(model, Model):
            raise TypeError(
                f"SharpnessAwareMinimization wraps a tf.keras.Model, got {type(model).__name__}; "
                "pass the model to train (e.g. a tf.keras.Sequential)."
            )
        if num_batch_splits is not None and (
            isinstance(num_batch_splits, bool) or int(num_batch_splits) != num_batch_splits
            or num_batch_splits < 1
        ):  # fmt: skip
            raise ValueError(
                f"SharpnessAwareMinimization: num_batch_splits must be a positive integer or "
                f"None, got {num_batch_splits!r}."
            )
        super().__init__(name=name)
        self.model = model
        self.rho = rho
        self.num_batch_splits = num_batch_splits

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """The wrapped model's forward pass."""
        return self.model(inputs, **kwargs)

    def _split(self, value: Any) -> list[Any]:
        if self.num_batch_splits is None:
            return [value]
        if value is None:
            return [None] * self.num_batch_splits
        batch = value.shape[0]
        if batch is not None and batch % self.num_batch_splits:
            raise ValueError(
                f"SharpnessAwareMinimization '{self.name}': a batch of {batch} samples cannot "
                f"be split into num_batch_splits={self.num_batch_splits} equal parts; use a "
                "batch size divisible by it (and drop the remainder: dataset.batch(..., "
                "drop_remainder=True))."
            )
        return array_ops.split(value, self.num_batch_splits)

    def train_step(self, data: Any) -> dict[str, Any]:
        x, y, sample_weight = da.unpack_x_y_sample_weight(data)
        summed: list[Any] = []
        preds = []
        variables = self.model.trainable_variables
        for xb, yb, swb in zip(self._split(x), self._split(y), self._split(sample_weight)):
            with GradientTape() as tape:
                pred = self(xb)
                loss = self.compiled_loss(yb, pred, swb)
            preds.append(pred)
            grads = tape.gradient(loss, variables)
            norms = [reduce_ops.norm(g) for g in grads if g is not None]
            scale = self.rho / (reduce_ops.norm(array_ops.stack(norms)) + 1e-12)
            epsilons = []
            for g, v in zip(grads, variables):
                e = None if g is None else g * scale
                if e is not None:
                    v.assign_add(e)
                epsilons.append(e)
            with GradientTape() as tape:
                pred = self(xb, training=True)
                loss = self.compiled_loss(yb, pred, swb)
            grads = tape.gradient(loss, variables)
            summed = (
                [[g] for g in grads] if not summed else [s + [g] for s, g in zip(summed, grads)]
            )
            for v, e in zip(variables, epsilons):
                if e is not None:
                    v.assign_sub(e)
        gradients = [
            None if any(g is None for g in gs) else (gs[0] if len(gs) == 1 else core_ops.reduce_sum(
                array_ops.stack(gs), axis=0))
            for gs in summed
        ]  # fmt: skip
        self.optimizer.apply_gradients(
            [(g, v) for g, v in zip(gradients, variables) if g is not None]
        )
        pred = preds[0] if len(preds) == 1 else array_ops.concat(preds, 0)
        self.compiled_metrics.update_state(y, pred, sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": serialization.serialize_keras_object(self.model),
            "rho": self.rho,
            "num_batch_splits": self.num_batch_splits,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        from layerflow._src.keras.layers import layer_serialization

        config = copy.deepcopy(config)
        config["model"] = layer_serialization.deserialize(config.pop("model"), custom_objects)
        return cls(**config)
