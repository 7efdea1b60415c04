"""tf.dtypes.experimental (float8/float4/int4/int2 via ml_dtypes), the quantized dtypes and
resource/variant. Enum numbers and limits as TF 2.21 reports them; casts against ml_dtypes."""

import pickle

import numpy as np
import pytest

import layerflow as tf

ml_dtypes = pytest.importorskip("ml_dtypes")
X = tf.dtypes.experimental

# name: (TF enum, is_floating, is_unsigned, min, max), from TF 2.21.
TF_FACTS = {
    "float8_e4m3fn": (25, True, False, -448, 448),
    "float8_e5m2": (24, True, False, -57344, 57344),
    "float8_e4m3fnuz": (26, True, False, -240, 240),
    "float8_e5m2fnuz": (28, True, False, -57344, 57344),
    "float8_e4m3b11fnuz": (27, True, False, -30, 30),
    "float4_e2m1fn": (33, True, False, -6, 6),
    "int4": (29, False, False, -8, 7),
    "uint4": (30, False, True, 0, 15),
    "int2": (31, False, False, -2, 1),
    "uint2": (32, False, True, 0, 3),
}


@pytest.mark.parametrize("name", sorted(TF_FACTS))
def test_ml_dtype_facts_match_tf(name):
    enum, floating, unsigned, low, high = TF_FACTS[name]
    dt = getattr(X, name)
    assert dt.name == name and repr(dt) == f"tf.{name}" and str(dt) == f"<dtype: '{name}'>"
    assert dt.as_datatype_enum == enum and int(dt) == enum
    assert dt.is_floating is floating and dt.is_integer is (not floating)
    assert dt.is_unsigned is unsigned and not dt.is_quantized
    assert dt.size == 1 and dt.as_numpy_dtype is getattr(ml_dtypes, name)
    assert float(dt.min) == low and float(dt.max) == high
    assert tf.as_dtype(name) is dt and tf.as_dtype(np.dtype(getattr(ml_dtypes, name))) is dt
    assert pickle.loads(pickle.dumps(dt)) is dt
    assert name in dir(X)


@pytest.mark.parametrize("name", sorted(n for n, f in TF_FACTS.items() if f[1]))
def test_float_casts_round_as_ml_dtypes(name):
    values = np.array([0.3, 1.3, 2.7, -0.01, 3.5, 500.0, -7.25, 1e10, np.nan], np.float32)
    dt = getattr(X, name)
    y = tf.cast(tf.constant(values), dt)
    assert y.dtype == dt
    expected = values.astype(getattr(ml_dtypes, name))
    np.testing.assert_array_equal(y.numpy().astype(np.float32), expected.astype(np.float32))
    back = tf.cast(y, tf.float32)
    assert back.dtype == tf.float32
    np.testing.assert_array_equal(back.numpy(), expected.astype(np.float32))


def test_float8_e4m3fn_values_as_tf():
    y = tf.cast(tf.constant([1.3, 2.7, -0.01, 500.0, 0.3]), X.float8_e4m3fn)
    np.testing.assert_array_equal(
        tf.cast(y, tf.float32).numpy(),
        np.array([1.25, 2.75, -0.009765625, np.nan, 0.3125], np.float32),
    )
    assert tf.constant([1.5, 2.25], dtype=X.float8_e4m3fn).numpy().tolist() == [1.5, 2.25]


def test_int4_casts_and_constants_as_tf():
    assert tf.cast(tf.constant([1, 7, -8, 9]), X.int4).numpy().astype(int).tolist() == [
        1,
        7,
        -8,
        -7,
    ]
    assert tf.cast(tf.constant([17, -17, 3]), X.int4).numpy().astype(int).tolist() == [1, -1, 3]
    assert tf.constant([1, 7], dtype=X.int4).numpy().astype(int).tolist() == [1, 7]
    with pytest.raises(ValueError, match="out of range for dtype int4"):
        tf.constant([9], dtype=X.int4)
    assert tf.constant([3], dtype=X.uint2).numpy().astype(int).tolist() == [3]
    with pytest.raises(ValueError, match="out of range for dtype uint2"):
        tf.constant([4], dtype=X.uint2)
    # NumPy arrays of these dtypes convert as they are.
    arr = np.array([1, -2], ml_dtypes.int4)
    assert tf.constant(arr).dtype == X.int4


QUANTIZED = {"qint8": (11, 1), "quint8": (12, 1), "qint16": (15, 2), "quint16": (16, 2),
             "qint32": (13, 4)}  # fmt: skip


@pytest.mark.parametrize("name", sorted(QUANTIZED))
def test_quantized_dtypes_are_named_constants(name):
    enum, size = QUANTIZED[name]
    dt = getattr(tf.dtypes, name)
    assert dt.as_datatype_enum == enum and dt.size == size and dt.is_quantized
    assert not (dt.is_floating or dt.is_integer or dt.is_bool or dt.is_complex)
    assert dt.is_numpy_compatible and dt.base_dtype is dt and dt.real_dtype is dt
    assert tf.as_dtype(name) is dt and tf.as_dtype(dt.as_numpy_dtype) is dt
    assert dt.as_numpy_dtype.names == (name,)
    assert dt in tf.dtypes.QUANTIZED_DTYPES and dt != tf.int8 and str(dt) == f"<dtype: '{name}'>"
    assert pickle.loads(pickle.dumps(dt)) is dt
    with pytest.raises(TypeError, match="Cannot find minimum value"):
        _ = dt.min
    with pytest.raises(TypeError, match="Cannot find maximum value"):
        _ = dt.max


def test_quantized_set_is_tf_s():
    assert isinstance(tf.dtypes.QUANTIZED_DTYPES, frozenset)
    assert {d.name for d in tf.dtypes.QUANTIZED_DTYPES} == set(QUANTIZED)
    assert not tf.float32.is_quantized


@pytest.mark.parametrize("name, enum", [("resource", 20), ("variant", 21)])
def test_handle_dtypes(name, enum):
    dt = getattr(tf.dtypes, name)
    assert dt.as_datatype_enum == enum and dt.size == 0 and not dt.is_quantized
    assert not dt.is_numpy_compatible and tf.as_dtype(name) is dt
    with pytest.raises(TypeError, match="no NumPy equivalent"):
        _ = dt.as_numpy_dtype


@pytest.mark.parametrize(
    "make",
    [
        lambda dt: tf.constant([1, 2], dtype=dt),
        lambda dt: tf.cast(tf.constant([1, 2]), dt),
        lambda dt: tf.zeros([2], dt),
        lambda dt: tf.ones([2], dt),
        lambda dt: tf.Variable([1], dtype=dt),
        lambda dt: tf.convert_to_tensor(np.array([1]), dtype=dt),
    ],
)
@pytest.mark.parametrize("name", ["resource", "variant"])
def test_no_tensor_of_handle_dtypes(make, name):
    dt = getattr(tf.dtypes, name)
    with pytest.raises(TypeError, match=f"tf.{name} is a handle dtype"):
        make(dt)


@pytest.mark.parametrize(
    "make, values",
    [
        (lambda dt: tf.constant([1, 2], dtype=dt), [1, 2]),
        (lambda dt: tf.cast(tf.constant([1, 2]), dt), [1, 2]),
        (lambda dt: tf.zeros([2], dt), [0, 0]),
        (lambda dt: tf.ones([2], dt), [1, 1]),
        (lambda dt: tf.Variable([1], dtype=dt), [1]),
        (lambda dt: tf.convert_to_tensor(np.array([1]), dtype=dt), [1]),
    ],
)
@pytest.mark.parametrize("name, base", [("qint8", np.int8), ("quint16", np.uint16)])
def test_tensors_of_quantized_dtypes_as_tf(make, values, name, base):
    # TF makes them all; numpy() gives the plain integers (TF's quint16 Variable has no
    # AssignVariableOp kernel, layerflow's works).
    t = make(getattr(tf.dtypes, name))
    assert t.dtype.name == name
    got = t.numpy()
    assert got.dtype == base and got.tolist() == values
