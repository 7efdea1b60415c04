"""`tf.keras.callbacks.experimental.UpdateEmbeddingCallback` (tf_keras 2.x): a `TimedThread`
that, every `interval` seconds, lets a `DynamicEmbedding` layer install its most frequent keys
(`update_embeddings`) and then zeroes the optimizer's state for that layer's variables.

Run it as a context manager around `fit` (and pass it in `callbacks=` too, so it sees the
model). Leaving the `with` block, normally or by an exception, stops the thread and waits for an
update in progress to finish. An error inside an update (other than the "not built yet" case
tf_keras also tolerates) stops the thread and is raised in `fit` at the next batch end, instead
of dying silently in the background.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from layerflow._src.distribute import distribute_lib
from layerflow._src.keras.training.callback_base import Callback
from layerflow._src.keras.utils.timed_threads import TimedThread

_log = logging.getLogger("layerflow")


class UpdateEmbeddingCallback(TimedThread, Callback):
    """Every `interval` seconds: `dynamic_embedding_layer.update_embeddings(strategy)`, then
    reset (zero) the optimizer variables of dynamic embeddings. Resetting discards the slot state
    (momenta, second moments) of those variables, as tf_keras documents.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.experimental.DynamicEmbedding(
    ...     input_dim=3, output_dim=2, initial_vocabulary=tf.constant(["a", "b", "c"]))
    >>> cb = tf.keras.callbacks.experimental.UpdateEmbeddingCallback(layer, interval=60)
    >>> with cb:
    ...     cb.is_alive()
    True
    >>> cb.is_alive()
    False
    """

    def __init__(self, dynamic_embedding_layer: Any, interval: float) -> None:
        if not callable(getattr(dynamic_embedding_layer, "update_embeddings", None)):
            raise TypeError(
                "UpdateEmbeddingCallback expects a DynamicEmbedding layer (an object with an "
                f"`update_embeddings` method), got {type(dynamic_embedding_layer).__name__}."
            )
        self._epoch = 0
        TimedThread.__init__(self, interval)
        Callback.__init__(self)
        self._dynamic_embedding_layer = dynamic_embedding_layer
        self.strategy = distribute_lib.get_strategy()
        self._error: BaseException | None = None

    def on_interval(self) -> None:
        try:
            self._dynamic_embedding_layer.update_embeddings(self.strategy)
            self._reset_optimizer()
        except AttributeError:
            # No model or optimizer yet (the first interval can come before `fit` starts).
            _log.info("Time interval specified to the UpdateEmbeddingCallback may be too small, "
                      "please try increasing the value of `interval`.")  # fmt: skip
        except Exception as err:  # noqa: BLE001 - handed to the training thread, see _check
            self._error = err
            self.stop()

    def _reset_optimizer(self) -> None:
        """Zero the optimizer variables of dynamic embedding layers: by name, as tf_keras, and
        the slots of this layer's own weights (whatever the layer is called)."""
        own = tuple("/" + v.name for v in self._dynamic_embedding_layer.trainable_weights)
        for var in self.model.optimizer.variables():
            if "dynamic_embedding" in var.name or var.name.endswith(own):
                var.assign(var.numpy() * 0)

    def _check(self) -> None:
        err, self._error = self._error, None
        if err is not None:
            raise RuntimeError(
                f"UpdateEmbeddingCallback: updating the embeddings of "
                f"'{self._dynamic_embedding_layer.name}' failed in the update thread "
                f"({type(err).__name__}: {err}); the thread was stopped."
            ) from err

    def stop(self) -> None:
        """Stop the thread; from another thread, also wait for an update in progress to end."""
        super().stop()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._check()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._check()

    def on_train_end(self, logs: dict | None = None) -> None:
        self._check()
