"""`tf.keras.preprocessing` exposes tf_keras's names, the dataset helpers as keras.utils's."""

import pytest

import layerflow as tf


def test_dataset_helpers_are_keras_utils_ones():
    p = tf.keras.preprocessing
    assert p.image_dataset_from_directory is tf.keras.utils.image_dataset_from_directory
    assert p.text_dataset_from_directory is tf.keras.utils.text_dataset_from_directory
    assert p.timeseries_dataset_from_array is tf.keras.utils.timeseries_dataset_from_array
    assert {"image", "sequence", "text"} <= set(dir(p))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(p, "nope")  # noqa: B009


def test_iterator_subclass_must_define_batches():
    it = tf.keras.preprocessing.image.Iterator(3, 2, shuffle=False, seed=None)
    assert len(it) == 2
    with pytest.raises(NotImplementedError, match="_get_batches_of_transformed_samples"):
        it[0]
    with pytest.raises(ValueError, match="batch_size"):
        tf.keras.preprocessing.image.Iterator(3, 0, shuffle=False, seed=None)
