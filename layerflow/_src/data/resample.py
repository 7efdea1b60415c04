"""`Dataset.rejection_resample`: TF's algorithm on layerflow's dataset nodes.

With a = target / initial (per class), m = min(a) and acceptance (a - m) / (max(a) - m), the
result draws from the original stream with probability m and otherwise from the stream of
elements kept with their class's acceptance probability; both yield `(class, element)`. When
`initial_dist` is not given it is estimated from the classes seen so far (so m and the
acceptance change as the estimate does).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import UNKNOWN
from layerflow._src.data.transforms import ShuffleDataset, _Unary
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike


def _probs(initial: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float]:
    ratio = target / (initial + np.finfo(np.float64).tiny)
    hi, lo = ratio.max(), ratio.min()
    accept = (ratio - lo) / (hi - lo) if hi > lo else np.zeros_like(ratio)
    return accept, float(lo)


def _class_of(class_func: Any, element: Any, n: int) -> int:
    value = structure.call(class_func, element)
    k = value.numpy() if isinstance(value, TensorLike) else np.asarray(value)
    if np.ndim(k) != 0 or np.asarray(k).dtype.kind not in "iu":
        raise TypeError(f"rejection_resample: class_func must return an integer scalar, got {k}.")
    k = int(k)
    if not 0 <= k < n:
        raise errors.InvalidArgumentError(
            None, None, f"rejection_resample: class {k} is outside [0, {n}) (target_dist's size)."
        )
    return k


class _Estimates:
    """The running class distribution (TF's `_estimate_initial_dist_ds`)."""

    def __init__(self, initial: np.ndarray | None, n: int) -> None:
        self._fixed = initial
        self._counts = np.zeros(n)

    def update(self, k: int) -> np.ndarray:
        if self._fixed is not None:
            return self._fixed
        self._counts[k] += 1
        return self._counts / self._counts.sum()


class _WithClass(_Unary):
    """(class, element) pairs: the original stream, or (`accept=True`) the kept ones."""

    def __init__(self, input_dataset: Dataset, class_func: Any, target: np.ndarray,
                 initial: np.ndarray | None, seed: list[int] | None,
                 salt: int) -> None:  # fmt: skip
        super().__init__(input_dataset)
        self._class_func, self._target, self._initial = class_func, target, initial
        self._seed, self._salt = seed, salt
        self._passes = 0

    def _elements(self) -> Iterator[Any]:
        n = self._target.size
        est = _Estimates(self._initial, n)
        rng = None
        if self._seed is not None:
            rng = np.random.default_rng([*self._seed, self._salt, self._passes])
            self._passes += 1
        for element in self._input._elements():
            k = _class_of(self._class_func, element, n)
            dist = est.update(k)
            if rng is not None:
                accept, _ = _probs(dist, self._target)
                if rng.random() >= accept[k]:
                    continue
            yield convert_to_tensor(np.int32(k)), element

    def _cardinality(self) -> int:
        return UNKNOWN if self._seed is not None else self._input._cardinality()

    def _element_spec(self) -> Any:
        return Dataset._element_spec(self)


class _MixWeights(_Unary):
    """[m, 1 - m] per element, from the running estimate of the class distribution."""

    def __init__(self, input_dataset: Dataset, class_func: Any, target: np.ndarray) -> None:
        super().__init__(input_dataset)
        self._class_func, self._target = class_func, target

    def _elements(self) -> Iterator[Any]:
        est = _Estimates(None, self._target.size)
        for element in self._input._elements():
            _, m = _probs(est.update(_class_of(self._class_func, element, self._target.size)),
                          self._target)  # fmt: skip
            yield convert_to_tensor(np.asarray([m, 1.0 - m]))
        while True:  # the mixed stream stops with its inputs; keep the weights available
            yield convert_to_tensor(np.asarray([0.0, 1.0]))


def _dist(value: Any, what: str) -> np.ndarray:
    d = np.asarray(value.numpy() if isinstance(value, TensorLike) else value, np.float64)
    if d.ndim != 1 or d.size == 0 or (d < 0).any() or not np.isclose(d.sum(), 1.0):
        raise ValueError(f"rejection_resample: {what} must be a probability vector, got {d}.")
    return d


def rejection_resample(dataset: Dataset, te: Any, class_func: Any, target_dist: Any,
                       initial_dist: Any, seed: Any) -> Dataset:  # fmt: skip
    target = _dist(target_dist, "target_dist")
    initial = None if initial_dist is None else _dist(initial_dist, "initial_dist")
    if initial is not None and initial.size != target.size:
        raise ValueError("rejection_resample: initial_dist and target_dist differ in size.")
    base = ShuffleDataset._base_seed(seed)
    original = _WithClass(dataset, class_func, target, initial, None, 0)
    filtered = _WithClass(dataset, class_func, target, initial, base, 1)
    if initial is not None:
        _, m = _probs(initial, target)
        if m >= 1.0:
            return original
        if m <= 0.0:
            return filtered
        weights: Any = np.asarray([m, 1.0 - m])
    else:
        weights = _MixWeights(dataset, class_func, target)
    mix_seed = int(np.random.default_rng([*base, 2]).integers(2**62))
    return te.SampleDataset([original, filtered], weights, mix_seed, True, True)


__all__ = ["rejection_resample"]
