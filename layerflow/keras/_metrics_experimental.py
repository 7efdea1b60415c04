"""`tf.keras.metrics.experimental`: `PyMetric`, a metric that runs Python code on the host."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.metrics.py_metric import PyMetric
