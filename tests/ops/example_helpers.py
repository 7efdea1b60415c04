"""Build layerflow Examples and feature configurations from the JSON descriptions of
fixtures/example_parsing.json (made by real TF with fixtures/make_example_fixtures.py), and
compare parsed results with TF's."""

import json
import os

import numpy as np

import layerflow as tf

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "example_parsing.json")
KINDS = {"int64": "int64_list", "float": "float_list", "bytes": "bytes_list"}
CLASSES = {"int64": "Int64List", "float": "FloatList", "bytes": "BytesList"}


def load():
    with open(FIXTURES) as f:
        return json.load(f)


def feature(kind, values):
    if kind is None:
        return tf.train.Feature()
    if kind == "bytes":
        values = [bytes.fromhex(v) for v in values]
    return tf.train.Feature(**{KINDS[kind]: getattr(tf.train, CLASSES[kind])(value=values)})


def features(desc):
    return tf.train.Features(feature={k: feature(*v) for k, v in desc.items()})


def example(desc):
    return tf.train.Example(features=features(desc))


def sequence_example(context, lists):
    return tf.train.SequenceExample(
        context=features(context),
        feature_lists=tf.train.FeatureLists(
            feature_list={
                k: tf.train.FeatureList(feature=[feature(*step) for step in steps])
                for k, steps in lists.items()
            }
        ),
    )


def config(d):
    d = dict(d)
    kind = d.pop("type")
    if kind == "RaggedFeature":
        d["partitions"] = [
            getattr(tf.io.RaggedFeature, p[0])(p[1]) for p in d.get("partitions", [])
        ]
    if kind == "FixedLenFeature" and d.get("dtype") == "string" and d.get("default_value"):
        d["default_value"] = [bytes.fromhex(v) for v in d["default_value"]]
    return getattr(tf.io, kind)(**d)


def configs(desc):
    return {k: config(v) for k, v in desc.items()}


def _unhex(values, dtype):
    if dtype == "string":
        return [bytes.fromhex(v) for v in values]
    return values


def _unhex_nested(x, dtype):
    if isinstance(x, list):
        return [_unhex_nested(v, dtype) for v in x]
    return bytes.fromhex(x) if dtype == "string" else x


def assert_same(got, want, where=""):
    """`got` (a layerflow Tensor, SparseTensor or RaggedTensor) equals TF's encoded value."""
    kind = want["kind"]
    if kind == "dense":
        assert isinstance(got, tf.Tensor), (where, type(got))
        assert got.dtype.name == want["dtype"], (where, got.dtype.name, want["dtype"])
        assert list(got.shape) == want["shape"], (where, got.shape, want["shape"])
        flat = np.asarray(got.numpy()).reshape(-1).tolist()
        assert flat == _unhex(want["values"], want["dtype"]), where
    elif kind == "sparse":
        assert isinstance(got, tf.SparseTensor), (where, type(got))
        assert got.indices.numpy().tolist() == want["indices"], where
        assert got.dense_shape.numpy().tolist() == want["dense_shape"], where
        assert got.indices.dtype.name == "int64" and got.dense_shape.dtype.name == "int64"
        assert_same(got.values, want["values"], where + ".values")
    else:
        assert isinstance(got, tf.RaggedTensor), (where, type(got))
        assert got.dtype.name == want["dtype"], where
        assert got.row_splits.dtype.name == want["splits_dtype"], where
        assert got.to_list() == _unhex_nested(want["list"], want["dtype"]), where
