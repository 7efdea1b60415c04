"""keras.datasets loaders: where files are looked up, how they are read, the shipped sample."""

import gzip
import pathlib
import shutil

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.datasets import fashion_mnist, idx

IMAGES_HEADER = 16  # magic + 3 dims
LABELS_HEADER = 8


def _raw(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read()[header:], dtype=np.uint8)


def test_load_data_reads_the_four_idx_files(datasets_dir):
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert y_train.shape == (60000,) and y_test.shape == (10000,)
    assert {a.dtype for a in (x_train, y_train, x_test, y_test)} == {np.dtype(np.uint8)}
    assert np.bincount(y_train).tolist() == [6000] * 10
    folder = datasets_dir / "fashion-mnist"
    np.testing.assert_array_equal(y_test, _raw(folder / "t10k-labels-idx1-ubyte.gz", LABELS_HEADER))
    flat = _raw(folder / "t10k-images-idx3-ubyte.gz", IMAGES_HEADER)
    np.testing.assert_array_equal(x_test[123], flat[123 * 784 : 124 * 784].reshape(28, 28))
    x_train[0, 0, 0] = 1  # writable, as Keras's arrays are


def _copy_files(src, dst):
    dst.mkdir(parents=True)
    for name in idx.FILES:
        shutil.copy(src / name, dst / name)


def test_the_user_cache_is_used_when_the_variable_is_unset(datasets_dir, tmp_path, monkeypatch):
    _copy_files(datasets_dir / "fashion-mnist", tmp_path / ".layerflow/datasets/fashion-mnist")
    monkeypatch.delenv("LAYERFLOW_DATASETS")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(idx.ENV_MIRROR, "http://127.0.0.1:9")  # would fail if it tried
    (_, y_train), _ = tf.keras.datasets.fashion_mnist.load_data()
    assert y_train.shape == (60000,)


def test_missing_files_offline_raise_an_error_that_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERFLOW_DATASETS", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(idx.ENV_MIRROR, "http://127.0.0.1:9")  # a closed port: offline
    with pytest.raises(FileNotFoundError) as err:
        tf.keras.datasets.mnist.load_data()
    message = str(err.value)
    folder = tmp_path / ".layerflow" / "datasets" / "mnist"
    assert str(folder) in message and "LAYERFLOW_DATASETS" in message
    assert all(name in message for name in idx.FILES)
    assert "127.0.0.1:9" in message
    assert not folder.exists()  # nothing half-made left behind


def test_files_found_in_place_are_not_checked_against_official_checksums(datasets_dir):
    # The shared copies are a re-split whose checksums differ from the official ones.
    digest = (
        __import__("hashlib")
        .sha256((datasets_dir / "fashion-mnist" / "train-labels-idx1-ubyte.gz").read_bytes())
        .hexdigest()
    )
    assert digest != fashion_mnist.SOURCE.sha256["train-labels-idx1-ubyte.gz"]
    (_, y_train), _ = fashion_mnist.load_data()
    assert len(y_train) == 60000


def _write_idx(path, array, magic_dims=None):
    dims = array.shape if magic_dims is None else magic_dims
    header = bytes([0, 0, 8, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def _tiny_dataset(folder, n_train=6, n_test=4):
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 256, (n_train, 28, 28)), rng.integers(0, 10, n_train),
              rng.integers(0, 256, (n_test, 28, 28)), rng.integers(0, 10, n_test)]  # fmt: skip
    for name, a in zip(idx.FILES, arrays):
        _write_idx(folder / name, a)
    return arrays


def test_idx_parsing_round_trips(tmp_path, monkeypatch):
    arrays = _tiny_dataset(tmp_path / "fashion-mnist")
    monkeypatch.setenv("LAYERFLOW_DATASETS", str(tmp_path))
    (a, b), (c, d) = fashion_mnist.load_data()
    for got, want in zip((a, b, c, d), arrays):
        np.testing.assert_array_equal(got, want)


def test_corrupt_or_inconsistent_files_are_reported_by_name(tmp_path, monkeypatch):
    _tiny_dataset(tmp_path / "fashion-mnist")
    monkeypatch.setenv("LAYERFLOW_DATASETS", str(tmp_path))
    labels = tmp_path / "fashion-mnist" / "train-labels-idx1-ubyte.gz"
    _write_idx(labels, np.zeros(5), magic_dims=(6,))  # header says 6 labels, holds 5
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte.gz is truncated"):
        fashion_mnist.load_data()
    _write_idx(labels, np.zeros(5))  # 6 images but 5 labels
    with pytest.raises(ValueError, match=r"6 images but 5 labels"):
        fashion_mnist.load_data()
    labels.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="cannot be read"):
        fashion_mnist.load_data()


def test_mnist_reads_a_keras_npz_when_given_a_path(tmp_path):
    path = tmp_path / "digits.npz"
    np.savez(path, x_train=np.ones((2, 28, 28), np.uint8), y_train=np.array([1, 2], np.uint8),
             x_test=np.zeros((1, 28, 28), np.uint8), y_test=np.array([3], np.uint8))  # fmt: skip
    (x, y), (_, yt) = tf.keras.datasets.mnist.load_data(path=str(path))
    assert x.shape == (2, 28, 28) and y.tolist() == [1, 2] and yt.tolist() == [3]
    with pytest.raises(FileNotFoundError, match="no such file"):
        tf.keras.datasets.mnist.load_data(path=str(tmp_path / "missing.npz"))


def test_shipped_sample_is_small_stratified_and_real(datasets_dir):
    assert fashion_mnist.SAMPLE.stat().st_size < 5 * 2**20
    (xs, ys), (xt, yt) = fashion_mnist.load_sample()
    assert xs.dtype == np.uint8 and xs.shape[1:] == (28, 28) and len(xs) == len(ys) >= 2000
    assert len(set(np.bincount(ys).tolist())) == 1 and len(np.bincount(ys)) == 10
    assert len(set(np.bincount(yt).tolist())) == 1 and len(xt) == len(yt) >= 500
    (x_train, y_train), (x_test, _) = fashion_mnist.load_data()
    # Every sampled image is one of the real training images, with its real label.
    index = {img.tobytes(): label for img, label in zip(x_train, y_train)}
    assert all(index.get(img.tobytes()) == label for img, label in zip(xs[:200], ys[:200]))
    test_set = {img.tobytes() for img in x_test}
    assert all(img.tobytes() in test_set for img in xt[:200])


def test_sample_file_is_in_the_package_data():
    import fnmatch
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[3]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["layerflow"]
    rel = fashion_mnist.SAMPLE.relative_to(root / "layerflow").as_posix()
    assert any(fnmatch.fnmatch(rel, p) for p in patterns), (rel, patterns)
