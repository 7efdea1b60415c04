"""TF's rules for turning Python and NumPy values into tensors (framework/convert.py)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import host_array


@pytest.mark.parametrize(
    ("value", "dtype", "shape"),
    [
        (1, "int32", ()),
        (-(2**31), "int32", ()),
        (2**31 - 1, "int32", ()),
        (2**31, "int64", ()),  # too large for int32: TF widens to int64
        (-(2**31) - 1, "int64", ()),
        ([1, 2**40], "int64", (2,)),
        (1.5, "float32", ()),
        (True, "bool", ()),
        (1 + 2j, "complex128", ()),
        ([1, 2], "int32", (2,)),
        ((1, 2), "int32", (2,)),
        ([1, 2.5], "float32", (2,)),  # one float makes the list float
        ([True, False], "bool", (2,)),
        ([[1, 2], [3, 4]], "int32", (2, 2)),
        ([], "float32", (0,)),
        ([[]], "float32", (1, 0)),
    ],
)
def test_python_values_take_tf_dtypes(value, dtype, shape):
    t = tf.constant(value)
    assert t.dtype == dtype and t.shape == shape
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))


@pytest.mark.parametrize(
    "value",
    [np.arange(3), np.float64(1.5), np.float16([1, 2]), np.uint8(3), np.array([True]),
     np.arange(6, dtype=np.int16).reshape(2, 3)],
)  # fmt: skip
def test_numpy_values_keep_their_dtype(value):
    t = tf.constant(value)
    assert t.dtype == value.dtype
    np.testing.assert_array_equal(t.numpy(), value)


@pytest.mark.parametrize("value", ["abc", b"abc", ["a", "bc"], np.array(["a", "bc"])])
def test_strings_become_object_arrays_of_bytes(value):
    arr = host_array(value)
    assert arr.dtype == object
    want = np.asarray(value).tolist()
    want = (
        [w if isinstance(w, bytes) else w.encode() for w in want]
        if arr.ndim
        else (want if isinstance(want, bytes) else want.encode())
    )
    assert arr.tolist() == want
    assert tf.constant(value).dtype == tf.string


@pytest.mark.parametrize(
    "value",
    ["héllo", ["héllo", b"x"], np.array(["héllo"]), np.array(["héllo", b"x"], dtype=object)],
)
def test_string_tensors_hold_utf8_bytes_as_tf(value):
    out = tf.constant(value).numpy()
    items = [out] if np.ndim(out) == 0 else out.tolist()
    assert all(type(v) is bytes for v in items)
    assert items[0] == "héllo".encode()


@pytest.mark.parametrize(
    "elements",
    [[object()], [1, 2], ["a", 1], [None], [{"a": 1}], [[1, 2], [3]], [np.float64(1.5)]],
)
def test_object_arrays_with_anything_but_str_or_bytes_are_refused(elements):
    arr = np.empty(len(elements), dtype=object)
    arr[:] = elements
    for convert in (tf.constant, tf.convert_to_tensor, tf.Variable):
        with pytest.raises(ValueError, match="only str and bytes|Only str and bytes"):
            convert(arr)


def test_a_pickled_object_array_from_np_load_is_refused(tmp_path):
    path = tmp_path / "evil.npy"
    arr = np.empty(1, dtype=object)
    arr[0] = {"payload": [1, 2]}
    np.save(path, arr, allow_pickle=True)
    loaded = np.load(path, allow_pickle=True)
    with pytest.raises(ValueError, match="element 0 has type dict"):
        tf.constant(loaded)


def test_object_arrays_of_numbers_convert_only_with_a_numeric_dtype_as_tf():
    arr = np.array([1.5, 2], dtype=object)
    out = tf.constant(arr, dtype=tf.float32)
    assert out.dtype == tf.float32
    np.testing.assert_array_equal(out.numpy(), [1.5, 2.0])
    with pytest.raises(ValueError, match="not a number"):
        tf.constant(np.array([1.5, "a"], dtype=object), dtype=tf.float32)


@pytest.mark.parametrize("dtype", ["datetime64[s]", [("a", "i4")]])
def test_numpy_arrays_of_other_kinds_are_refused(dtype):
    with pytest.raises(ValueError, match="numbers, bools or strings"):
        tf.constant(np.zeros(2, dtype=dtype))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([[1, 2], [3]], "rectangular"),
        ([1, [2]], "rectangular"),
        ([1, None], "rectangular"),
        ([1, "a"], "mixes strings"),
        (None, "NoneType"),
        (2**63, "out of range"),
        ([1, -(2**70)], "out of range"),
    ],
)
def test_unconvertible_values_raise_value_error_naming_the_value(value, message):
    with pytest.raises(ValueError, match=message) as info:
        tf.constant(value)
    assert repr(value)[:20] in str(info.value)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(1.5, "int32"), (1.0, "int32"), ([1, 2.5], "int32"), (np.float64([1.5]), "int32"),
     (1, "bool"), (np.arange(2), "bool"), ("a", "int32"), (1 + 2j, "float32")],
)  # fmt: skip
def test_lossy_conversion_to_a_requested_dtype_is_a_type_error(value, dtype):
    with pytest.raises(TypeError, match=f"dtype {dtype}.*tf.cast"):
        tf.constant(value, dtype=dtype)


@pytest.mark.parametrize(("value", "dtype"), [(300, "uint8"), (-1, "uint8"), ([2**40], "int32"),
                                              (np.int64(2**40), "int32")])  # fmt: skip
def test_integers_out_of_range_of_the_requested_dtype_are_value_errors(value, dtype):
    with pytest.raises(ValueError, match=f"out of range for dtype {dtype}"):
        tf.constant(value, dtype=dtype)


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (1, "float32", np.float32(1)),
        (1, "int64", np.int64(1)),
        (255, "uint8", np.uint8(255)),
        ([1, 2], "float16", np.float16([1, 2])),
        (0.1, "float64", np.float64(0.1)),  # no detour through float32
        (np.arange(3), "int32", np.arange(3, dtype=np.int32)),
        (np.arange(3), "float32", np.arange(3, dtype=np.float32)),
        (np.float64([1.5]), "float32", np.float32([1.5])),
        (True, "int32", np.int32(1)),  # TF converts bools to numbers
        (np.array([True, False]), "float32", np.float32([1, 0])),
        (2, "complex64", np.complex64(2)),
    ],
)
def test_lossless_conversion_to_a_requested_dtype(value, dtype, expected):
    arr = host_array(value, dtypes.as_dtype(dtype))
    assert arr.dtype == expected.dtype
    np.testing.assert_array_equal(arr, expected)


def test_tensors_inside_lists_are_read():
    t = tf.constant([tf.constant(1.0), 2.0, tf.Variable(3.0)])
    assert t.dtype == tf.float32
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(tf.constant([[tf.constant(1)], [2]]).numpy(), [[1], [2]])


def test_host_array_does_not_alias_python_lists_and_keeps_numpy_float_dtype():
    src = np.arange(4.0, dtype=np.float32)
    assert host_array(src).dtype == np.float32
    t = tf.constant(src)
    src[0] = 99.0  # a constant is a snapshot, not a view
    assert t.numpy()[0] == 0.0


def test_python_scalars_take_their_tensor_partners_dtype():
    assert (tf.constant(2.0, dtype=tf.float64) * 3).dtype == tf.float64
    assert (tf.constant(2, dtype=tf.int64) + 1).dtype == tf.int64
    assert (tf.constant(np.uint8(2)) * 2).dtype == tf.uint8
    with pytest.raises(TypeError, match="dtype int32"):
        tf.constant(1) + 1.5
