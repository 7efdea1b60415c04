"""`tf.keras.callbacks.experimental`: `BackupAndRestore` under its TF 2.3-2.7 name.

`UpdateEmbeddingCallback` (parameter-server embedding updates on TPUs) is absent: layerflow
has no parameter servers.
"""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.training.callbacks_extra import BackupAndRestore
