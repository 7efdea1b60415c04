"""`Discretization`: bucket values by boundaries, given or found by `adapt` from approximate
quantiles (tf_keras's summarize / merge / compress summaries, float32)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer, host, listify
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
from layerflow._src.ops import array_ops, math_ops, segment_ops

__all__ = ["Discretization"]


def summarize(values: np.ndarray, epsilon: float) -> np.ndarray:
    """Every `len / (1 / epsilon)`-th sorted value, each weighted by that step."""
    values = np.sort(values.reshape(-1).astype(np.float32))
    increment = int(np.float32(values.size) / np.float32(1.0 / epsilon))
    step = max(increment, 1)
    bounds = values[increment::step]
    return np.stack([bounds, np.full(bounds.shape, np.float32(step), np.float32)])


def compress(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """Re-bin a summary at `epsilon` precision by interpolating cumulative weights."""
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    cum_pct = cum / cum[-1]
    new_bins = np.interp(percents, cum_pct, summary[0])
    cum = np.interp(percents, cum_pct, cum)
    new_weights = cum - np.concatenate((np.array([0]), cum[:-1]))
    return np.stack((new_bins, new_weights)).astype(np.float32)


def merge_summaries(prev: np.ndarray, nxt: np.ndarray, epsilon: float) -> np.ndarray:
    merged = np.concatenate((prev, nxt), axis=1)
    merged = merged[:, np.argsort(merged[0], kind="stable")]
    return compress(merged, epsilon)


class Discretization(PreprocessingLayer):
    """Bucket values: `bin_boundaries=[0., 1., 2.]` gives bins (-inf, 0), [0, 1), [1, 2),
    [2, inf); or `num_bins` boundaries found by `adapt`.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    >>> layer([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]]).numpy()
    array([[0, 2, 3, 1],
           [1, 3, 2, 1]])
    """

    def __init__(self, bin_boundaries: Any = None, num_bins: int | None = None,
                 epsilon: float = 0.01, output_mode: str = INT, sparse: bool = False,
                 **kwargs: Any) -> None:  # fmt: skip
        default_dtype(output_mode, kwargs)
        super().__init__(**kwargs)
        self.output_mode = check_output_mode(
            "Discretization", output_mode, (INT, ONE_HOT, MULTI_HOT, COUNT), sparse
        )
        if num_bins is not None and num_bins < 0:
            raise ValueError(
                "Discretization: `num_bins` must be greater than or equal to 0. You passed "
                f"`num_bins={num_bins}`."
            )
        bin_boundaries = listify(bin_boundaries)
        # Keras 2 refuses both; an adapted layer's config carries both (its learned boundaries
        # and num_bins, as Keras 3 does), so both are accepted when they agree.
        if (
            num_bins is not None
            and bin_boundaries is not None
            and (len(bin_boundaries) != num_bins - 1)
        ):
            raise ValueError(
                "Discretization: both `num_bins` and `bin_boundaries` should not be set (unless "
                f"len(bin_boundaries) == num_bins - 1). You passed `num_bins={num_bins}` and "
                f"`bin_boundaries={bin_boundaries}`."
            )
        if bin_boundaries is not None and list(bin_boundaries) != sorted(bin_boundaries):
            raise ValueError(
                f"Discretization: `bin_boundaries` must be sorted, got {bin_boundaries}."
            )
        self.input_bin_boundaries = bin_boundaries
        self.bin_boundaries = bin_boundaries if bin_boundaries is not None else []
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.sparse = bool(sparse)
        self.__dict__["_summary"] = np.zeros((2, 0), np.float32)

    def build(self, input_shape: Any) -> None:
        self.built = True

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Find `num_bins - 1` boundaries at the approximate quantiles of `data`."""
        if self.input_bin_boundaries is not None and self.num_bins is None:
            raise ValueError(
                f"Cannot adapt a Discretization layer ('{self.name}') that has been initialized "
                "with `bin_boundaries`, use `num_bins` instead. You passed "
                f"`bin_boundaries={self.input_bin_boundaries}`."
            )
        if not self.num_bins:
            raise ValueError(
                f"Discretization '{self.name}': set `num_bins` to adapt the bin boundaries."
            )
        super().adapt(data, batch_size=batch_size, steps=steps)

    def reset_state(self) -> None:
        self.__dict__["_summary"] = np.zeros((2, 0), np.float32)

    def update_state(self, data: Any) -> None:
        batch = summarize(np.asarray(host(data), np.float32), self.epsilon)
        self.__dict__["_summary"] = merge_summaries(batch, self._summary, self.epsilon)

    def finalize_state(self) -> None:
        # As tf_keras: only an adapt in progress has boundaries to compute (set_weights also
        # calls this, on layers built from given boundaries).
        if self.num_bins is None or not self._summary.size:
            return
        bounds = compress(self._summary, 1.0 / self.num_bins)[0, :-1]
        self.bin_boundaries = [float(b) for b in bounds.astype(np.float32)]

    def _output_dtype(self, input_dtype: Any) -> Any:
        return self.compute_dtype

    def call(self, inputs: Any) -> Any:
        x = inputs
        bounds = np.asarray(self.bin_boundaries, np.float64)
        flat = array_ops.reshape(math_ops.cast(x, "float64"), [1, -1])
        seq = array_ops.constant(bounds.reshape(1, -1))
        if bounds.size:
            idx = segment_ops.searchsorted(seq, flat, side="right")
            idx = array_ops.reshape(idx, array_ops.shape(x))
        else:
            idx = math_ops.cast(array_ops.zeros_like(x), "int32")
        return encode_categorical(
            f"Discretization '{self.name}'", idx, self.output_mode, len(self.bin_boundaries) + 1,
            self.compute_dtype,
        )  # fmt: skip

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return encoded_shape(input_shape, self.output_mode, len(self.bin_boundaries) + 1)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "bin_boundaries": self.input_bin_boundaries
            if not self.is_adapted
            else list(self.bin_boundaries),
            "num_bins": self.num_bins,
            "epsilon": self.epsilon,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }
