"""`tf.keras.datasets`: re-exports only (implementation in `layerflow._src.keras.datasets`)."""

from layerflow.keras.datasets import (
    boston_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)
