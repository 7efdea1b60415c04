"""`tf.keras.utils.experimental.DatasetCreator`: a function that makes the training dataset,
for `fit`/`evaluate`/`predict` (which then need `steps_per_epoch`/`steps`), as tf_keras.

`fit` calls it with a `tf.distribute.InputContext` (one input pipeline, the current strategy's
replica count) and iterates the dataset it returns across epochs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.data.dataset import Dataset
from layerflow._src.distribute import distribute_lib
from layerflow._src.distribute.input_lib import InputContext
from layerflow._src.distribute.options import InputOptions


class DatasetCreator:
    """Wrap `dataset_fn(input_context) -> tf.data.Dataset` for `Model.fit`.

    >>> import layerflow as tf, numpy as np
    >>> def dataset_fn(context):
    ...     batch = context.get_per_replica_batch_size(4)
    ...     x = np.ones((8, 2), "float32")
    ...     return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(batch)
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> h = model.fit(DatasetCreator(dataset_fn), epochs=2, steps_per_epoch=3, verbose=0)
    >>> len(h.history["loss"])
    2
    """

    _lf_dataset_creator = True

    def __init__(self, dataset_fn: Callable[..., Any], input_options: Any = None) -> None:
        if not callable(dataset_fn):
            raise TypeError(
                f"`dataset_fn` for `DatasetCreator` must be a `callable`. Received: {dataset_fn}"
            )
        if input_options and not isinstance(input_options, InputOptions):
            raise TypeError(
                "`input_options` for `DatasetCreator` must be a `tf.distribute.InputOptions`. "
                f"Received: {input_options}"
            )
        self.dataset_fn = dataset_fn
        self.input_options = input_options

    def __call__(self, *args: Any, **kwargs: Any) -> Dataset:
        dataset = self.dataset_fn(*args, **kwargs)
        if not isinstance(dataset, Dataset):
            raise TypeError(
                f'The `callable` provided to `DatasetCreator` must return a Dataset. It returns "'
                f'{dataset}"'
            )
        return dataset

    def make_dataset(self, what: str, steps: Any) -> Dataset:
        """The dataset for `fit`/`evaluate`/`predict` (`what`), which must say its `steps`."""
        if steps is None:
            raise ValueError(
                "When using a `tf.keras.utils.experimental.DatasetCreator`, `steps_per_epoch`, "
                "`validation_steps`, `steps`, or `pss_evaluation_shards` argument must be "
                f"provided in `Model.fit`, `Model.evaluate`, or `Model.predict` (in {what})."
            )
        replicas = distribute_lib.get_strategy().num_replicas_in_sync
        return self(InputContext(num_replicas_in_sync=replicas))
