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
