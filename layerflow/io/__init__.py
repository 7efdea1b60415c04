"""`tf.io`: file and tensor serialization; `save`/`load` of nested tensor structures (no pickle)."""

from layerflow._src.data.records import TFRecordOptions, TFRecordWriter
from layerflow._src.ops.example_features import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
)
from layerflow._src.ops.example_parsing_ops import parse_example, parse_single_example
from layerflow._src.ops.example_proto import decode_json_example
from layerflow._src.ops.image_codec_ops import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_jxl,
    decode_png,
    decode_webp,
    extract_jpeg_shape,
    is_jpeg,
)
from layerflow._src.ops.image_encode_ops import encode_jpeg, encode_png
from layerflow._src.ops.parsing_ops import decode_base64, decode_csv, decode_raw, encode_base64
from layerflow._src.ops.sequence_example_ops import (
    parse_sequence_example,
    parse_single_sequence_example,
)
from layerflow._src.saving.io import (
    load,
    parse_tensor,
    read_file,
    save,
    serialize_tensor,
    write_file,
)
from layerflow._src.saving.io_extra import (
    decode_compressed,
    deserialize_many_sparse,
    matching_files,
    serialize_many_sparse,
    serialize_sparse,
)
from layerflow._src.saving.weights_file import WeightsFileError
from layerflow.io import gfile

__all__ = [
    "TFRecordOptions", "TFRecordWriter",
    "WeightsFileError", "load", "parse_tensor", "read_file", "save", "serialize_tensor",
    "write_file",
    "decode_base64", "decode_csv", "decode_raw", "encode_base64",
    "decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image", "decode_jpeg", "decode_jxl",
    "decode_png",
    "decode_webp", "encode_jpeg", "encode_png", "extract_jpeg_shape", "is_jpeg",
]  # fmt: skip
__all__ += [
    "FixedLenFeature", "FixedLenSequenceFeature", "RaggedFeature", "SparseFeature",
    "VarLenFeature", "decode_json_example", "parse_example", "parse_single_example",
    "parse_sequence_example", "parse_single_sequence_example",
    "decode_compressed", "deserialize_many_sparse", "matching_files", "serialize_many_sparse",
    "serialize_sparse",
]  # fmt: skip
