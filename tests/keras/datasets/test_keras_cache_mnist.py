"""mnist and fashion_mnist read Keras's cache (`$KERAS_HOME/datasets`, `~/.keras/datasets`)
after `$LAYERFLOW_DATASETS` and layerflow's own cache."""

import gzip
import hashlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.datasets import mnist


@pytest.fixture
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERFLOW_DATASETS", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("LAYERFLOW_DATASETS_MIRROR", "http://127.0.0.1:9")  # refuses at once
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    return tmp_path


def _arrays(seed):
    rng = np.random.RandomState(seed)
    return {
        "x_train": rng.randint(0, 256, (5, 28, 28)).astype(np.uint8),
        "y_train": rng.randint(0, 10, 5).astype(np.uint8),
        "x_test": rng.randint(0, 256, (3, 28, 28)).astype(np.uint8),
        "y_test": rng.randint(0, 10, 3).astype(np.uint8),
    }


def test_mnist_reads_keras_mnist_npz_when_its_hash_matches(offline, monkeypatch):
    folder = offline / "kh" / "datasets"
    folder.mkdir(parents=True)
    want = _arrays(0)
    np.savez(folder / "mnist.npz", **want)
    with pytest.raises(FileNotFoundError, match="mnist is not available"):
        tf.keras.datasets.mnist.load_data()  # Keras's real hash: the stand-in is not used
    digest = hashlib.sha256((folder / "mnist.npz").read_bytes()).hexdigest()
    monkeypatch.setattr(mnist, "KERAS_NPZ_SHA256", digest)
    (x, y), (xt, yt) = tf.keras.datasets.mnist.load_data()
    np.testing.assert_array_equal(x, want["x_train"])
    np.testing.assert_array_equal(yt, want["y_test"])


def _idx(array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return gzip.compress(header + array.tobytes())


@pytest.mark.parametrize("where", ["keras_home", "dot_keras"])
def test_fashion_mnist_reads_the_keras_cache(offline, where):
    base = offline / "kh" if where == "keras_home" else offline / "home" / ".keras"
    folder = base / "datasets" / "fashion-mnist"
    folder.mkdir(parents=True)
    want = _arrays(1)
    names = {
        "x_train": "train-images-idx3-ubyte.gz",
        "y_train": "train-labels-idx1-ubyte.gz",
        "x_test": "t10k-images-idx3-ubyte.gz",
        "y_test": "t10k-labels-idx1-ubyte.gz",
    }
    for key, name in names.items():
        (folder / name).write_bytes(_idx(want[key]))
    (x, y), (xt, yt) = tf.keras.datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x, want["x_train"])
    np.testing.assert_array_equal(yt, want["y_test"])


def test_layerflow_datasets_comes_first(datasets_dir, offline, monkeypatch):
    monkeypatch.setenv("LAYERFLOW_DATASETS", str(datasets_dir))
    folder = offline / "kh" / "datasets" / "fashion-mnist"
    folder.mkdir(parents=True)
    small = _arrays(2)
    for name, key in (("train-images-idx3-ubyte.gz", "x_train"),
                      ("train-labels-idx1-ubyte.gz", "y_train"),
                      ("t10k-images-idx3-ubyte.gz", "x_test"),
                      ("t10k-labels-idx1-ubyte.gz", "y_test")):  # fmt: skip
        (folder / name).write_bytes(_idx(small[key]))
    (x, _), _ = tf.keras.datasets.fashion_mnist.load_data()
    assert x.shape == (60000, 28, 28)  # the shared files, not the 5-image Keras cache
