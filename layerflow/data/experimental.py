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


from layerflow._src.data.experimental_ops import (  # noqa: E402
    RandomDataset,
    Reducer,
    assert_cardinality,
    at,
    copy_to_device,
    from_list,
    get_next_as_optional,
    get_structure,
    group_by_reducer,
    pad_to_cardinality,
    prefetch_to_device,
)
from layerflow._src.data.experimental_ops import counter as Counter  # noqa: E402, N812
from layerflow._src.data.experimental_wrappers import (  # noqa: E402
    bucket_by_sequence_length,
    choose_from_datasets,
    dense_to_ragged_batch,
    enable_debug_mode,
    enumerate_dataset,
    get_single_element,
    group_by_window,
    ignore_errors,
    map_and_batch,
    parallel_interleave,
    rejection_resample,
    sample_from_datasets,
    save,
    scan,
    shuffle_and_repeat,
    snapshot,
    take_while,
    unbatch,
    unique,
)
from layerflow._src.data.options import (  # noqa: E402
    AutoShardPolicy,
    AutotuneAlgorithm,
    AutotuneOptions,
    DistributeOptions,
    ExternalStatePolicy,
    OptimizationOptions,
    ServiceOptions,
    ThreadingOptions,
)
from layerflow._src.ops.optional_ops import Optional  # noqa: E402

SHARD_HINT = -1
from layerflow._src.data.csv_sources import CsvDataset, SqlDataset, make_csv_dataset  # noqa: E402
from layerflow._src.data.example_sources import (  # noqa: E402
    TFRecordWriter,
    make_batched_features_dataset,
    parse_example_dataset,
)

_NO_LOOKUP = (
    "layerflow has no tf.lookup tables (StaticHashTable, KeyValueTensorInitializer), which "
    "this builds on. Build a Python dict from the dataset instead: "
    "{k.numpy(): v.numpy() for k, v in dataset}, or use tf.keras.layers.StringLookup / "
    "IntegerLookup for a vocabulary."
)
_NO_VARIANT = (
    "TF passes datasets between graph ops as opaque variant tensors; layerflow datasets are "
    "Python objects and have no variant form. Pass the dataset itself."
)
# Names of TF's tf.data.experimental that have no meaning in layerflow, and why.
_ABSENT = {
    "DatasetInitializer": _NO_LOOKUP,
    "table_from_dataset": _NO_LOOKUP,
    "index_table_from_dataset": _NO_LOOKUP,
    "from_variant": _NO_VARIANT,
    "to_variant": _NO_VARIANT,
    "distributed_save": "it writes through a tf.data service dispatcher (a cluster of TF "
    "servers), which layerflow does not have. Use tf.data.experimental.save(dataset, path) "
    "(or dataset.save(path)) to write a dataset to a folder.",
    "make_saveable_from_iterator": "it makes a TF1 SaveableObject for graph-mode "
    "tf.compat.v1.train.Saver, which layerflow does not have. layerflow iterators are Python "
    "generators and cannot be checkpointed; record how many elements were consumed and use "
    "dataset.skip(n) to resume.",
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    why = _ABSENT.get(name)
    if why is None:
        raise AttributeError(f"module 'layerflow.data.experimental' has no attribute {name!r}")
    raise AttributeError(f"layerflow has no tf.data.experimental.{name}: {why}")
