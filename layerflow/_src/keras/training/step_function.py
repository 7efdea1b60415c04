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

import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src.autograph.conversion import convert as autograph_convert
from layerflow._src.framework import errors
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.function import tf_function
from layerflow._src.keras.engine import layer_state
from layerflow._src.ops import array_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.utils import nest

_log = logging.getLogger("layerflow")


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


def _has_composite(batches: list[Any]) -> bool:
    """Whether a batch holds a RaggedTensor or SparseTensor: values a trace cannot take as
    inputs (it would capture them, a new trace per batch), so their steps run eagerly."""
    for batch in batches:  # the usual batch, a tuple of tensors: no structure walk
        if type(batch) is not tuple or any(type(v) is not Tensor for v in batch):
            break
    else:
        return False
    return any(isinstance(v, RaggedTensor | SparseTensor) for v in nest.flatten(batches))


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
        self._structure: tuple[int, tuple[int, ...]] | None = None
        self._optimizer_built: tuple[int, int] | None = None
        self._composite_noted = False
        if compiled:
            self._function = self._compile()

    def _compile(self) -> Any:
        # As tf_keras runs the step through AutoGraph, a user's train_step is converted.
        converted = autograph_convert(self.python_function)
        keep_all = self.kind == "predict"

        def unrolled(batches: tuple) -> Any:
            return _steps(converted, batches, keep_all)

        unrolled.__name__ = unrolled.__qualname__ = self.__name__
        return tf_function.function(unrolled, autograph=False)

    def _trainable_changed(self) -> bool:
        """Whether the model's trainable variables changed since the last execution (a layer
        frozen between fits): the trace holds the old list, so the steps are traced anew.
        tf_keras asks for compile() again; layerflow retraces by itself."""
        version = layer_state._structure_version[0]
        if self._structure is not None and self._structure[0] == version:
            return False
        ids = tuple(id(v) for v in self._model.trainable_variables)
        changed = self._structure is not None and self._structure[1] != ids
        self._structure = (version, ids)
        return changed

    def _build_optimizer(self) -> None:
        """Make the optimizer's slots for a built model's trainable variables before a trace:
        a traced `apply_gradients` would otherwise create them in the first trace, which then
        runs twice (a trace that creates variables is traced again, as in TF)."""
        model = self._model
        version = (layer_state._structure_version[0], id(getattr(model, "optimizer", None)))
        if self._optimizer_built == version:  # no layer or optimizer changed since: built
            return
        build = getattr(getattr(model, "optimizer", None), "_build_for", None)
        if build is not None and model.built:
            build(list(model.trainable_variables))
            self._optimizer_built = version

    @property
    def function(self) -> Any:
        """The `tf.function` of the compiled steps (None when the steps run eagerly)."""
        return self._function

    def run(self, batches: list[Any]) -> Any:
        """The steps on these batches (one execution); the last step's result."""
        keep = self.kind == "predict"
        compiled = self._function is not None and not tf_function.functions_run_eagerly()
        if compiled and _has_composite(batches):
            compiled = False
            if not self._composite_noted:
                self._composite_noted = True
                _log.warning(
                    "%s of %s runs eagerly for batches holding a RaggedTensor or "
                    "SparseTensor: a traced step would hold each batch's values as constants "
                    "and trace again for every batch. Pad the inputs (rt.to_tensor()) to "
                    "compile the steps.", self.__name__, type(self._model).__name__,
                )  # fmt: skip
        if compiled:
            if self._trainable_changed():
                self._function = self._compile()
            if self.kind == "train":
                self._build_optimizer()
            try:
                out = self._function(tuple(batches))
            except Exception as err:
                if not (isinstance(err, errors.UnimplementedError)
                        or getattr(err, "_lf_during_trace", False)):  # fmt: skip
                    raise
                # The steps could not be traced (a layer that computes on
                # host arrays): nothing ran, so this model's steps run eagerly from now on; a
                # real error in the step is raised again by the eager run.
                _log.warning("%s of %s runs eagerly (its steps could not be compiled): %s: %s",
                             self.__name__, type(self._model).__name__, type(err).__name__,
                             err)  # fmt: skip
                self._function = None
                return self.run(batches)
            self._trainable_changed()  # a first trace may build the model: note its variables
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


class StepFunctions:
    """Mixin of `Model` (through `Trainer`): `run_eagerly`, the step functions and
    `steps_per_execution`."""

    _run_eagerly: bool | None = None
    _steps_per_execution = 1
    train_function: Any = None
    test_function: Any = None
    predict_function: Any = None

    @property
    def run_eagerly(self) -> bool:
        """Whether fit/evaluate/predict run their steps eagerly (False by default: compiled).

        As tf_keras: a model with a dynamic layer always runs eagerly; otherwise an explicit
        setting wins, and unset follows `tf.config.run_functions_eagerly`.
        """
        dynamic = bool(getattr(self, "dynamic", False))
        if dynamic and self._run_eagerly is False:
            raise ValueError(
                "Your model contains layers that can only be successfully run in eager "
                "execution (layers constructed with `dynamic=True`). You cannot set "
                "`run_eagerly=False`."
            )
        if self._run_eagerly is None:
            return dynamic or tf_function.functions_run_eagerly()
        return dynamic or self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value: bool | None) -> None:
        self._run_eagerly = None if value is None else bool(value)

    def make_train_function(self, force: bool = False) -> Any:
        """The function `fit` runs per execution: called with an iterator of batches, it runs
        `train_step` on up to `steps_per_execution` of them and returns the last step's logs.
        Compiled with `tf.function` unless `run_eagerly`; cached until `compile()` (or a change
        of `run_eagerly` or of the strategy); `force=True` makes it anew.

        >>> import layerflow as tf, numpy as np
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> logs = model.make_train_function()(iter([(np.ones((2, 3)), np.ones((2, 1)))]))
        >>> sorted(logs)
        ['loss']
        """
        strategy = self._replicated_strategy("fit")
        if not force and _still_valid(self.train_function, strategy, self._steps_eagerly(strategy)):
            return self.train_function
        step = self.train_step
        if strategy is not None:
            step = functools.partial(self._distributed_train_step, strategy)
        self.train_function = self._step_function("train", step, strategy)
        return self.train_function

    def make_test_function(self, force: bool = False) -> Any:
        """The function `evaluate` runs per execution (see `make_train_function`)."""
        strategy = self._replicated_strategy("evaluate")
        if not force and _still_valid(self.test_function, strategy, self._steps_eagerly(strategy)):
            return self.test_function
        step = self.test_step
        if strategy is not None:
            step = functools.partial(self._distributed_test_step, strategy)
        self.test_function = self._step_function("test", step, strategy)
        return self.test_function

    def make_predict_function(self, force: bool = False) -> Any:
        """The function `predict` runs per execution: `predict_step` on up to
        `steps_per_execution` batches, their outputs concatenated along the batch axis."""
        if not force and _still_valid(self.predict_function, None, self._steps_eagerly(None)):
            return self.predict_function
        self.predict_function = self._step_function("predict", self.predict_step, None)
        return self.predict_function

    def _steps_eagerly(self, strategy: Any) -> bool:
        # Under a multi-replica strategy the steps run eagerly (training/step_function.py).
        return strategy is not None or self.run_eagerly

    def _step_function(self, kind: str, step: Any, strategy: Any) -> StepFunction:
        return StepFunction(self, kind, step, not self._steps_eagerly(strategy), strategy)

    @property
    def steps_per_execution(self) -> int:
        """How many batches one call of a step function runs (the compile argument)."""
        return self._steps_per_execution

    @steps_per_execution.setter
    def steps_per_execution(self, value: Any) -> None:
        self._steps_per_execution = check_steps_per_execution(value)


def _still_valid(function: Any, strategy: Any, eagerly: bool) -> bool:
    """Whether a cached step function still fits: one made by layerflow remembers its strategy
    and mode; one a user set (`model.train_function = ...`) is always kept."""
    if function is None:
        return False
    if not isinstance(function, StepFunction):
        return True
    return function.strategy is strategy and function.eager == eagerly


def check_steps_per_execution(value: Any) -> int:
    """A positive int (None means 1)."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"steps_per_execution must be a positive integer, got {value!r}.")
    return int(value)
