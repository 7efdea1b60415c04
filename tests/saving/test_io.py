"""tf.io: files, TensorProto bytes identical to TF's, structures, and the seed's np.save."""

import numpy as np
import pytest

import layerflow as tf

# Bytes produced by TensorFlow 2.21's tf.io.serialize_tensor (recorded from the peers venv).
TF_FLOAT = (
    b'\x08\x01\x12\x08\x12\x02\x08\x02\x12\x02\x08\x02"\x10'
    b"\x00\x00\xc0?\x00\x00\x00@\x00\x00@@\x00\x00\x80@"
)
TF_INT = b'\x08\x03\x12\x00"\x04\x07\x00\x00\x00'
TF_STRINGS = b"\x08\x07\x12\x04\x12\x02\x08\x02B\x02abB\x01c"


def test_serialize_tensor_matches_tensorflow_bytes():
    assert tf.io.serialize_tensor(tf.constant([[1.5, 2.0], [3.0, 4.0]])).numpy() == TF_FLOAT
    assert tf.io.serialize_tensor(tf.constant(7)).numpy() == TF_INT
    assert tf.io.serialize_tensor(tf.constant([b"ab", b"c"])).numpy() == TF_STRINGS


def test_parse_tensor_reads_tensorflow_bytes():
    t = tf.io.parse_tensor(TF_FLOAT, out_type=tf.float32)
    np.testing.assert_array_equal(t.numpy(), [[1.5, 2.0], [3.0, 4.0]])
    assert t.dtype == tf.float32
    assert tf.io.parse_tensor(TF_INT, tf.int32).numpy() == 7
    assert list(tf.io.parse_tensor(TF_STRINGS, tf.string).numpy()) == [b"ab", b"c"]


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint8", "bool", "float16", "complex64"])
def test_serialize_round_trip(dtype):
    x = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    back = tf.io.parse_tensor(tf.io.serialize_tensor(tf.constant(x)), out_type=dtype)
    assert back.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(back.numpy(), x)


def test_parse_tensor_type_mismatch_and_garbage():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Type mismatch.*float32.*int32"):
        tf.io.parse_tensor(TF_FLOAT, out_type=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_tensor(TF_FLOAT[:-3], out_type=tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_tensor(b"\x0a\xff\xff\xff", out_type=tf.float32)


def test_write_and_read_file(tmp_path):
    path = str(tmp_path / "blob")
    tf.io.write_file(path, tf.constant(b"\x00bytes\xff"))
    got = tf.io.read_file(path)
    assert got.dtype == tf.string and got.numpy() == b"\x00bytes\xff"
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.read_file(str(tmp_path / "absent"))


def test_save_and_load_nested_structures(tmp_path):
    x, y = tf.range(4), tf.zeros(4)
    structure = {"pair": [x, y], "t": (y, None, 3, "label"), "v": tf.Variable([[1.0, 2.0]])}
    path = tmp_path / "s.safetensors"
    tf.io.save(path, structure)
    back = tf.io.load(path)
    assert set(back) == {"pair", "t", "v"}
    assert isinstance(back["pair"], list) and isinstance(back["t"], tuple)
    np.testing.assert_array_equal(back["pair"][0].numpy(), [0, 1, 2, 3])
    assert back["pair"][0].dtype == tf.int32 and back["pair"][1].dtype == tf.float32
    assert back["t"][1:] == (None, 3, "label")
    np.testing.assert_array_equal(back["v"].numpy(), [[1.0, 2.0]])


def test_save_refuses_what_it_cannot_describe(tmp_path):
    with pytest.raises(TypeError, match="dict keys must be str"):
        tf.io.save(tmp_path / "s", {1: tf.zeros(1)})
    with pytest.raises(TypeError, match="cannot store object"):
        tf.io.save(tmp_path / "s", [object()])


def test_seed_numpy_save_of_tensor_list_and_dict(tmp_path):
    x = tf.range(4)
    np.save(tmp_path / "x-file.npy", x)
    x2 = np.load(tmp_path / "x-file.npy", allow_pickle=True)
    np.testing.assert_array_equal(x2, [0, 1, 2, 3])
    y = tf.zeros(4)
    np.save(tmp_path / "xy-files.npy", [x, y])
    x2, y2 = np.load(tmp_path / "xy-files.npy", allow_pickle=True)
    np.testing.assert_array_equal(x2, [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y2, [0.0, 0.0, 0.0, 0.0])
    mydict = {"x": x, "y": y}
    np.save(tmp_path / "mydict.npy", mydict)
    mydict2 = np.load(tmp_path / "mydict.npy", allow_pickle=True)
    got = mydict2.item()
    assert got["x"].dtype == tf.int32 and got["y"].dtype == tf.float32
    np.testing.assert_array_equal(got["x"].numpy(), [0, 1, 2, 3])
