"""`tf.strings`: operations on string tensors (bytes; str is encoded as UTF-8)."""

from layerflow._src.ops.string_ops import (
    as_string,
    bytes_split,
    format,
    join,
    length,
    lower,
    ngrams,
    reduce_join,
    regex_full_match,
    regex_replace,
    split,
    strip,
    substr,
    to_hash_bucket,
    to_hash_bucket_fast,
    to_hash_bucket_strong,
    to_number,
    unsorted_segment_join,
    upper,
)
from layerflow._src.ops.unicode_ops import (
    unicode_decode,
    unicode_decode_with_offsets,
    unicode_encode,
    unicode_script,
    unicode_split,
    unicode_split_with_offsets,
    unicode_transcode,
)

__all__ = [
    "as_string", "bytes_split", "format", "join", "length", "lower", "ngrams", "reduce_join",
    "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket",
    "to_hash_bucket_fast", "to_hash_bucket_strong", "to_number", "unicode_decode",
    "unicode_decode_with_offsets", "unicode_encode", "unicode_script", "unicode_split",
    "unicode_split_with_offsets", "unicode_transcode", "unsorted_segment_join", "upper",
]  # fmt: skip
