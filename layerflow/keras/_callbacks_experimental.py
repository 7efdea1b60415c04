"""`tf.keras.callbacks.experimental`: `BackupAndRestore` under its TF 2.3-2.7 name, and
`UpdateEmbeddingCallback` (periodic vocabulary updates of a `DynamicEmbedding` layer)."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.training.callbacks_extra import BackupAndRestore
from layerflow._src.keras.training.update_embedding import UpdateEmbeddingCallback
