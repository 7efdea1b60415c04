"""tf.train.Example and friends: TF's field names, and bytes identical to TF 2.21's (fixtures);
tf.io.decode_json_example; protobuf imported lazily, with a clear error when it is absent."""

import os
import pickle
import subprocess
import sys

import pytest

import layerflow as tf
from tests.ops.example_helpers import example, features, load, sequence_example

pytest.importorskip("google.protobuf")
FIX = load()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("name", sorted(FIX["example_desc"]))
def test_example_bytes_equal_tensorflows(name):
    ex = example(FIX["example_desc"][name])
    assert ex.SerializeToString(deterministic=True).hex() == FIX["examples"][name]


@pytest.mark.parametrize("key", sorted(FIX["plain"]))
def test_one_feature_example_bytes_equal_tensorflows(key):
    ex = example({key: FIX["example_desc"]["a"][key]})
    assert ex.SerializeToString().hex() == FIX["plain"][key]


@pytest.mark.parametrize("name", sorted(FIX["sequence_desc"]))
def test_sequence_example_bytes_equal_tensorflows(name):
    se = sequence_example(*FIX["sequence_desc"][name])
    assert se.SerializeToString(deterministic=True).hex() == FIX["sequences"][name]


def test_tensorflow_bytes_parse_back_with_tf_field_names():
    ex = tf.train.Example.FromString(bytes.fromhex(FIX["examples"]["a"]))
    feats = ex.features.feature
    assert list(feats["ids"].int64_list.value) == [1, 2, 3]
    assert list(feats["w"].float_list.value) == [0.5, -1.25]
    assert list(feats["s"].bytes_list.value) == [b"x", b"yz"]
    assert feats["ids"].WhichOneof("kind") == "int64_list"
    other = tf.train.Example()
    other.ParseFromString(bytes.fromhex(FIX["examples"]["a"]))
    assert other == ex
    se = tf.train.SequenceExample.FromString(bytes.fromhex(FIX["sequences"]["s1"]))
    steps = se.feature_lists.feature_list["tok"].feature
    assert [list(s.int64_list.value) for s in steps] == [[1, 2], [3, 4], [5, 6]]
    assert se.context.feature["len"].int64_list.value[0] == 3


def test_messages_build_like_tensorflows_and_pickle():
    ex = example({"x": ["float", [1.5]]})
    ex.features.feature["y"].bytes_list.value.append(b"q")
    assert ex.features.feature["y"].bytes_list.value[0] == b"q"
    assert pickle.loads(pickle.dumps(ex)) == ex
    assert type(ex).__name__ == "Example" and ex.DESCRIPTOR.full_name == "tensorflow.Example"
    assert {f.name for f in tf.train.Feature.DESCRIPTOR.fields} == {
        "bytes_list", "float_list", "int64_list"}  # fmt: skip
    with pytest.raises(TypeError):
        tf.train.Int64List(value=["not a number"])
    assert isinstance(features({}), tf.train.Features)
    assert {"Example", "SequenceExample", "BytesList"} <= set(dir(tf.train))


@pytest.mark.parametrize("i", range(len(FIX["json"])))
def test_decode_json_example_equals_tensorflow(i):
    text, want = FIX["json"][i]
    assert tf.io.decode_json_example(text).numpy().hex() == want
    batch = tf.io.decode_json_example([[text, text]])
    assert batch.shape == (1, 2) and batch.numpy()[0, 1].hex() == want


def test_decode_json_example_rejects_bad_json():
    for bad in ['{"bad": 1}', "not json", '{"features": 3}']:
        with pytest.raises(tf.errors.InvalidArgumentError, match="JSON"):
            tf.io.decode_json_example(bad)


def _run(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)  # fmt: skip


def test_import_layerflow_does_not_load_protobuf():
    r = _run("import sys, layerflow as tf; tf.io.parse_example; tf.train.Checkpoint;"
             "print('google.protobuf' in sys.modules)")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_missing_protobuf_gives_an_install_hint():
    r = _run(
        "import sys; sys.modules['google.protobuf'] = None\n"
        "import layerflow as tf\n"
        "for f in (lambda: tf.train.Example, lambda: tf.io.parse_single_example(b'', "
        "{'x': tf.io.VarLenFeature(tf.int64)})):\n"
        "    try: f()\n"
        "    except ImportError as e: print(e)\n"
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and all('pip install "layerflow[proto]"' in line for line in lines)
