"""Training loops for `Model`: compile, fit, evaluate, predict (Keras 2 semantics).

`Model` inherits from `Trainer`, so this file owns everything about training and the engine
owns everything about structure. `train_step`, `test_step` and `predict_step` are the
overridable units, as in Keras 2; the loops around them handle data, callbacks and progress.
The loops run them through the step functions (`make_train_function`, ...), compiled with
`tf.function` unless the model runs eagerly (`training/step_function.py`).
Trainer state lives in underscore attributes so the engine does not track it as model state.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np

from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.distribute import distribute_lib
from layerflow._src.distribute.train_step import distributed_train_step
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.keras import optimizers as optimizers_mod
from layerflow._src.keras.training import callbacks as callbacks_mod
from layerflow._src.keras.training import compile_utils
from layerflow._src.keras.training import data_adapter as da
from layerflow._src.keras.training.callbacks_extra import resume_point
from layerflow._src.keras.training.step_function import (
    StepFunction,
    StepFunctions,
    check_steps_per_execution,
    executions,
)
from layerflow._src.utils import nest

_log = logging.getLogger("layerflow")


def _py(value: Any) -> Any:
    """A Python float (or list) for a log value, as Keras hands logs to callbacks."""
    if isinstance(value, TensorLike):
        a = value.numpy()
        return float(a) if np.ndim(a) == 0 else a.tolist()
    if isinstance(value, np.ndarray | np.generic):
        return float(value) if np.ndim(value) == 0 else value.tolist()
    return value


def _py_logs(logs: Any) -> dict[str, Any]:
    if logs is None:
        return {}
    if not isinstance(logs, dict):
        raise TypeError(
            f"train_step/test_step must return a dict of metric values, got "
            f"{type(logs).__name__}. Return e.g. {{'loss': loss}}."
        )
    return {k: _py(v) for k, v in logs.items()}


def _verbose(verbose: Any) -> int:
    if verbose == "auto":
        return 1
    return int(verbose)


def _host(value: Any) -> Any:
    return value.numpy() if isinstance(value, TensorLike) else np.asarray(value)


class Trainer(StepFunctions):
    """Mixin of `tf.keras.Model` providing compile/fit/evaluate/predict.

    >>> import layerflow as tf, numpy as np
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> history = model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, verbose=0)
    >>> len(history.history["loss"])
    2
    """

    # Class-level defaults: the engine's __init__ runs before compile and knows nothing of these.
    _is_compiled = False
    _optimizer: Any = None
    _compiled_loss: Any = None
    _compiled_metrics: Any = None
    _loss_identifier: Any = None
    _jit_compile = False
    stop_training = False
    history: Any = None

    # --- compile ---------------------------------------------------------------------------------
    def compile(
        self,
        optimizer: Any = "rmsprop",
        loss: Any = None,
        metrics: Any = None,
        loss_weights: Any = None,
        weighted_metrics: Any = None,
        run_eagerly: Any = None,
        steps_per_execution: Any = None,
        jit_compile: Any = None,
        **kwargs: Any,
    ) -> None:
        """Configure training: optimizer, loss and metrics (names or objects).

        `fit`, `evaluate` and `predict` run compiled steps (`tf.function`) unless
        `run_eagerly=True`; `steps_per_execution=N` runs N steps per call of the step
        function. `jit_compile=True` is accepted and uses the same compiled steps.
        """
        unknown = sorted(
            set(kwargs) - {"sample_weight_mode", "target_tensors", "pss_evaluation_shards"}
        )
        if unknown:
            raise TypeError(f"compile() got unexpected keyword arguments {unknown}.")
        self._optimizer = optimizers_mod.get(optimizer)
        self._loss_identifier = loss
        names = _model_output_names(self)
        self._compiled_loss = compile_utils.LossesContainer(loss, loss_weights, names)
        self._compiled_metrics = compile_utils.MetricsContainer(metrics, weighted_metrics, names)
        self._run_eagerly = None if run_eagerly is None else bool(run_eagerly)
        self._jit_compile = bool(jit_compile)
        if steps_per_execution == "auto":  # tf_keras: autotuning on, starting from 1
            self._autotune_steps_per_execution = True
            steps_per_execution = 1
        self._steps_per_execution = check_steps_per_execution(steps_per_execution)
        self.train_function = self.test_function = self.predict_function = None
        self._is_compiled = True
        self.stop_training = False

    def _assert_compiled(self, what: str) -> None:
        if not self._is_compiled:
            raise RuntimeError(
                f"You must compile your model before {what}: call "
                "model.compile(optimizer=..., loss=...) first."
            )

    @property
    def optimizer(self) -> Any:
        return self._optimizer

    @optimizer.setter
    def optimizer(self, value: Any) -> None:
        self._optimizer = optimizers_mod.get(value) if value is not None else None

    @property
    def loss(self) -> Any:
        return self._loss_identifier

    @loss.setter
    def loss(self, value: Any) -> None:
        self._loss_identifier = value
        self._compiled_loss = compile_utils.LossesContainer(
            value, output_names=_model_output_names(self)
        )

    @property
    def compiled_loss(self) -> Any:
        return self._compiled_loss

    @property
    def compiled_metrics(self) -> Any:
        return self._compiled_metrics

    @property
    def jit_compile(self) -> bool:
        return self._jit_compile

    @property
    def metrics(self) -> list[Any]:
        """The loss tracker(s), the compiled metrics, then the metrics that attributes of the
        model and its layers hold (`self.loss_tracker = tf.keras.metrics.Mean()`), as Keras 2."""
        out: list[Any] = []
        if self._compiled_loss is not None:
            out.extend(self._compiled_loss.metrics)
        if self._compiled_metrics is not None:
            out.extend(self._compiled_metrics.metrics)
        known = {id(m) for m in out}
        out.extend(m for m in self._tracked_metrics() if id(m) not in known)
        layer_metrics = getattr(self, "_layer_metrics", None)  # add_metric's (Layer API)
        if layer_metrics is not None:
            out.extend(m for m in layer_metrics() if all(m is not o for o in out))
        return out

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    # --- the overridable steps ----------------------------------------------------------------
    def compute_loss(
        self, x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None
    ) -> Any:
        """The compiled loss plus the model's regularization losses."""
        del x
        return self._compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict[str, Any]:
        del x
        self._compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict[str, Any]:
        return {m.name: m.result() for m in self.metrics}

    def train_step(self, data: Any) -> dict[str, Any]:
        """One optimization step on one batch; returns the metric results (Keras 2's default).

        Override it to customize training while keeping fit's loop, callbacks and progress.
        """
        x, y, sample_weight = da.unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        self._optimizer.minimize(loss, self.trainable_variables, tape=tape)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict[str, Any]:
        x, y, sample_weight = da.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        x, _, _ = da.unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # --- fit -----------------------------------------------------------------------------------
    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: Any = "auto",
        callbacks: Any = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: Any = True,
        class_weight: dict | None = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        validation_batch_size: int | None = None,
        validation_freq: Any = 1,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
    ) -> callbacks_mod.History:
        """Train for `epochs` epochs; returns a `History` (`history.history["loss"]`, ...).

        `x` may be arrays/tensors (with `y`), a `tf.data.Dataset` or any iterable of
        `(x, y[, sample_weight])` batches. With `steps_per_epoch`, one iterator is consumed
        across epochs; if it runs out, training stops after that epoch with Keras' warning.
        A model made in `strategy.scope()` of a multi-replica strategy trains data-parallel:
        each batch is split across the replicas and one update of the summed gradients is
        applied per step (evaluate and predict split batches the same way).
        """
        self._assert_compiled("training/fitting")
        verbose = _verbose(verbose)
        if validation_split and validation_data is None:
            if not da._is_array_like(x):
                raise ValueError(
                    "validation_split is only supported for array or tensor inputs; with a "
                    "dataset pass validation_data=... instead."
                )
            (x, y, sample_weight), validation_data = da.train_validation_split(
                (x, y, sample_weight), validation_split
            )
        train = da.adapt(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, class_weight)
        da.set_workers(train, workers, use_multiprocessing, max_queue_size)
        val = None
        if validation_data is not None:
            vx, vy, vsw = da.unpack_x_y_sample_weight(validation_data)
            val = da.adapt(
                vx,
                vy,
                vsw,
                validation_batch_size or batch_size,
                False,
                validation_steps,
                what="validation",
            )
        cbs = callbacks_mod.configure(
            callbacks,
            self,
            verbose,
            epochs=epochs,
            steps=train.steps,
            _history=True,
            do_validation=val is not None,
        )
        self.stop_training = False
        cbs.on_train_begin()
        # A restored BackupAndRestore resumes where the interrupted fit stopped.
        initial_epoch, skip = resume_point(cbs.callbacks, initial_epoch)
        per_batch = cbs.wants("on_train_batch_end")
        batch_begin = cbs.wants("on_train_batch_begin")
        epoch_logs: dict[str, Any] = {}
        strategy = self._replicated_strategy("fit")
        train_function = self.make_train_function()
        # A step function of layerflow's takes the execution's batches as they are (no
        # iterator to wrap and drain again); one the user set is called as tf_keras calls it.
        run = train_function.run if isinstance(train_function, StepFunction) else None
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            logs: Any = None
            batches = self._batches(train, strategy)
            first = 0
            if skip:  # trained on before the interruption
                first = sum(1 for _ in itertools.islice(batches, skip))
                skip = 0
            # One execution runs up to steps_per_execution batches; the batch hooks run once
            # per execution, as tf_keras's do.
            for step, chunk in executions(batches, self._steps_per_execution):
                step += first
                if batch_begin:
                    cbs.on_train_batch_begin(step)
                logs = run(chunk) if run is not None else train_function(iter(chunk))
                if per_batch:
                    cbs.on_train_batch_end(step + len(chunk) - 1, _py_logs(logs))
                if self.stop_training:
                    break
            ran_out = getattr(train, "exhausted", False)
            if logs is None and ran_out:
                _warn_ran_out(train.steps, epochs - initial_epoch)
                break
            if logs is None:
                raise ValueError(
                    "fit got no batches in an epoch: the data is empty (or a generator was "
                    "exhausted; pass a re-iterable tf.data.Dataset or steps_per_epoch)."
                )
            epoch_logs = _py_logs(logs)
            if val is not None and _should_validate(epoch, validation_freq):
                cbs.params["_in_fit"] = True
                try:
                    val_logs = self._evaluate_loop(val, cbs)
                finally:
                    cbs.params["_in_fit"] = False
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
            if ran_out:
                _warn_ran_out(train.steps, epochs - initial_epoch)
                break
        if epochs > initial_epoch:
            self._optimizer.finalize_variable_values(self.trainable_variables)
        cbs.on_train_end(epoch_logs)
        history = cbs._history
        self.history = history
        return history

    # --- evaluate -------------------------------------------------------------------------------
    def _evaluate_loop(self, data: Any, cbs: callbacks_mod.CallbackList) -> dict[str, Any]:
        self.reset_metrics()
        cbs.on_test_begin()
        per_batch = cbs.wants("on_test_batch_end")
        logs: Any = None
        strategy = self._replicated_strategy("evaluate")
        test_function = self.make_test_function()
        for step, chunk in executions(self._batches(data, strategy), self._steps_per_execution):
            cbs.on_test_batch_begin(step)
            logs = test_function(iter(chunk))
            if per_batch:
                cbs.on_test_batch_end(step + len(chunk) - 1, _py_logs(logs))
        if logs is None:
            raise ValueError("evaluate got no batches: the data is empty.")
        out = _py_logs(logs)
        cbs.on_test_end(out)
        return out

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: Any = "auto",
        sample_weight: Any = None,
        steps: int | None = None,
        callbacks: Any = None,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
        return_dict: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Loss and metrics on `x`/`y`: a scalar (loss only), a list in `metrics_names` order,
        or a dict with `return_dict=True`."""
        self._assert_compiled("evaluating")
        data = da.adapt(x, y, sample_weight, batch_size, False, steps, what="evaluate")
        da.set_workers(data, workers, use_multiprocessing, max_queue_size)
        verbose = _verbose(verbose)
        cbs = callbacks_mod.configure(callbacks, self, verbose, test_steps=data.steps)
        logs = self._evaluate_loop(data, cbs)
        if return_dict:
            return logs
        values = [logs[n] for n in self.metrics_names if n in logs]
        extra = [v for k, v in logs.items() if k not in self.metrics_names]
        values += extra
        return values[0] if len(values) == 1 else values

    # --- predict --------------------------------------------------------------------------------
    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        verbose: Any = "auto",
        steps: int | None = None,
        callbacks: Any = None,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
    ) -> Any:
        """Outputs for every sample of `x`, as NumPy arrays (batches concatenated)."""
        data = da.adapt(x, None, None, batch_size, False, steps, what="predict")
        da.set_workers(data, workers, use_multiprocessing, max_queue_size)
        verbose = _verbose(verbose)
        cbs = callbacks_mod.configure(callbacks, self, verbose, predict_steps=data.steps)
        cbs.on_predict_begin()
        outputs: list[Any] = []
        strategy = self._replicated_strategy("predict")
        if strategy is None:
            predict_function = self.make_predict_function()
            for step, chunk in executions(self._batches(data, None), self._steps_per_execution):
                cbs.on_predict_batch_begin(step)
                out = predict_function(iter(chunk))
                outputs.append(nest.map_structure(_host, out))
                cbs.on_predict_batch_end(step + len(chunk) - 1, {"outputs": out})
        for step, batch in enumerate(self._batches(data, strategy) if strategy else ()):
            cbs.on_predict_batch_begin(step)
            out = strategy.run(lambda *b: self.predict_step(b), args=batch)
            outputs.append(_join_replicas(strategy, out))
            cbs.on_predict_batch_end(step, {"outputs": out})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("predict got no batches: the input is empty.")
        flat = [nest.flatten(o) for o in outputs]
        joined = [np.concatenate([f[i] for f in flat], axis=0) for i in range(len(flat[0]))]
        return nest.pack_sequence_as(outputs[0], joined)

    # --- under a distribution strategy ------------------------------------------------------------
    def _replicated_strategy(self, what: str) -> Any:
        """The strategy to run `what` under when it has several replicas, else None (the
        single-device fast path). A model made in `strategy.scope()` keeps that strategy."""
        strategy = self.__dict__.get("_distribution_strategy") or distribute_lib.get_strategy()
        if strategy.num_replicas_in_sync <= 1:
            return None
        if not distribute_lib.in_cross_replica_context() and distribute_lib.has_strategy():
            raise RuntimeError(
                f"Model.{what}() was called inside strategy.run (a replica context); call it "
                "in cross-replica context, outside strategy.run."
            )
        own = {"train_step": Trainer.train_step, "test_step": Trainer.test_step}
        own["predict_step"] = Trainer.predict_step
        step = {"fit": "train_step", "evaluate": "test_step"}.get(what, "predict_step")
        if getattr(type(self), step) is not own[step]:
            raise NotImplementedError(
                f"{type(self).__name__} overrides {step}(), which Model.{what}() cannot yet run "
                f"under {type(strategy).__name__} with {strategy.num_replicas_in_sync} replicas. "
                "Write the loop with strategy.run (see tf.distribute), or use the default step."
            )
        return strategy

    def _batches(self, data: Any, strategy: Any) -> Any:
        """One epoch of `data`'s batches, split across the replicas when under a strategy."""
        batches = data.epoch()
        if strategy is None:
            return batches
        if not self.built:
            # Build once, in cross-replica context, so every weight is one mirrored variable
            # (replicas building concurrently would each add the weights).
            first = next(batches, None)
            if first is None:
                return iter(())
            x, _, _ = da.unpack_x_y_sample_weight(first)
            with strategy.scope():
                self(x, training=False)
            batches = itertools.chain([first], batches)
        return iter(strategy.experimental_distribute_dataset(batches))

    def _replica_losses(self, data: tuple[Any, ...], training: bool) -> tuple[Any, Any]:
        x, y, sw = da.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=training)
        total, parts = self._compiled_loss.compute(y, y_pred, sw, self.losses)
        return total, (y, y_pred, sw, total, parts)

    def _update_from_replicas(self, strategy: Any, aux: Any) -> dict[str, Any]:
        """Loss trackers and metrics from every replica's slice, in this (the main) thread:
        the running means weight each slice by its size, so they equal the full batch's."""
        for y, y_pred, sw, total, parts in strategy.experimental_local_results(aux):
            if _n_rows(y_pred) == 0:
                continue  # an uneven last batch left this replica nothing
            self._compiled_loss.update_trackers(total, parts, y_pred)
            self._compiled_metrics.update_state(y, y_pred, sw)
        return self.get_metrics_result()

    def _distributed_train_step(self, strategy: Any, batch: Any) -> dict[str, Any]:
        """`train_step` with each replica on its slice of the batch and one optimizer update
        of the all-reduced gradients (Keras 2 scales each replica's loss by 1/replicas)."""
        _, aux = distributed_train_step(
            strategy,
            lambda *data: self._replica_losses(data, True),
            self.trainable_variables,
            self._optimizer.apply_gradients,
            batch if isinstance(batch, tuple) else (batch,),
        )
        return self._update_from_replicas(strategy, aux)

    def _distributed_test_step(self, strategy: Any, batch: Any) -> dict[str, Any]:
        args = batch if isinstance(batch, tuple) else (batch,)
        _, aux = strategy.run(lambda *data: self._replica_losses(data, False), args=args)
        return self._update_from_replicas(strategy, aux)

    # --- single batches -------------------------------------------------------------------------
    def train_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        class_weight: dict | None = None,
        reset_metrics: bool = True,
        return_dict: bool = False,
    ) -> Any:
        """One gradient step on exactly this batch; returns its loss (and metrics)."""
        self._assert_compiled("train_on_batch")
        if reset_metrics:
            self.reset_metrics()
        data = da.ArrayData(x, y, sample_weight, batch_size=_n(x), class_weight=class_weight)
        logs = _py_logs(self.make_train_function()(data.epoch()))
        return self._flatten(logs, return_dict)

    def test_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        reset_metrics: bool = True,
        return_dict: bool = False,
    ) -> Any:
        self._assert_compiled("test_on_batch")
        if reset_metrics:
            self.reset_metrics()
        data = da.ArrayData(x, y, sample_weight, batch_size=_n(x))
        logs = _py_logs(self.make_test_function()(data.epoch()))
        return self._flatten(logs, return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        data = da.ArrayData(x, batch_size=_n(x))
        out = self.make_predict_function()(data.epoch())
        return nest.map_structure(_host, out)

    def _flatten(self, logs: dict[str, Any], return_dict: bool) -> Any:
        if return_dict:
            return logs
        values = [logs[n] for n in self.metrics_names if n in logs]
        values += [v for k, v in logs.items() if k not in self.metrics_names]
        return values[0] if len(values) == 1 else values


def _n(x: Any) -> int:
    first = nest.flatten(x)[0]
    shape = tuple(first.shape) if isinstance(first, TensorLike) else np.shape(first)
    return max(int(shape[0]) if len(shape) else 1, 1)


def _should_validate(epoch: int, freq: Any) -> bool:
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return epoch + 1 in freq


def _n_rows(structure: Any) -> int:
    first = nest.flatten(structure)[0]
    shape = tuple(first.shape) if isinstance(first, TensorLike) else np.shape(first)
    return int(shape[0]) if len(shape) else 1


def _join_replicas(strategy: Any, out: Any) -> Any:
    """One batch's outputs from every replica, as host arrays in the batch's original order
    (the dataset was split into consecutive slices, replica 0 first)."""
    parts = [nest.map_structure(_host, o) for o in strategy.experimental_local_results(out)]
    flat = [nest.flatten(p) for p in parts]
    joined = [np.concatenate([f[k] for f in flat], axis=0) for k in range(len(flat[0]))]
    return nest.pack_sequence_as(parts[0], joined) if nest.is_nested(parts[0]) else joined[0]


def _warn_ran_out(steps: int | None, epochs: int) -> None:
    _log.warning(
        "Your input ran out of data; interrupting training. Make sure that your dataset or "
        "generator can generate at least `steps_per_epoch * epochs` batches (in this case, "
        "%s batches). You may need to use the repeat() function when building your dataset.",
        (steps or 0) * epochs,
    )


def _model_output_names(model: Any) -> list[str] | None:
    """The names of a functional model's output layers (Keras 2's `model.output_names`)."""
    outputs = model.__dict__.get("_graph_outputs")
    if outputs is None:
        return None
    if isinstance(outputs, dict):
        return list(outputs)
    names = []
    for t in nest.flatten(outputs):
        history = getattr(t, "_keras_history", None)
        if history is None:
            return None
        names.append(history[0].name)
    return names
