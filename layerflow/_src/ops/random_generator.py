"""`tf.random.Generator`: a reproducible counter-based generator whose state is a Variable, with
TF's Philox algorithm bit for bit (`ops/philox.py`), and the global generator.

A Philox state is three int64 words: a 128-bit counter (two words) and a 64-bit key. Every draw
of n numbers reads the counter and advances it by 256 * n, as TF's kernels do, so
`Generator.from_seed(s).normal(...)` gives TF's numbers, and a split or a reset reproduces TF's
streams. `binomial` is statistically TF's distribution but not its bit stream.
"""

from __future__ import annotations

import enum
import os
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import Variable
from layerflow._src.ops import philox
from layerflow._src.ops.array_ops import _shape_tuple
from layerflow._src.ops.math_ops import add, multiply
from layerflow._src.ops.random_ops import _num, _place
from layerflow._src.utils import naming

_RESERVED = 256  # TF's kReservedSamplesPerOutput: the counter advance per output element
_MASK = philox.MASK64


class Algorithm(enum.Enum):
    """The RNG algorithms (`tf.random.Algorithm`). On the CPU, AUTO_SELECT is Philox; ThreeFry
    runs only under XLA in TF, and here not at all."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _alg(alg: Any) -> Algorithm:
    if alg is None:
        return Algorithm.PHILOX  # TF's default algorithm
    if isinstance(alg, Algorithm):
        return alg
    if isinstance(alg, str):
        found = {"philox": Algorithm.PHILOX, "threefry": Algorithm.THREEFRY,
                 "auto_select": Algorithm.AUTO_SELECT}.get(alg.lower())  # fmt: skip
        if found is not None:
            return found
    elif isinstance(alg, int) and alg in (1, 2, 3):
        return Algorithm(alg)
    raise ValueError(
        f"Argument `alg` got unsupported value {alg!r}. Supported values are 'philox', "
        "'threefry', 'auto_select' or tf.random.Algorithm members."
    )


def _state_size(alg: Algorithm) -> int:
    return 2 if alg is Algorithm.THREEFRY else 3


def create_rng_state(seed: Any, alg: Any) -> np.ndarray:
    """The state a seed gives (`tf.random.create_rng_state`): an int seed is split into 64-bit
    words, least significant first, and padded with zeros; a list is padded at the front.

    >>> create_rng_state(2**70 + 3, "philox").tolist()
    [3, 64, 0]
    """
    size = _state_size(_alg(alg))
    if isinstance(seed, int | np.integer):
        value = int(seed) % (1 << (64 * size))  # negative seeds wrap (two's complement)
        words = [(value >> (64 * i)) & _MASK for i in range(size)]
    else:
        words = [int(w) & _MASK for w in np.asarray(_num(seed)).reshape(-1).tolist()]
        if len(words) > size:
            raise ValueError(f"create_rng_state: seed {seed!r} has more than {size} words.")
        words = [0] * (size - len(words)) + words
    return np.array(words, dtype=np.uint64).view(np.int64)


class Generator:
    """A random number generator with its state in a `tf.Variable` (`tf.random.Generator`).

    >>> g = Generator.from_seed(1)
    >>> g.normal([3]).numpy()  # TF's numbers
    array([ 0.43842274, -0.53439844, -0.07710262], dtype=float32)
    >>> g.state.numpy()
    array([769,   0,   0])
    """

    def __init__(self, copy_from: Generator | None = None, state: Any = None,
                 alg: Any = None) -> None:  # fmt: skip
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("Generator: give either `copy_from` or `state` and `alg`.")
            alg, state = copy_from.algorithm, copy_from.state.numpy()
        elif state is None:
            raise ValueError(
                "Generator: give `copy_from`, or `state` and `alg` (or use from_seed)."
            )
        self._alg = _alg(alg)
        words = np.asarray(_num(state)).astype(np.int64).reshape(-1)
        size = _state_size(self._alg)
        if words.shape != (size,):
            raise ValueError(f"Shapes {words.shape} and [{size}] are incompatible")
        with naming.name_scope(None):
            self._state_var = Variable(words, trainable=False, name="StateVar", dtype="int64")

    # --- constructors ------------------------------------------------------------------------
    @classmethod
    def from_seed(cls, seed: Any, alg: Any = None) -> Generator:
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_state(cls, state: Any, alg: Any) -> Generator:
        return cls(state=state, alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> Generator:
        size = _state_size(_alg(alg))
        state = np.frombuffer(os.urandom(8 * size), dtype=np.int64).copy()
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key: Any, counter: Any, alg: Any) -> Generator:
        counter = np.asarray(_num(counter)).astype(np.int64).reshape(-1)
        return cls(state=[*counter.tolist(), int(_num(key))], alg=alg)

    # --- state ---------------------------------------------------------------------------------
    @property
    def state(self) -> Variable:
        return self._state_var

    @property
    def algorithm(self) -> int:
        return self._alg.value

    @property
    def key(self) -> Tensor:
        return self._state_var[-1]

    def reset(self, state: Any) -> None:
        self._state_var.assign(np.asarray(_num(state)).astype(np.int64))

    def reset_from_seed(self, seed: Any) -> None:
        self.reset(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key: Any, counter: Any) -> None:
        counter = np.asarray(_num(counter)).astype(np.int64).reshape(-1).tolist()
        self.reset([*counter, int(_num(key))])

    def skip(self, delta: Any) -> None:
        """Advance the counter as `delta` draws would."""
        self._read_and_skip(int(_num(delta)))

    def _read_and_skip(self, n: int) -> tuple[int, int]:
        """(counter, key) for a draw of n numbers, advancing the counter by 256 * n."""
        if self._alg is Algorithm.THREEFRY:
            raise errors.UnimplementedError(
                None, "RngReadAndSkip", "Non-XLA devices don't support the ThreeFry algorithm."
            )
        words = [int(w) for w in self._state_var.numpy().view(np.uint64)]
        counter, key = words[0] | (words[1] << 64), words[2]
        new = (counter + n * _RESERVED) % (1 << 128)
        advanced = np.array([new & _MASK, new >> 64], dtype=np.uint64).view(np.int64)
        self._state_var._update(_set_counter, advanced)
        return counter, key

    # --- draws ---------------------------------------------------------------------------------
    def normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = "float32",
               name: str | None = None) -> Tensor:  # fmt: skip
        dt = _floating(dtype, "normal")
        shape = _shape_tuple(shape, "normal")
        n = int(np.prod(shape))
        counter, key = self._read_and_skip(n)
        rnd = _place(_standard_normal(counter, key, n, dt).reshape(shape))
        return _scale(rnd, mean, stddev, dt)

    def truncated_normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                         dtype: Any = "float32", name: str | None = None) -> Tensor:  # fmt: skip
        """Normal values redrawn until they lie within two standard deviations."""
        dt = _floating(dtype, "truncated_normal")
        shape = _shape_tuple(shape, "truncated_normal")
        n = int(np.prod(shape))
        counter, key = self._read_and_skip(n)
        rnd = _place(_truncated_normal(counter, key, n, dt).reshape(shape))
        return _scale(rnd, mean, stddev, dt)

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = "float32",
                name: str | None = None) -> Tensor:  # fmt: skip
        """Uniform in [minval, maxval): floats (maxval defaults to 1), or integers with both
        bounds given (or `uniform_full_int` for the full range)."""
        dt = dtypes.as_dtype(dtype)
        shape = _shape_tuple(shape, "uniform")
        n = int(np.prod(shape))
        if dt.is_integer:
            if maxval is None:
                raise ValueError(
                    f"For integer dtype {dt}, minval and maxval must be both `None` or both "
                    f"non-`None`; got minval={minval} and maxval={maxval}"
                )
            return self._uniform_int(shape, n, int(_num(minval)), int(_num(maxval)), dt)
        if not dt.is_floating:
            raise TypeError(f"uniform: dtype must be floating or integer, got {dt.name}.")
        counter, key = self._read_and_skip(n)
        rnd = _place(_unit_uniform(counter, key, n, dt).reshape(shape))
        low = 0.0 if minval is None else minval
        high = 1.0 if maxval is None else maxval
        if low == 0.0 and high == 1.0 and not isinstance(low, TensorLike):
            return rnd
        span = add(_as(high, dt), multiply(_as(low, dt), _as(-1, dt)))
        return add(multiply(rnd, span), _as(low, dt))

    def _uniform_int(self, shape: tuple[int, ...], n: int, low: int, high: int,
                     dt: dtypes.DType) -> Tensor:  # fmt: skip
        if dt.name not in ("int32", "int64"):
            raise TypeError(f"uniform: integer dtype must be int32 or int64, got {dt.name}.")
        if not low < high:
            raise errors.InvalidArgumentError(
                None, "StatefulUniformInt", f"Need minval < maxval: {low} >= {high}"
            )
        counter, key = self._read_and_skip(n)
        bits = _bits(counter, key, n, 64 if dt.name == "int64" else 32)
        span = np.uint64(high - low)
        out = (np.int64(low) + (bits.astype(np.uint64) % span).astype(np.int64)).astype(dt.np)
        return _place(out.reshape(shape))

    def uniform_full_int(self, shape: Any, dtype: Any = "uint64",
                         name: str | None = None) -> Tensor:  # fmt: skip
        """Integers over the dtype's whole range (int32, int64, uint32 or uint64)."""
        dt = dtypes.as_dtype(dtype)
        if dt.name not in ("int32", "int64", "uint32", "uint64"):
            raise TypeError(f"uniform_full_int: dtype must be a 32/64-bit integer, got {dt.name}.")
        shape = _shape_tuple(shape, "uniform_full_int")
        n = int(np.prod(shape))
        counter, key = self._read_and_skip(n)
        bits = _bits(counter, key, n, dt.size * 8)
        return _place(bits.view(dt.np).reshape(shape))

    def binomial(self, shape: Any, counts: Any, probs: Any, dtype: Any = "int32",
                 name: str | None = None) -> Tensor:  # fmt: skip
        """Binomial(counts, probs) samples (TF's distribution, not its bit stream)."""
        shape = _shape_tuple(shape, "binomial")
        n = int(np.prod(shape))
        counter, key = self._read_and_skip(n)
        seed = philox.samples(counter, key, 4).view(np.uint64).tolist()
        rng = np.random.Generator(np.random.Philox(key=seed))
        counts_ = np.broadcast_to(np.asarray(_num(counts), np.float64), shape)
        probs_ = np.broadcast_to(np.asarray(_num(probs), np.float64), shape)
        return _place(
            rng.binomial(counts_.astype(np.int64), probs_).astype(dtypes.as_dtype(dtype).np)
        )

    def make_seeds(self, count: int = 1) -> Tensor:
        """`count` seeds for stateless ops, shape [2, count] (keys over zeros, as TF)."""
        keys = self.uniform_full_int([count], "int64")
        return _place(np.stack([keys.numpy(), np.zeros(count, np.int64)]))

    def split(self, count: int = 1) -> list[Generator]:
        """`count` new generators with independent streams (counter 0, a fresh key each)."""
        keys = self.uniform_full_int([count], "int64").numpy().tolist()
        pad = [0] * (_state_size(self._alg) - 1)
        return [Generator(state=[*pad, k], alg=self._alg) for k in keys]

    def __repr__(self) -> str:
        return (
            f"<tf.random.Generator alg={self._alg.name} state={self._state_var.numpy().tolist()}>"
        )


def _set_counter(array: Any, words: np.ndarray) -> None:
    array[:2] = words


def _floating(dtype: Any, opname: str) -> dtypes.DType:
    dt = dtypes.as_dtype(dtype)
    if dt.name not in ("float16", "float32", "float64"):
        raise TypeError(f"{opname}: dtype must be float16, float32 or float64, got {dt.name}.")
    return dt


def _as(value: Any, dt: dtypes.DType) -> Any:
    if isinstance(value, TensorLike):
        return value
    return _place(np.asarray(_num(value), dtype=dt.np))


def _scale(rnd: Tensor, mean: Any, stddev: Any, dt: dtypes.DType) -> Tensor:
    """`rnd * stddev + mean` as TF's Python wrapper computes it."""
    if not isinstance(mean, TensorLike) and not isinstance(stddev, TensorLike):
        if np.all(np.asarray(_num(stddev)) == 1) and np.all(np.asarray(_num(mean)) == 0):
            return rnd
    return add(multiply(rnd, _as(stddev, dt)), _as(mean, dt))


def _bits(counter: int, key: int, n: int, width: int) -> np.ndarray:
    """n integers of 32 bits (one sample each) or 64 bits (two samples, low word first)."""
    if width == 32:
        return philox.samples(counter, key, n)
    s = philox.samples(counter, key, 2 * n).astype(np.uint64)
    return s[0::2] | (s[1::2] << np.uint64(32))


def _unit_uniform(counter: int, key: int, n: int, dt: dtypes.DType) -> np.ndarray:
    if dt.name == "float64":
        s = philox.samples(counter, key, 2 * n)
        return philox.uint64_to_double(s[0::2], s[1::2])
    s = philox.samples(counter, key, n)
    return philox.uint16_to_half(s) if dt.name == "float16" else philox.uint32_to_float(s)


def _standard_normal(counter: int, key: int, n: int, dt: dtypes.DType) -> np.ndarray:
    if dt.name == "float64":  # two doubles from the four samples of each block
        b = philox.blocks(counter, key, -(-n // 2))
        d0, d1 = philox.box_muller_double(b[:, 0], b[:, 1], b[:, 2], b[:, 3])
        return np.stack([d0, d1], axis=-1).reshape(-1)[:n]
    s = philox.samples(counter, key, 2 * -(-n // 2))
    f0, f1 = philox.box_muller_float(s[0::2], s[1::2])
    return np.stack([f0, f1], axis=-1).reshape(-1)[:n].astype(dt.np)


def _truncated_normal(counter: int, key: int, n: int, dt: dtypes.DType) -> np.ndarray:
    """TF's variable-sample fill: output group g (4 floats or 2 doubles) draws from its own
    stretch of the stream, starting 256 * group_size / 4 blocks after group g - 1, keeping the
    Box-Muller values with |x| < 2 in order."""
    group = 2 if dt.name == "float64" else 4
    per_value = 2 if dt.name == "float64" else 1  # samples per candidate
    skip = group * _RESERVED // 4
    n_groups = -(-n // group)
    out = np.empty((n_groups, group), np.float64 if dt.name == "float64" else np.float32)
    todo = np.arange(n_groups, dtype=np.uint64)
    n_blocks = group * per_value // 2  # blocks per group in the first attempt
    while todo.size:
        offsets = todo[:, None] * np.uint64(skip) + np.arange(n_blocks, dtype=np.uint64)
        stream = philox.blocks(counter, key, 0, offsets).reshape(len(todo), -1)
        if dt.name == "float64":
            q = stream.reshape(len(todo), -1, 4)
            a, b = philox.box_muller_double(q[..., 0], q[..., 1], q[..., 2], q[..., 3])
        else:
            q = stream.reshape(len(todo), -1, 2)
            a, b = philox.box_muller_float(q[..., 0], q[..., 1])
        cand = np.stack([a, b], axis=-1).reshape(len(todo), -1)
        keep = np.abs(cand) < 2.0
        done = keep.sum(axis=1) >= group
        rows = np.flatnonzero(done)
        if rows.size:
            # the first `group` kept values of each finished row, in stream order
            rank = np.cumsum(keep[rows], axis=1) - 1
            take = keep[rows] & (rank < group)
            out[todo[rows].astype(np.int64)] = cand[rows][take].reshape(-1, group)
        todo = todo[~done]
        n_blocks *= 4
    return out.reshape(-1)[:n].astype(dt.np)


# --- the global generator ------------------------------------------------------------------------

_global: list[Generator | None] = [None]


def get_global_generator() -> Generator:
    """The global generator (created from a non-deterministic state on first use)."""
    if _global[0] is None:
        _global[0] = Generator.from_non_deterministic_state()
    return _global[0]


def set_global_generator(generator: Generator) -> None:
    """Replace the global generator (the old one is left as it is)."""
    if not isinstance(generator, Generator):
        raise TypeError(f"set_global_generator expects a tf.random.Generator, got {generator!r}.")
    _global[0] = generator
