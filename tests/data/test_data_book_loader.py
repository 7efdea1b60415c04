"""The book's Fashion-MNIST loader (d2l `load_data_fashion_mnist`) runs as written."""

import numpy as np
import pytest

import layerflow as tf


def load_data_fashion_mnist(batch_size, resize=None):
    """Verbatim from the book (d2l.tensorflow)."""
    mnist_train, mnist_test = tf.keras.datasets.fashion_mnist.load_data()
    # Divide all numbers by 255 so that all pixel values are between 0 and 1, add a batch
    # dimension at the last. And cast label to int32
    process = lambda X, y: (tf.expand_dims(X, axis=3) / 255, tf.cast(y, dtype="int32"))  # noqa: E731
    resize_fn = lambda X, y: (tf.image.resize_with_pad(X, resize, resize) if resize else X, y)  # noqa: E731
    return (
        tf.data.Dataset.from_tensor_slices(process(*mnist_train))
        .batch(batch_size)
        .shuffle(len(mnist_train[0]))
        .map(resize_fn),
        tf.data.Dataset.from_tensor_slices(process(*mnist_test)).batch(batch_size).map(resize_fn),
    )


def test_book_loader_batches_cover_the_training_set_each_epoch(datasets_dir):
    train_iter, test_iter = load_data_fashion_mnist(256)
    (_, y_train), (_, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    assert int(train_iter.cardinality()) == 235 and len(test_iter) == 40
    orders = []
    for _ in range(2):
        labels, firsts = [], []
        for X, y in train_iter:
            assert isinstance(X, tf.Tensor) and X.dtype == tf.float32 and X.shape[1:] == (28, 28, 1)
            assert y.dtype == tf.int32 and X.shape[0] == y.shape[0]
            labels.append(y.numpy())
            firsts.append(int(y.numpy()[:8].sum()))
        np.testing.assert_array_equal(np.bincount(np.concatenate(labels)), np.bincount(y_train))
        orders.append(firsts)
    assert orders[0] != orders[1]  # batches are reshuffled every epoch
    X, y = next(iter(test_iter))
    assert X.shape == (256, 28, 28, 1) and float(tf.reduce_max(X)) <= 1.0
    np.testing.assert_array_equal(y.numpy(), y_test[:256])


def test_book_loader_with_resize(datasets_dir):
    train_iter, _ = load_data_fashion_mnist(32, resize=64)
    X, y = next(iter(train_iter))
    assert X.shape == (32, 64, 64, 1) and y.shape == (32,)
    assert 0.0 <= float(tf.reduce_min(X)) and float(tf.reduce_max(X)) <= 1.0


@pytest.mark.parametrize("drop", [False, True])
def test_fit_style_pipeline_keeps_pairs_aligned(drop):
    x = np.arange(1000, dtype=np.float32).reshape(500, 2)
    y = (np.arange(500) % 7).astype(np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(500, seed=1).batch(64, drop)
    rows = 0
    for xb, yb in ds:
        np.testing.assert_array_equal((xb.numpy()[:, 0] // 2).astype(np.int32) % 7, yb.numpy())
        rows += xb.shape[0]
    assert rows == (448 if drop else 500)
