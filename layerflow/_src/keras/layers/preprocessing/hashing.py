"""`Hashing` and `HashedCrossing` for integer features, bit-exact with TensorFlow: an integer is
hashed as its decimal string (`tf.as_string`) with farmhash `Fingerprint64`
(`to_hash_bucket_fast`), or SipHash-2-4 when a `salt` is given (`to_hash_bucket_strong`);
crosses combine the values with `FingerprintCat64` (`tf.sparse.cross_hashed`).

String tensors hash their bytes the same way (h-ktext).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer, host, on_device_of
from layerflow._src.keras.layers.preprocessing.category_encoding import (
    COUNT,
    INT,
    MULTI_HOT,
    ONE_HOT,
    check_output_mode,
    default_dtype,
    encode_categorical,
    encoded_shape,
)
from layerflow._src.ops import array_ops
from layerflow._src.ops.fingerprint import (
    M,
    fingerprint64,
    fingerprint_cat64,
    siphash24,
)

__all__ = ["HashedCrossing", "Hashing"]

_CROSS_KEY = 0xDECAFCAFFE  # tf.sparse.cross_hashed's default hash_key


def _check_integer(layer: Any, x: Any) -> np.ndarray:
    if x.dtype.name == "string":  # h-ktext: strings hash as their bytes
        return host(x)
    if not x.dtype.is_integer:
        raise TypeError(
            f"{type(layer).__name__} '{layer.name}' hashes integer inputs and string tensors; "
            f"got {x.dtype.name}. Cast whole-number floats to int64 first."
        )
    return host(x).astype(np.int64)


def _key(v: Any) -> Any:
    return v if isinstance(v, bytes) else str(int(v))  # h-ktext: bytes of string tensors


def hash_ints(values: np.ndarray, num_bins: int, salt: Any = None) -> np.ndarray:
    """Bucket of each int64 in [0, num_bins): the hash of its decimal string, mod num_bins."""
    uniq, inverse = np.unique(values, return_inverse=True)
    if salt is None:
        buckets = [fingerprint64(_key(v)) % num_bins for v in uniq]
    else:
        buckets = [siphash24(salt, _key(v)) % num_bins for v in uniq]
    return np.asarray(buckets, np.int64)[inverse].reshape(values.shape)


class Hashing(PreprocessingLayer):
    """Hash integer features into `num_bins` bins (bin 0 is kept for `mask_value` if set).

    >>> import layerflow as tf
    >>> tf.keras.layers.Hashing(num_bins=7)([[1, 2, 3]]).numpy()
    array([[5, 5, 2]])
    """

    def __init__(self, num_bins: int, mask_value: Any = None, salt: Any = None,
                 output_mode: str = INT, sparse: bool = False, **kwargs: Any) -> None:  # fmt: skip
        if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins <= 0:
            raise ValueError(
                f"Hashing: the `num_bins` for `Hashing` cannot be `None` or non-positive "
                f"values. Received: num_bins={num_bins}."
            )
        default_dtype(output_mode, kwargs)
        super().__init__(**kwargs)
        self.output_mode = check_output_mode(
            "Hashing", output_mode, (INT, ONE_HOT, MULTI_HOT, COUNT), sparse
        )
        self.num_bins = num_bins
        self.mask_value = mask_value
        self.strong_hash = salt is not None
        self.sparse = bool(sparse)
        if salt is None:
            self.salt = None
        elif isinstance(salt, tuple | list) and len(salt) == 2:
            self.salt = [int(s) for s in salt]
        elif isinstance(salt, int) and not isinstance(salt, bool):
            self.salt = [salt, salt]
        else:
            raise ValueError(
                "Hashing: the `salt` argument for `Hashing` can only be a tuple of size 2 "
                f"integers, or a single integer. Received: salt={salt}."
            )

    def _output_dtype(self, input_dtype: Any) -> Any:
        return self.compute_dtype

    def call(self, inputs: Any) -> Any:
        values = _check_integer(self, inputs)
        bins = self.num_bins
        mask = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mv = self.mask_value
            mask = values == (mv.encode() if isinstance(mv, str) else mv)
        salt = None if self.salt is None else (self.salt[0] & M, self.salt[1] & M)
        out = hash_ints(values, bins, salt)
        if mask is not None:
            out = np.where(mask, 0, out + 1)
        idx = on_device_of(out, inputs)
        return encode_categorical(
            f"Hashing '{self.name}'", idx, self.output_mode, self.num_bins, self.compute_dtype
        )

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return encoded_shape(input_shape, self.output_mode, self.num_bins)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_bins": self.num_bins,
            "salt": self.salt,
            "mask_value": self.mask_value,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }


class HashedCrossing(PreprocessingLayer):
    """Cross integer features by hashing each combination into `num_bins` bins
    (`tf.sparse.cross_hashed`), for inputs of shape [], [batch] or [batch, 1].

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.HashedCrossing(num_bins=5)
    >>> layer((tf.constant([1, 2, 3, 42, -7]), tf.constant([4, 5, 6, 42, 100]))).numpy()
    array([0, 3, 3, 3, 3])
    """

    def __init__(self, num_bins: int, output_mode: str = INT, sparse: bool = False,
                 **kwargs: Any) -> None:  # fmt: skip
        if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins <= 0:
            raise ValueError(f"HashedCrossing: `num_bins` must be a positive int, got {num_bins}.")
        default_dtype(output_mode, kwargs)
        super().__init__(**kwargs)
        self.output_mode = check_output_mode("HashedCrossing", output_mode, (INT, ONE_HOT), sparse)
        self.num_bins = num_bins
        self.sparse = bool(sparse)

    def _output_dtype(self, input_dtype: Any) -> Any:
        return self.compute_dtype

    def _check_inputs(self, shapes: list) -> None:
        if not isinstance(shapes, list | tuple) or len(shapes) < 2:
            raise ValueError(
                f"HashedCrossing '{self.name}' should be called on a list or tuple of at least "
                f"two inputs. Received: {shapes!r}."
            )
        first = list(shapes[0])
        if len(first) > 2 or (len(first) == 2 and first[-1] != 1):
            raise ValueError(
                f"All HashedCrossing '{self.name}' inputs should have shape [], [batch_size] or "
                f"[batch_size, 1]. Received shapes: {[list(s) for s in shapes]}."
            )
        if not all(list(s) == first for s in shapes[1:]):
            raise ValueError(
                f"All HashedCrossing '{self.name}' inputs should have equal shape. Received "
                f"shapes: {[list(s) for s in shapes]}."
            )

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, list | tuple):
            inputs = [x if hasattr(x, "_data") else array_ops.constant(x) for x in inputs]
        self._check_inputs([tuple(x.shape) for x in inputs] if isinstance(inputs, list) else inputs)
        cols = [_check_integer(self, x).reshape(-1) for x in inputs]
        out = np.empty(cols[0].shape, np.int64)
        for i in range(out.size):
            h = _CROSS_KEY
            for col in cols:
                v = col[i]
                h = fingerprint_cat64(h, fingerprint64(v) if isinstance(v, bytes) else int(v) & M)
            out[i] = h % self.num_bins
        out = out.reshape(tuple(inputs[0].shape))
        idx = on_device_of(out, inputs[0])
        return encode_categorical(
            f"HashedCrossing '{self.name}'", idx, self.output_mode, self.num_bins,
            self.compute_dtype,
        )  # fmt: skip

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shapes = [TensorShape(s).as_list() for s in input_shape]
        self._check_inputs(shapes)
        return encoded_shape(shapes[0], self.output_mode, self.num_bins)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_bins": self.num_bins,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }
