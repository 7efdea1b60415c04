"""`autotune_steps_per_execution` and the deprecated `*_generator` methods of `Model` (Keras 2).

The step functions and `steps_per_execution` themselves (`make_train_function`, ...) are in
`training/step_function.py`. `autotune_steps_per_execution` is accepted (`compile(
steps_per_execution="auto")` or the property) and recorded; it never tunes anything.
"""

from __future__ import annotations

import warnings
from typing import Any


class Execution:
    """Mixin of `Model`: `autotune_steps_per_execution` and the `*_generator` methods."""

    _autotune_steps_per_execution = False

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
