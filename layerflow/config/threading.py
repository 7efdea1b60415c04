"""`tf.config.threading`: how many threads ops may use."""

from layerflow._src.framework.runtime_config import (
    get_inter_op_parallelism_threads,
    get_intra_op_parallelism_threads,
    set_inter_op_parallelism_threads,
    set_intra_op_parallelism_threads,
)
