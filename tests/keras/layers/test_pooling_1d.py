"""MaxPooling1D and AveragePooling1D: NumPy references, SAME padding, config round trip."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


def _windows(x, k, s, padding):
    n = x.shape[1]
    if padding == "valid":
        starts = range(0, n - k + 1, s)
        return [x[:, i : i + k] for i in starts]
    out_n = -(-n // s)
    pad = max((out_n - 1) * s + k - n, 0)
    lo = pad // 2
    return [x[:, max(i * s - lo, 0) : min(i * s - lo + k, n)] for i in range(out_n)]


@pytest.mark.parametrize(
    ("cls", "reduce"), [(L.MaxPooling1D, np.max), (L.AveragePooling1D, np.mean)]
)
@pytest.mark.parametrize(
    ("k", "s", "padding"), [(2, None, "valid"), (3, 1, "valid"), (3, 2, "same")]
)
def test_matches_numpy(cls, reduce, k, s, padding):
    x = np.random.default_rng(0).standard_normal((2, 7, 3)).astype(np.float32)
    layer = cls(pool_size=k, strides=s, padding=padding)
    got = layer(x).numpy()
    want = np.stack([reduce(w, axis=1) for w in _windows(x, k, s or k, padding)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert tuple(layer.compute_output_shape((2, 7, 3))) == want.shape


@pytest.mark.parametrize("cls", [L.MaxPooling1D, L.AveragePooling1D])
def test_config_round_trip_and_defaults(cls):
    layer = cls()
    assert (layer.pool_size, layer.strides, layer.padding) == ((2,), (2,), "valid")
    assert layer.data_format == "channels_last"
    again = cls.from_config(cls(pool_size=3, strides=1, padding="same").get_config())
    assert (again.pool_size, again.strides, again.padding) == ((3,), (1,), "same")


def test_one_dimensional_pools_are_distinct_classes():
    assert not isinstance(L.AveragePooling1D(), L.MaxPooling1D)
    assert not isinstance(L.MaxPooling1D(), L.AveragePooling1D)
