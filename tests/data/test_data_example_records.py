"""End to end: Examples written to a TFRecord file with tf.io.TFRecordWriter, read back with
tf.data.TFRecordDataset and parsed with .map(parse_single_example) or batch + parse_example;
and a TFRecord file of Examples written by real TF 2.21, byte for byte."""

import os

import numpy as np
import pytest

import layerflow as tf
from tests.ops.example_helpers import example, load

pytest.importorskip("google.protobuf")
TF_FILE = os.path.join(os.path.dirname(__file__), "..", "ops", "fixtures", "examples.tfrecord")
FEATURES = {
    "image": tf.io.FixedLenFeature([2, 3], tf.float32),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "name": tf.io.FixedLenFeature([], tf.string, default_value=b"?"),
    "tags": tf.io.VarLenFeature(tf.string),
}


def _record(i):
    feats = {
        "image": tf.train.Feature(float_list=tf.train.FloatList(value=np.arange(6) * 0.5 + i)),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
        "tags": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"t"] * (i % 3))),
    }
    if i % 2 == 0:
        feats["name"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"n%d" % i]))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


@pytest.fixture
def record_file(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    with tf.io.TFRecordWriter(path, options="GZIP") as writer:
        for i in range(5):
            writer.write(_record(i))
    return path


def test_map_parse_single_example(record_file):
    ds = tf.data.TFRecordDataset(record_file, compression_type="GZIP")
    rows = list(ds.map(lambda s: tf.io.parse_single_example(s, FEATURES)))
    assert len(rows) == 5
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(row["image"].numpy(), (np.arange(6) * 0.5 + i).reshape(2, 3))
        assert row["image"].dtype == tf.float32 and row["label"].dtype == tf.int64
        assert int(row["label"]) == i
        assert row["name"].numpy() == (b"n%d" % i if i % 2 == 0 else b"?")
        assert row["tags"].values.numpy().tolist() == [b"t"] * (i % 3)


def test_batch_then_parse_example(record_file):
    ds = tf.data.TFRecordDataset(record_file, compression_type="GZIP").batch(2)
    batches = list(ds.map(lambda s: tf.io.parse_example(s, FEATURES)))
    assert [b["label"].numpy().tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    first = batches[0]
    assert first["image"].shape == (2, 2, 3)
    assert first["name"].numpy().tolist() == [b"n0", b"?"]
    tags = first["tags"]
    assert tags.indices.numpy().tolist() == [[1, 0]]
    assert tags.dense_shape.numpy().tolist() == [2, 1]


def test_tensorflow_written_file_reads_and_layerflow_writes_the_same_bytes(tmp_path):
    fix = load()
    want = [bytes.fromhex(fix["examples"][n]) for n in ("a", "b", "c")]
    got = [r.numpy() for r in tf.data.TFRecordDataset(TF_FILE)]
    assert got == want
    parsed = tf.io.parse_example(got, {"one": tf.io.FixedLenFeature([], tf.int64)})
    assert parsed["one"].numpy().tolist() == [7, -1, 2**40]
    path = str(tmp_path / "mine.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for name in ("a", "b", "c"):
            ex = example(fix["example_desc"][name])
            writer.write(ex.SerializeToString(deterministic=True))
    with open(path, "rb") as mine, open(TF_FILE, "rb") as theirs:
        assert mine.read() == theirs.read()
