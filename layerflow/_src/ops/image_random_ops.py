"""`tf.image.random_*` colour adjustments and their `stateless_random_*` forms.

Each draws one factor per call (TF's rule: one for the whole batch) from `tf.random.uniform`
(seeded as TF: global and op seeds; a fresh draw per call of a `tf.function`) or from
`tf.random.stateless_uniform` (depends only on `seed`, shape [2]; not bit-identical to TF's
draws), then applies the matching `adjust_*`, so gradients reach the image.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.ops.image_color_ops import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
)
from layerflow._src.ops.random_ops import uniform
from layerflow._src.ops.stateless_random_ops import stateless_uniform


def _check_delta(max_delta: Any, upper: float | None = None) -> None:
    if upper is not None and max_delta > upper:
        raise ValueError(f"max_delta must be <= {upper}, got {max_delta}.")
    if max_delta < 0:
        raise ValueError(f"max_delta must be non-negative, got {max_delta}.")


def _check_range(lower: Any, upper: Any) -> None:
    if upper <= lower:
        raise ValueError(f"upper must be > lower, got lower={lower} and upper={upper}.")
    if lower < 0:
        raise ValueError(f"lower must be non-negative, got {lower}.")


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Any:
    """`adjust_brightness` by a delta drawn uniformly from [-max_delta, max_delta).

    >>> import layerflow as tf
    >>> x = tf.image.random_brightness(tf.zeros((2, 2, 3)), 0.2, seed=1)
    >>> bool(tf.reduce_all(tf.abs(x) <= 0.2))
    True
    """
    _check_delta(max_delta)
    return adjust_brightness(image, uniform([], -max_delta, max_delta, seed=seed))


def stateless_random_brightness(image: Any, max_delta: float, seed: Any) -> Any:
    """`random_brightness` whose delta depends only on `seed`."""
    _check_delta(max_delta)
    return adjust_brightness(image, stateless_uniform([], seed, -max_delta, max_delta))


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Any:
    """`adjust_contrast` by a factor drawn uniformly from [lower, upper)."""
    _check_range(lower, upper)
    return adjust_contrast(image, uniform([], lower, upper, seed=seed))


def stateless_random_contrast(image: Any, lower: float, upper: float, seed: Any) -> Any:
    """`random_contrast` whose factor depends only on `seed`."""
    _check_range(lower, upper)
    return adjust_contrast(image, stateless_uniform([], seed, lower, upper))


def random_hue(image: Any, max_delta: float, seed: int | None = None) -> Any:
    """`adjust_hue` by a delta drawn uniformly from [-max_delta, max_delta), max_delta <= 0.5."""
    _check_delta(max_delta, 0.5)
    return adjust_hue(image, uniform([], -max_delta, max_delta, seed=seed))


def stateless_random_hue(image: Any, max_delta: float, seed: Any) -> Any:
    """`random_hue` whose delta depends only on `seed`."""
    _check_delta(max_delta, 0.5)
    return adjust_hue(image, stateless_uniform([], seed, -max_delta, max_delta))


def random_saturation(image: Any, lower: float, upper: float, seed: int | None = None) -> Any:
    """`adjust_saturation` by a factor drawn uniformly from [lower, upper)."""
    _check_range(lower, upper)
    return adjust_saturation(image, uniform([], lower, upper, seed=seed))


def stateless_random_saturation(image: Any, lower: float, upper: float, seed: Any = None) -> Any:
    """`random_saturation` whose factor depends only on `seed`."""
    _check_range(lower, upper)
    return adjust_saturation(image, stateless_uniform([], seed, lower, upper))
