"""`tf.nest`: nested structures of lists, tuples and dicts."""

from layerflow._src.utils.nest import (
    assert_same_structure,
    flatten,
    is_nested,
    map_structure,
    pack_sequence_as,
)
