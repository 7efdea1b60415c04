"""`tf.keras.datasets.fashion_mnist`: Zalando's 70,000 28x28 grayscale images of 10 classes."""

from __future__ import annotations

import pathlib

import numpy as np

from layerflow._src.keras.datasets import idx, keras_cache

SOURCE = idx.Source(
    name="fashion-mnist",
    mirrors=(
        "https://storage.googleapis.com/tensorflow/tf-keras-datasets",
        "https://fashion-mnist.s3-website.eu-central-1.amazonaws.com",
    ),
    sha256={
        "train-images-idx3-ubyte.gz": (
            "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"
        ),
        "train-labels-idx1-ubyte.gz": (
            "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"
        ),
        "t10k-images-idx3-ubyte.gz": (
            "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"
        ),
        "t10k-labels-idx1-ubyte.gz": (
            "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"
        ),
    },
)

CLASS_NAMES = (
    "t-shirt", "trouser", "pullover", "dress", "coat",
    "sandal", "shirt", "sneaker", "bag", "ankle boot",
)  # fmt: skip

SAMPLE = pathlib.Path(__file__).resolve().parent / "sample" / "fashion-mnist-sample.npz"


def load_data() -> idx.Splits:
    """The Fashion-MNIST training and test sets as NumPy uint8 arrays.

    Returns `(x_train, y_train), (x_test, y_test)`: images of shape (60000, 28, 28) and
    (10000, 28, 28), labels 0-9. Files are looked up in `$LAYERFLOW_DATASETS/fashion-mnist/`,
    then `~/.layerflow/datasets/fashion-mnist/`, then Keras's cache
    (`$KERAS_HOME/datasets/fashion-mnist/`, `~/.keras/datasets/fashion-mnist/`), and downloaded
    (checksummed) when missing.

    >>> import layerflow as tf
    >>> (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    >>> x_train.shape, y_test.dtype
    ((60000, 28, 28), dtype('uint8'))
    """
    if idx.locate(SOURCE.name) is None:
        for home in keras_cache.homes():
            folder = pathlib.Path(home) / "datasets"
            if idx.locate(SOURCE.name, cache_dir=folder) is not None:
                return idx.load(SOURCE, cache_dir=folder)
    return idx.load(SOURCE)


def load_sample() -> idx.Splits:
    """A small real sample shipped inside the package (stratified by class), for running
    without the files and without a network. Same layout and dtypes as `load_data()`."""
    with np.load(SAMPLE) as data:
        return (data["x_train"], data["y_train"]), (data["x_test"], data["y_test"])
