"""`tf.random.experimental`: the older spellings of the Generator API and stateless helpers."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.ops.random_generator import (
    Algorithm,
    Generator,
    create_rng_state,
    get_global_generator,
    set_global_generator,
)
from layerflow._src.ops.stateless_random_ops import fold_in as stateless_fold_in
from layerflow._src.ops.stateless_random_ops import split as stateless_split
from layerflow._src.ops.stateless_shuffle_ops import index_shuffle, stateless_shuffle
