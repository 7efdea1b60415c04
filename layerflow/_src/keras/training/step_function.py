"""The step functions of `fit`/`evaluate`/`predict`: compiled with `tf.function` by default.

`make_train_function()` returns the callable `fit` runs once per *execution*: it takes an
iterator of batches, runs `train_step` on up to `steps_per_execution` of them and returns the
last step's logs (tf_keras's `train_function(iterator)`). Unless the model runs eagerly
(`compile(run_eagerly=True)`, `model.run_eagerly = True`, `tf.config.run_functions_eagerly(True)`
or a dynamic layer), the steps of one execution are traced into one `tf.function` that takes the
execution's batches as its arguments (the steps unrolled), so its Python body runs once per new
batch signature and later executions run the compiled plan. The last, partial batch of an epoch
and a shorter last execution each trace once more (one trace per shape, as
`reduce_retracing=False` gives; layers that read static shapes need no unknown dimensions).

Under a distribution strategy with several replicas the steps run eagerly, by design: the
replicas of `MirroredStrategy` run `strategy.run` in threads of their own, the gradients meet in
an all-reduce across those threads and the update is applied once in `merge_call`; a trace is
per thread, so one program cannot hold that exchange. Each replica's step still runs the
ordinary eager ops.

Callbacks' batch hooks run once per execution, as tf_keras does: `on_train_batch_begin(step)`
with the execution's first step, `on_train_batch_end(step + n - 1)` with its last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from layerflow._src.autograph.conversion import convert as autograph_convert
from layerflow._src.function import tf_function
from layerflow._src.ops import array_ops
from layerflow._src.utils import nest


def executions(batches: Any, steps: int) -> Iterator[tuple[int, list[Any]]]:
    """`(first step, the execution's batches)` for every execution of up to `steps` batches."""
    it = iter(batches)
    step = 0
    while True:
        chunk = []
        for _ in range(steps):
            try:
                chunk.append(next(it))
            except StopIteration:
                break
        if not chunk:
            return
        yield step, chunk
        step += len(chunk)


def _steps(step: Callable[[Any], Any], batches: Any, keep_all: bool) -> Any:
    """`step` on each batch: the last result, or every result (a tuple) with `keep_all`."""
    out = []
    for batch in batches:
        out.append(step(batch))
    return tuple(out) if keep_all else out[-1]


def _join(outputs: tuple) -> Any:
    """Predict outputs of an execution's steps, concatenated along the batch axis."""
    if len(outputs) == 1:
        return outputs[0]
    flat = [nest.flatten(o) for o in outputs]
    joined = [array_ops.concat([f[i] for f in flat], 0) for i in range(len(flat[0]))]
    return nest.pack_sequence_as(outputs[0], joined)


class StepFunction:
    """`step` on up to `steps_per_execution` batches of an iterator; the last step's result.

    `compiled` traces the steps of an execution into one `tf.function` (see the module
    docstring); otherwise each step runs eagerly. `strategy` and `eager` record what the
    function was made for, so the model makes a new one when either changes.
    """

    def __init__(self, model: Any, kind: str, step: Callable[[Any], Any], compiled: bool,
                 strategy: Any = None) -> None:  # fmt: skip
        self._model = model
        self.kind = kind
        self.python_function = step
        self.strategy = strategy
        self.eager = not compiled
        self.__name__ = f"{kind}_function"
        self._function: Any = None
        if compiled:
            # As tf_keras runs the step through AutoGraph, a user's train_step is converted.
            converted = autograph_convert(step)

            def unrolled(batches: tuple) -> Any:
                return _steps(converted, batches, kind == "predict")

            unrolled.__name__ = unrolled.__qualname__ = self.__name__
            self._function = tf_function.function(unrolled, autograph=False)

    @property
    def function(self) -> Any:
        """The `tf.function` of the compiled steps (None when the steps run eagerly)."""
        return self._function

    def run(self, batches: list[Any]) -> Any:
        """The steps on these batches (one execution); the last step's result."""
        keep = self.kind == "predict"
        if self._function is not None and not tf_function.functions_run_eagerly():
            out = self._function(tuple(batches))
        else:
            out = _steps(self.python_function, batches, keep)
        return _join(out) if keep else out

    def __call__(self, iterator: Any) -> Any:
        it = iter(iterator)
        batches = []
        for _ in range(self._model._steps_per_execution):
            try:
                batches.append(next(it))
            except StopIteration:
                break
        if not batches:
            return None
        return self.run(batches)

    def __repr__(self) -> str:
        mode = "eager" if self.eager else "compiled"
        return f"<{self.__name__} ({mode}) of {type(self._model).__name__}>"
