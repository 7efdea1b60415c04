"""Step functions of `fit`/`evaluate`/`predict` and `steps_per_execution` (Keras 2).

`make_train_function()` returns the callable `fit` runs once per *execution*: it takes an
iterator of batches, runs `train_step` on up to `steps_per_execution` of them, and returns the
last step's logs (tf_keras's `train_function(iterator)`). The callables are plain Python, so a
tracing `tf.function` can compile them later without changing the loops. Callbacks' batch hooks
run once per execution, as tf_keras does: `on_train_batch_begin(step)` with the execution's first
step, `on_train_batch_end(step + n - 1)` with its last.

`autotune_steps_per_execution` is accepted (`compile(steps_per_execution="auto")` or the
property) and recorded; layerflow runs each step eagerly, so the number of steps per execution
does not change the cost of a step and is never tuned.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from layerflow._src.utils import nest

_NOT_COMPILED = object()


def run_steps(step: Callable[[Any], Any], iterator: Iterator[Any], steps: int) -> tuple[Any, int]:
    """`(last logs, steps run)` of `step` on up to `steps` batches of `iterator`."""
    logs = None
    done = 0
    for _ in range(steps):
        try:
            batch = next(iterator)
        except StopIteration:
            break
        logs = step(batch)
        done += 1
    return logs, done


def executions(
    batches: Any, steps: int, start: int = 0
) -> Iterator[tuple[int, Iterator[Any], list[int]]]:
    """`(first step, iterator of the execution's batches, [count])` per execution of `steps`
    batches, numbering steps from `start`; the count is filled in as the execution consumes
    batches."""
    it = iter(batches)
    step = start
    while True:
        try:
            first = next(it)
        except StopIteration:
            return
        count = [0]

        def chunk(first: Any = first, count: list[int] = count) -> Iterator[Any]:
            count[0] += 1
            yield first
            for _ in range(steps - 1):
                try:
                    nxt = next(it)
                except StopIteration:
                    return
                count[0] += 1
                yield nxt

        yield step, chunk(), count
        step += max(count[0], 1)


class Execution:
    """Mixin of `Model`: the step functions and `steps_per_execution`."""

    train_function: Any = None
    test_function: Any = None
    predict_function: Any = None
    _autotune_steps_per_execution = False

    def _make_function(
        self, kind: str, step: Callable[[Any], Any], strategy: Any
    ) -> Callable[[Any], Any]:
        def function(iterator: Any) -> Any:
            logs, _ = run_steps(step, iter(iterator), self._steps_per_execution)
            return logs

        function._lf_strategy = strategy  # type: ignore[attr-defined]

        function.__name__ = f"{kind}_function"
        function.__doc__ = (
            f"Run `{kind}_step` on up to steps_per_execution batches of the iterator; return "
            "the last step's result."
        )
        return function

    def make_train_function(self, force: bool = False) -> Callable[[Any], Any]:
        """The function `fit` runs per execution (see the module docstring).

        >>> import layerflow as tf, numpy as np
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> logs = model.make_train_function()(iter([(np.ones((2, 3)), np.ones((2, 1)))]))
        >>> sorted(logs)
        ['loss']
        """
        strategy = self._replicated_strategy("fit")
        cached = self.train_function
        if cached is not None and not force and _made_for(cached, strategy):
            return cached
        step = self.train_step
        if strategy is not None:
            step = functools.partial(self._distributed_train_step, strategy)
        self.train_function = self._make_function("train", step, strategy)
        return self.train_function

    def make_test_function(self, force: bool = False) -> Callable[[Any], Any]:
        """The function `evaluate` runs per execution."""
        strategy = self._replicated_strategy("evaluate")
        cached = self.test_function
        if cached is not None and not force and _made_for(cached, strategy):
            return cached
        step = self.test_step
        if strategy is not None:
            step = functools.partial(self._distributed_test_step, strategy)
        self.test_function = self._make_function("test", step, strategy)
        return self.test_function

    def make_predict_function(self, force: bool = False) -> Callable[[Any], Any]:
        """The function `predict` runs per batch: `predict_step` on the iterator's batches
        (up to steps_per_execution), their outputs concatenated along the batch axis."""
        if self.predict_function is not None and not force:
            return self.predict_function
        from layerflow._src.ops import array_ops

        def predict_function(iterator: Any) -> Any:
            it = iter(iterator)
            outs = []
            for _ in range(self._steps_per_execution):
                try:
                    batch = next(it)
                except StopIteration:
                    break
                outs.append(self.predict_step(batch))
            if len(outs) <= 1:
                return outs[0] if outs else None
            flat = [nest.flatten(o) for o in outs]
            joined = [array_ops.concat([f[i] for f in flat], 0) for i in range(len(flat[0]))]
            return nest.pack_sequence_as(outs[0], joined)

        self.predict_function = predict_function
        return predict_function

    def _forget_functions(self) -> None:
        """compile() makes the step functions anew on next use."""
        self.train_function = self.test_function = self.predict_function = None

    @property
    def steps_per_execution(self) -> int:
        """How many batches one call of the train/test function runs (compile argument)."""
        return self._steps_per_execution

    @steps_per_execution.setter
    def steps_per_execution(self, value: Any) -> None:
        self._steps_per_execution = check_steps_per_execution(value)

    @property
    def autotune_steps_per_execution(self) -> bool:
        """Accepted for compatibility; recorded, never tuned (see the module docstring)."""
        return self._autotune_steps_per_execution

    @autotune_steps_per_execution.setter
    def autotune_steps_per_execution(self, value: bool) -> None:
        self._autotune_steps_per_execution = bool(value)

    # --- deprecated generator methods ---------------------------------------------------------
    def fit_generator(self, generator: Any, steps_per_epoch: Any = None, epochs: int = 1,
                      verbose: Any = 1, callbacks: Any = None, validation_data: Any = None,
                      validation_steps: Any = None, validation_freq: Any = 1,
                      class_weight: Any = None, max_queue_size: int = 10, workers: int = 1,
                      use_multiprocessing: bool = False, shuffle: bool = True,
                      initial_epoch: int = 0) -> Any:  # fmt: skip
        """Deprecated: `fit` takes generators."""
        warnings.warn(
            "`Model.fit_generator` is deprecated and will be removed in a future version. "
            "Please use `Model.fit`, which supports generators.",
            stacklevel=2,
        )
        return self.fit(generator, steps_per_epoch=steps_per_epoch, epochs=epochs,
                        verbose=verbose, callbacks=callbacks, validation_data=validation_data,
                        validation_steps=validation_steps, validation_freq=validation_freq,
                        class_weight=class_weight, max_queue_size=max_queue_size,
                        workers=workers, use_multiprocessing=use_multiprocessing,
                        shuffle=shuffle, initial_epoch=initial_epoch)  # fmt: skip

    def evaluate_generator(self, generator: Any, steps: Any = None, callbacks: Any = None,
                           max_queue_size: int = 10, workers: int = 1,
                           use_multiprocessing: bool = False, verbose: Any = 0) -> Any:  # fmt: skip
        """Deprecated: `evaluate` takes generators."""
        warnings.warn(
            "`Model.evaluate_generator` is deprecated and will be removed in a future version. "
            "Please use `Model.evaluate`, which supports generators.",
            stacklevel=2,
        )
        return self.evaluate(generator, steps=steps, max_queue_size=max_queue_size,
                             workers=workers, use_multiprocessing=use_multiprocessing,
                             verbose=verbose, callbacks=callbacks)  # fmt: skip

    def predict_generator(self, generator: Any, steps: Any = None, callbacks: Any = None,
                          max_queue_size: int = 10, workers: int = 1,
                          use_multiprocessing: bool = False, verbose: Any = 0) -> Any:  # fmt: skip
        """Deprecated: `predict` takes generators."""
        warnings.warn(
            "`Model.predict_generator` is deprecated and will be removed in a future version. "
            "Please use `Model.predict`, which supports generators.",
            stacklevel=2,
        )
        return self.predict(generator, steps=steps, max_queue_size=max_queue_size,
                            workers=workers, use_multiprocessing=use_multiprocessing,
                            verbose=verbose, callbacks=callbacks)  # fmt: skip


def _made_for(function: Any, strategy: Any) -> bool:
    # A function made by layerflow remembers its strategy; a user's own is always kept.
    return getattr(function, "_lf_strategy", strategy) is strategy


def check_steps_per_execution(value: Any) -> int:
    """A positive int (None means 1)."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"steps_per_execution must be a positive integer (or 'auto'), got {value!r}."
        )
    return int(value)
