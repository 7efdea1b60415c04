"""`tf.keras.optimizers.legacy` (and `.experimental`): the same optimizers under TF 2.11's names."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.optimizers import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop
