"""`tf.train.Example` and its parts: protobuf messages wire-compatible with TF's example.proto.

The descriptors are built at run time from `descriptor_pb2` with TF's package (`tensorflow`),
message names, field names and numbers (tensorflow/core/example/feature.proto and
example.proto, proto3: packed floats and int64s), so `SerializeToString()` gives TF's bytes and
TF's bytes parse here; no protoc step. They live in a private descriptor pool, so importing
real TensorFlow in the same process never conflicts with them.

protobuf is an optional extra (`pip install "layerflow[proto]"`), imported the first time one
of these names is used: `import layerflow` does not load it.

>>> import layerflow as tf
>>> ex = tf.train.Example(features=tf.train.Features(feature={
...     "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2]))}))
>>> ex.SerializeToString()
b'\\n\\r\\n\\x0b\\n\\x01x\\x12\\x06\\x1a\\x04\\n\\x02\\x01\\x02'
"""

from __future__ import annotations

import functools
import json
import struct
from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.ops.string_ops import as_tensor, strings_of

NAMES = (
    "BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList", "FeatureLists",
    "Example", "SequenceExample",
)  # fmt: skip

_INSTALL = (
    "tf.train.Example, tf.io.parse_example and the other Example protocol buffers need the "
    "`protobuf` package, which is not installed. Install it with "
    '`pip install "layerflow[proto]"` (or `pip install protobuf`).'
)


def require_protobuf() -> Any:
    """The `google.protobuf` package, or an ImportError that says how to install it."""
    try:
        import google.protobuf as pb
        from google.protobuf import descriptor_pb2  # noqa: F401 - checks a usable install
    except ImportError as err:
        raise ImportError(_INSTALL) from err
    return pb


def _files() -> tuple[Any, Any]:
    from google.protobuf import descriptor_pb2 as d

    f = d.FieldDescriptorProto
    rep, opt = f.LABEL_REPEATED, f.LABEL_OPTIONAL

    def field(name: str, number: int, label: int, kind: int, type_name: str = "",
              oneof: int | None = None, packed: bool = False) -> Any:  # fmt: skip
        out = f(name=name, number=number, label=label, type=kind)
        if type_name:
            out.type_name = type_name
        if oneof is not None:
            out.oneof_index = oneof
        if packed:
            out.options.packed = True
        return out

    def message(name: str, fields: list, nested: tuple = (), map_entry: bool = False) -> Any:
        m = d.DescriptorProto(name=name, field=fields, nested_type=list(nested))
        if map_entry:
            m.options.map_entry = True
        return m

    def map_of(entry: str, value_type: str) -> Any:
        return message(entry, [field("key", 1, opt, f.TYPE_STRING),
                               field("value", 2, opt, f.TYPE_MESSAGE, value_type)],
                       map_entry=True)  # fmt: skip

    msg = f.TYPE_MESSAGE
    feature = d.FileDescriptorProto(
        name="tensorflow/core/example/feature.proto", package="tensorflow", syntax="proto3"
    )
    feature.message_type.extend([
        message("BytesList", [field("value", 1, rep, f.TYPE_BYTES)]),
        message("FloatList", [field("value", 1, rep, f.TYPE_FLOAT, packed=True)]),
        message("Int64List", [field("value", 1, rep, f.TYPE_INT64, packed=True)]),
        message("Feature", [field("bytes_list", 1, opt, msg, ".tensorflow.BytesList", 0),
                            field("float_list", 2, opt, msg, ".tensorflow.FloatList", 0),
                            field("int64_list", 3, opt, msg, ".tensorflow.Int64List", 0)]),
        message("Features",
                [field("feature", 1, rep, msg, ".tensorflow.Features.FeatureEntry")],
                [map_of("FeatureEntry", ".tensorflow.Feature")]),
        message("FeatureList", [field("feature", 1, rep, msg, ".tensorflow.Feature")]),
        message("FeatureLists",
                [field("feature_list", 1, rep, msg, ".tensorflow.FeatureLists.FeatureListEntry")],
                [map_of("FeatureListEntry", ".tensorflow.FeatureList")]),
    ])  # fmt: skip
    feature.message_type[3].oneof_decl.add(name="kind")
    example = d.FileDescriptorProto(
        name="tensorflow/core/example/example.proto", package="tensorflow", syntax="proto3",
        dependency=[feature.name],
    )  # fmt: skip
    example.message_type.extend([
        message("Example", [field("features", 1, opt, msg, ".tensorflow.Features")]),
        message("SequenceExample", [field("context", 1, opt, msg, ".tensorflow.Features"),
                                    field("feature_lists", 2, opt, msg,
                                          ".tensorflow.FeatureLists")]),
    ])  # fmt: skip
    return feature, example


@functools.cache
def classes() -> dict[str, type]:
    """The message classes by name, built once (the first use imports protobuf)."""
    require_protobuf()
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    for file in _files():
        pool.AddSerializedFile(file.SerializeToString())
    out = {}
    for name in NAMES:
        cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{name}"))
        # Found by pickle (and shown in reprs) at this module's attribute of the same name.
        cls.__module__, cls.__qualname__ = __name__, name
        out[name] = cls
    return out


def __getattr__(name: str) -> Any:
    if name in NAMES:
        return classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def varint(n: int) -> bytes:
    """`n` as a protobuf base-128 varint (also used by saving/io_extra's TensorProto)."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def len_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _feature_bytes(feature: Any) -> bytes:
    """A Feature as TF's JSON decoder writes it: repeated numbers unpacked, one tag each."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return b""
    values = getattr(feature, kind).value
    if kind == "bytes_list":
        body = b"".join(len_field(1, v) for v in values)
    elif kind == "float_list":
        body = b"".join(b"\x0d" + struct.pack("<f", v) for v in values)
    else:
        body = b"".join(b"\x08" + varint(v & 0xFFFFFFFFFFFFFFFF) for v in values)
    number = {"bytes_list": 1, "float_list": 2, "int64_list": 3}[kind]
    return len_field(number, body)


def _feature_order(text: Any) -> list[str]:
    """The feature keys in the order the JSON text gives them (TF writes them so)."""
    doc = json.loads(text, object_pairs_hook=lambda pairs: pairs)
    keys: list[str] = []
    for name, value in doc if isinstance(doc, list) else ():
        if name == "features" and isinstance(value, list):
            for inner, entries in value:
                if inner == "feature" and isinstance(entries, list):
                    keys = [k for k, _ in entries]
    return list(dict.fromkeys(reversed(keys)))[::-1]  # a repeated key keeps its last place


def _json_example_bytes(text: Any, msg: Any) -> bytes:
    if not msg.HasField("features"):
        return b""
    fmap = msg.features.feature
    order = [k for k in _feature_order(text) if k in fmap]
    order += sorted(k for k in fmap if k not in set(order))
    entries = b"".join(
        len_field(1, len_field(1, k.encode("utf-8")) + len_field(2, _feature_bytes(fmap[k])))
        for k in order
    )
    return len_field(1, entries)


def decode_json_example(json_examples: Any, name: Any = None) -> Any:
    """Convert JSON-encoded `tf.train.Example`s (protobuf's JSON mapping) to binary protos.

    Each string of `json_examples` holds one Example as JSON; the result has the same shape and
    holds the serialized Examples, byte for byte as TF writes them (features in the JSON's order,
    numbers unpacked). Invalid JSON or fields raise `InvalidArgumentError`.

    >>> import layerflow as tf
    >>> j = '{"features": {"feature": {"x": {"int64List": {"value": ["1"]}}}}}'
    >>> tf.io.decode_json_example(j).numpy()
    b'\\n\\x0b\\n\\t\\n\\x01x\\x12\\x04\\x1a\\x02\\x08\\x01'
    """
    example = classes()["Example"]
    from google.protobuf import json_format

    arr = strings_of(json_examples, "decode_json_example")
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    for i, text in enumerate(arr.reshape(-1)):
        try:
            msg = json_format.Parse(text, example())
            flat[i] = _json_example_bytes(text, msg)
        except (json_format.ParseError, UnicodeDecodeError, ValueError) as err:
            raise errors.InvalidArgumentError(
                None, "decode_json_example",
                f"Error while parsing JSON: {err}; element {i} is not a JSON-encoded "
                "tf.train.Example.",
            ) from None  # fmt: skip
    return as_tensor(out)
