"""`tf.keras.datasets`: re-exports only (implementation in `layerflow._src.keras.datasets`)."""

from layerflow.keras.datasets import fashion_mnist, mnist
