"""`tf.keras.datasets.mnist`: LeCun's 70,000 28x28 grayscale handwritten digits."""

from __future__ import annotations

import pathlib

from layerflow._src.keras.datasets import idx, keras_cache, safe_load

SOURCE = idx.Source(
    name="mnist",
    mirrors=(
        "https://storage.googleapis.com/cvdf-datasets/mnist",
        "https://ossci-datasets.s3.amazonaws.com/mnist",
    ),
    sha256={
        "train-images-idx3-ubyte.gz": (
            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"
        ),
        "train-labels-idx1-ubyte.gz": (
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"
        ),
        "t10k-images-idx3-ubyte.gz": (
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"
        ),
        "t10k-labels-idx1-ubyte.gz": (
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"
        ),
    },
)

# Keras's own copy: `mnist.npz` in `$KERAS_HOME/datasets/` or `~/.keras/datasets/`.
KERAS_NPZ_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


def _read_npz(npz: pathlib.Path | str) -> idx.Splits:
    data = safe_load.load_npz(npz)
    safe_load.require(data, ("x_train", "y_train", "x_test", "y_test"), npz)
    if any(data[k].dtype.hasobject for k in ("x_train", "y_train", "x_test", "y_test")):
        raise ValueError(f"{npz} holds object arrays; an MNIST file holds uint8 arrays.")
    return (data["x_train"], data["y_train"]), (data["x_test"], data["y_test"])


def load_data(path: str | None = None) -> idx.Splits:
    """The MNIST training and test sets as NumPy uint8 arrays.

    Returns `(x_train, y_train), (x_test, y_test)`: images (60000, 28, 28) and (10000, 28, 28),
    labels 0-9. Files are looked up in `$LAYERFLOW_DATASETS/mnist/`, then
    `~/.layerflow/datasets/mnist/`, then Keras's cache (`mnist.npz`, SHA-256 checked, in
    `$KERAS_HOME/datasets/` or `~/.keras/datasets/`), and downloaded (checksummed) when missing.
    `path` may name a Keras `mnist.npz` file to read instead.

    >>> import layerflow as tf
    >>> (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()  # doctest: +SKIP
    """
    if path is not None and path != "mnist.npz":
        npz = pathlib.Path(path).expanduser()
        if not npz.is_file():
            raise FileNotFoundError(
                f"mnist.load_data(path={path!r}): no such file. Pass a Keras mnist.npz file, or "
                "no path to use the IDX files."
            )
        return _read_npz(npz)
    if idx.locate(SOURCE.name) is None:
        cached = keras_cache.find("mnist.npz", KERAS_NPZ_SHA256)
        if cached is not None:
            return _read_npz(cached)
    return idx.load(SOURCE)
