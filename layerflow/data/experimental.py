"""`tf.data.experimental`: the pieces of TF's experimental namespace that the book uses."""

from layerflow._src.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from layerflow._src.data.sparse_elements import dense_to_sparse_batch

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality"]
__all__ += ["dense_to_sparse_batch"]


def cardinality(dataset):  # noqa: ANN001, ANN201 - mirrors TF's signature
    """The dataset's cardinality as an int64 scalar (-1 infinite, -2 unknown).

    >>> import layerflow as tf
    >>> int(tf.data.experimental.cardinality(tf.data.Dataset.range(4)))
    4
    """
    return dataset.cardinality()
