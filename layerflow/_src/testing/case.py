"""`tf.test.TestCase`: `unittest.TestCase` with TF's assertion helpers, as TF 2.21 writes them.

Values may be Tensors, Variables, NumPy arrays, Python numbers or (for `assertAllClose`) nested
dicts, lists, tuples and namedtuples of them. Failure messages follow TF's (its "not close
where/lhs/rhs/dif/tol" lines, then NumPy's), so a test written for TF reads the same here.
Eager only: `cached_session()` and `session()` yield an object whose `run` evaluates tensors.

>>> import numpy as np
>>> import layerflow as tf
>>> class Demo(tf.test.TestCase):
...     def test_square(self):
...         self.assertAllClose(tf.square(tf.constant([2.0])), [4.0])
>>> import io, unittest
>>> unittest.TextTestRunner(stream=io.StringIO()).run(Demo("test_square")).wasSuccessful()
True
"""

from __future__ import annotations

import collections.abc
import contextlib
import math
import os
import random
import re
import shutil
import tempfile
import unittest
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.ctc_ops import SparseTensorValue
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.ops.random_ops import set_seed

# TF seeds every test with this (random_seed.DEFAULT_GRAPH_SEED), so tests are repeatable.
DEFAULT_SEED = 87654321


def _evaluate_one(value: Any) -> Any:
    if value is None:
        return None
    if callable(value) and not hasattr(value, "numpy"):
        return evaluate(value())
    if isinstance(value, SparseTensor):
        return SparseTensorValue(
            value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy()
        )
    numpy = getattr(value, "numpy", None)
    if callable(numpy):
        return numpy()
    raise ValueError(
        f"Unsupported type {type(value).__name__!r}. evaluate() takes Tensors, Variables, "
        "SparseTensors, RaggedTensors or nested structures of them; pass plain values directly."
    )


def evaluate(tensors: Any) -> Any:
    """Tensors (in any nest of dicts, lists, tuples) as NumPy values, as `TestCase.evaluate`."""
    if isinstance(tensors, collections.abc.Mapping):
        return type(tensors)((k, evaluate(v)) for k, v in tensors.items())
    if isinstance(tensors, tuple) and hasattr(tensors, "_fields"):
        return type(tensors)(*(evaluate(v) for v in tensors))
    if isinstance(tensors, (list, tuple)):
        return type(tensors)(evaluate(v) for v in tensors)
    return _evaluate_one(tensors)


def as_ndarray(a: Any) -> np.ndarray:
    """`a` as a NumPy array (TF's `_GetNdArray`): tensors are read, ragged lists become object
    arrays."""
    if isinstance(a, Tensor) or (hasattr(a, "numpy") and callable(a.numpy)):
        a = a.numpy()
    if isinstance(a, np.ndarray):
        return a
    try:
        return np.array(a)
    except ValueError as e:
        if "inhomogeneous shape" in str(e):
            return np.array(a, dtype=object)
        raise


def _where(cond: np.ndarray) -> tuple:
    return np.where(cond)


def _py_list(a: Any) -> Any:
    """A RaggedTensor, array or tensor as nested Python lists (TF's `_GetPyList`)."""
    if isinstance(a, RaggedTensor):
        return a.to_list()
    if isinstance(a, (list, tuple)):
        return list(a)
    return as_ndarray(a).tolist()


class _EagerSession:
    """What `cached_session()` yields: `run(fetches)` evaluates tensors (TF's FakeEagerSession)."""

    def __init__(self, case: TestCase):
        self._case = case

    def run(self, fetches: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs.get("feed_dict") is not None:
            raise RuntimeError(
                "Running a session with a feed_dict is not supported: layerflow runs eagerly, so "
                "compute with the values directly instead of feeding placeholders."
            )
        return self._case.evaluate(fetches)


class TestCase(unittest.TestCase):
    """A `unittest.TestCase` with TF's helpers (`assertAllClose`, `evaluate`, `get_temp_dir`...).

    `setUp` seeds Python's, NumPy's and layerflow's random generators with TF's default seed.
    """

    def __init__(self, methodName: str = "runTest"):  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._tempdir: str | None = None

    def setUp(self) -> None:
        super().setUp()
        random.seed(DEFAULT_SEED)
        np.random.seed(DEFAULT_SEED)
        set_seed(DEFAULT_SEED)

    # --- evaluation and sessions -----------------------------------------------------------
    def evaluate(self, tensors: Any) -> Any:
        """Tensors (nested in lists, tuples, dicts) as NumPy values."""
        return evaluate(tensors)

    @contextlib.contextmanager
    def _session(self, use_gpu: bool, force_gpu: bool) -> Iterator[_EagerSession]:
        spec = "/GPU:0" if force_gpu else (None if use_gpu else "/CPU:0")
        with backend.device_scope(spec):
            yield _EagerSession(self)

    def cached_session(
        self, graph: Any = None, config: Any = None, use_gpu: bool = True, force_gpu: bool = False
    ) -> contextlib.AbstractContextManager:
        """A context manager yielding an object whose `run` evaluates tensors (eager: no graph)."""
        return self._session(use_gpu, force_gpu)

    def session(
        self, graph: Any = None, config: Any = None, use_gpu: bool = True, force_gpu: bool = False
    ) -> contextlib.AbstractContextManager:
        """As `cached_session`."""
        return self._session(use_gpu, force_gpu)

    def test_session(
        self, graph: Any = None, config: Any = None, use_gpu: bool = True, force_gpu: bool = False
    ) -> contextlib.AbstractContextManager:
        """TF's deprecated name of `cached_session`."""
        if self.id().endswith(".test_session"):  # collected as a test by its name: skip, as TF
            self.skipTest(
                'Tests that have the name "test_session" are automatically skipped by TensorFlow '
                "test fixture, as the name is reserved for creating sessions within tests. "
                "Please rename your test if you have a test with this name."
            )
        return self._session(use_gpu, force_gpu)

    def get_temp_dir(self) -> str:
        """A folder for this test (the same on every call), removed when the test ends."""
        if self._tempdir is None:
            parent = os.environ.get("TEST_TMPDIR") or None
            self._tempdir = tempfile.mkdtemp(dir=parent)
            self.addCleanup(shutil.rmtree, self._tempdir, True)
        return self._tempdir

    # --- closeness -------------------------------------------------------------------------
    def _assert_array_like_all_close(
        self, a: Any, b: Any, rtol: float, atol: float, msg: str | None
    ) -> None:
        a, b = as_ndarray(a), as_ndarray(b)
        if a.shape != b.shape and (b.ndim <= 3 or b.size < 500):
            shape_msg = f"Shape mismatch: expected {a.shape}, got {b.shape} with contents {b}."
        else:
            shape_msg = f"Shape mismatch: expected {a.shape}, got {b.shape}."
        self.assertEqual(a.shape, b.shape, shape_msg)
        msgs = [msg]
        a_dtype = a.dtype
        a = a.astype(np.float32) if a.dtype.name == "bfloat16" else a
        b = b.astype(np.float32) if b.dtype.name == "bfloat16" else b
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            cond = np.logical_or(
                np.abs(a - b) > atol + rtol * np.abs(b), np.isnan(a) != np.isnan(b)
            )
            if a.ndim:
                x, y = a[_where(cond)], b[_where(cond)]
                msgs.append(f"not close where = {_where(cond)}")
            else:
                x, y = a, b
            msgs.append(f"not close lhs = {x}")
            msgs.append(f"not close rhs = {y}")
            msgs.append(f"not close dif = {np.abs(x - y)}")
            msgs.append(f"not close tol = {atol + rtol * np.abs(y)}")
            msgs.append(f"dtype = {a_dtype}, shape = {a.shape}")
            np.testing.assert_allclose(
                a, b, rtol=rtol, atol=atol, err_msg="\n".join(msgs), equal_nan=True
            )

    def _assert_all_close_recursive(
        self, a: Any, b: Any, rtol: float, atol: float, path: list, msg: str
    ) -> None:
        if isinstance(a, RaggedTensor) or isinstance(b, RaggedTensor):
            self._assert_ragged(a, b, lambda x, y: self._assert_list_close(x, y, rtol, atol, msg))
            return
        path_str = ("[" + "][".join(str(p) for p in path) + "]") if path else ""
        if hasattr(a, "_asdict"):
            a = a._asdict()
        if hasattr(b, "_asdict"):
            b = b._asdict()
        a_is_dict = isinstance(a, collections.abc.Mapping)
        if a_is_dict != isinstance(b, collections.abc.Mapping):
            raise ValueError(f"Can't compare dict to non-dict, a{path_str} vs b{path_str}. {msg}")
        value_msg = f"Mismatched value: a{path_str} is different from b{path_str}. {msg}"
        if a_is_dict:
            self.assertCountEqual(
                a.keys(),
                b.keys(),
                msg=f"mismatched keys: a{path_str} has keys {a.keys()}, but b{path_str} has "
                f"keys {b.keys()}. {msg}",
            )
            for k in a:
                self._assert_all_close_recursive(a[k], b[k], rtol, atol, [*path, k], msg)
        elif isinstance(a, (list, tuple)):
            try:  # compare as arrays first; element by element only if that is impossible
                self._assert_array_like_all_close(
                    as_ndarray(a), as_ndarray(b), rtol, atol, value_msg
                )
            except (ValueError, TypeError, NotImplementedError):
                if len(a) != len(b):
                    raise ValueError(
                        f"Mismatched length: a{path_str} has {len(a)} items, but b{path_str} has "
                        f"{len(b)} items. {msg}"
                    ) from None
                for i, (x, y) in enumerate(zip(a, b)):
                    self._assert_all_close_recursive(x, y, rtol, atol, [*path, str(i)], msg)
        else:
            try:
                self._assert_array_like_all_close(a, b, rtol, atol, value_msg)
            except TypeError as e:
                note = f"Error: a{path_str} has {type(a)}, but b{path_str} has {type(b)}. {msg}"
                e.args = (f"{e.args[0]} : {note}", *e.args[1:]) if e.args else (note,)
                raise

    def _assert_ragged(self, a: Any, b: Any, compare: Callable[[Any, Any], None]) -> None:
        compare(_py_list(a), _py_list(b))
        if not (isinstance(a, (list, tuple)) or isinstance(b, (list, tuple))):
            rank_a = a.ragged_rank if isinstance(a, RaggedTensor) else 0
            rank_b = b.ragged_rank if isinstance(b, RaggedTensor) else 0
            self.assertEqual(rank_a, rank_b, msg="ragged_rank mismatch")

    def _assert_list_close(self, a: Any, b: Any, rtol: float, atol: float, msg: Any) -> None:
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            self.assertEqual(len(a), len(b), f"Length differs for {a!r} and {b!r}. {msg or ''}")
            for x, y in zip(a, b):
                self._assert_list_close(x, y, rtol, atol, msg)
        else:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllClose(
        self,
        a: Any,
        b: Any,
        rtol: float = 1e-6,
        atol: float = 1e-6,  # noqa: N802
        msg: str | None = None,
    ) -> None:
        """`a` and `b` (arrays, tensors, or nested dicts/lists/tuples of them) are elementwise
        within `atol + rtol * abs(b)`; a structure mismatch raises ValueError, as TF."""
        self._assert_all_close_recursive(a, b, rtol, atol, [], msg or "")

    def assertAllCloseAccordingToType(  # noqa: N802
        self,
        a: Any,
        b: Any,
        rtol: float = 1e-6,
        atol: float = 1e-6,
        float_rtol: float = 1e-6,
        float_atol: float = 1e-6,
        half_rtol: float = 1e-3,
        half_atol: float = 1e-3,
        bfloat16_rtol: float = 1e-2,
        bfloat16_atol: float = 1e-2,
        msg: str | None = None,
    ) -> None:
        """`assertAllClose` with the tolerance widened for float32, float16 and bfloat16."""
        a, b = as_ndarray(a), as_ndarray(b)
        kinds = {a.dtype.name, b.dtype.name}
        if kinds & {"float32", "complex64"}:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if "float16" in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if "bfloat16" in kinds:
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(
        self,
        a: Any,
        b: Any,
        rtol: float = 1e-6,
        atol: float = 1e-6,  # noqa: N802
        msg: str | None = None,
    ) -> None:
        """Some element of `a` and `b` is not close."""
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(f"The two values are close at all elements. {msg or ''}")

    def assertArrayNear(
        self,
        farray1: Any,
        farray2: Any,
        err: float,  # noqa: N802
        msg: str | None = None,
    ) -> None:
        """Same length and `|f1 - f2| <= err` for each pair."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertNear(self, f1: Any, f2: Any, err: float, msg: str | None = None) -> None:  # noqa: N802
        """`|f1 - f2| <= err` (equal infinities pass)."""
        f1, f2 = np.squeeze(f1), np.squeeze(f2)
        if f1 != f2:
            diff = math.fabs(f1 - f2)
            extra = f" ({msg})" if msg is not None else ""
            self.assertTrue(
                diff <= err, f"{f1:f} != {f2:f} +/- {err:f} (difference: {diff:g}){extra}"
            )

    def assertNDArrayNear(
        self,
        ndarray1: Any,
        ndarray2: Any,
        err: float,  # noqa: N802
        msg: str | None = None,
    ) -> None:
        """The L2 norm of `ndarray1 - ndarray2` is below `err`."""
        diff = np.linalg.norm(as_ndarray(ndarray1) - as_ndarray(ndarray2))
        self.assertTrue(diff < err, msg=msg)

    # --- equality and order ----------------------------------------------------------------
    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Same shape and values (NaN equals NaN for floats); RaggedTensors as nested lists."""
        if isinstance(a, RaggedTensor) or isinstance(b, RaggedTensor):
            self._assert_ragged(a, b, lambda x, y: self.assertEqual(x, y, msg))
            return
        msg = msg or ""
        a, b = as_ndarray(a), as_ndarray(b)
        if b.ndim <= 3 or b.size < 500:
            self.assertEqual(
                a.shape,
                b.shape,
                f"Shape mismatch: expected {a.shape}, got {b.shape}. Contents: {b!r}. \n{msg}.",
            )
        else:
            self.assertEqual(
                a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg}"
            )
        same = a == b
        if a.dtype.kind in "fc":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if np.all(same):
            return
        msgs = [msg]
        diff = np.logical_not(same)
        if a.ndim:
            x, y = a[_where(diff)], b[_where(diff)]
            msgs.append(f"not equal where = {_where(diff)}")
        else:
            x, y = a, b
        msgs.append(f"not equal lhs = {x!r}")
        msgs.append(f"not equal rhs = {y!r}")
        np.testing.assert_array_equal(a, b, err_msg="\n".join(msgs))

    def assertNotAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Some element of `a` differs from `b`'s."""
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        """Every element of `a` is > `comparison_target`."""
        self.assertGreater(np.min(as_ndarray(a)), comparison_target)

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertGreaterEqual(np.min(as_ndarray(a)), comparison_target)

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        """Every element of `a` is < `comparison_target`."""
        self.assertLess(np.max(as_ndarray(a)), comparison_target)

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertLessEqual(np.max(as_ndarray(a)), comparison_target)

    @staticmethod
    def _format_subscripts(subscripts: tuple, value: np.ndarray, limit: int = 10) -> list[str]:
        if np.ndim(value) == 0:
            return [f"  [0] : {value}"]
        rows = np.transpose(subscripts)
        lines = [f"  {s} : {value[tuple(s)]}" for s in rows[:limit]]
        return [*lines, "  ..."] if len(rows) > limit else lines

    def assertAllInRange(
        self,
        target: Any,
        lower_bound: Any,
        upper_bound: Any,  # noqa: N802
        open_lower_bound: bool = False,
        open_upper_bound: bool = False,
    ) -> None:
        """Every element lies in [lower, upper] (open ends when asked); NaN fails."""
        target = as_ndarray(target)
        if not (
            np.issubdtype(target.dtype, np.floating) or np.issubdtype(target.dtype, np.integer)
        ):
            raise AssertionError(
                f"The value of {target} does not have an ordered numeric type, "
                f"instead it has type: {target.dtype}"
            )
        nans = _where(np.isnan(target))
        if np.size(nans):
            raise AssertionError(
                f"{len(nans[0])} of the {np.size(target)} element(s) are NaN. Subscripts(s) and "
                "value(s) of the NaN element(s):\n"
                + "\n".join(self._format_subscripts(nans, target))
            )
        rng = (
            ("(" if open_lower_bound else "[")
            + f"{lower_bound}, {upper_bound}"
            + (")" if open_upper_bound else "]")
        )
        low = target <= lower_bound if open_lower_bound else target < lower_bound
        high = target >= upper_bound if open_upper_bound else target > upper_bound
        bad = _where(np.logical_or(low, high))
        if np.size(bad):
            raise AssertionError(
                f"{len(bad[0])} of the {np.size(target)} element(s) are outside the range {rng}. "
                "Subscript(s) and value(s) of the offending elements:\n"
                + "\n".join(self._format_subscripts(bad, target))
            )

    def assertAllInSet(self, target: Any, expected_set: Any) -> None:  # noqa: N802
        """Every element of `target` is in `expected_set`."""
        diff = np.setdiff1d(as_ndarray(target).flatten(), list(expected_set))
        if np.size(diff):
            raise AssertionError(
                f"{np.size(diff)} unique element(s) are not in the set {expected_set}: {diff}"
            )

    def assertShapeEqual(self, input_a: Any, input_b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Two arrays or Tensors have the same shape."""
        for name, value in (("input_a", input_a), ("input_b", input_b)):
            if not isinstance(value, (np.ndarray, np.generic, Tensor)):
                raise TypeError(
                    f"{name} must be a Numpy ndarray, Numpy scalar, or a Tensor."
                    f"Instead received {type(value)}"
                )
        shape_a, shape_b = (
            v.shape.as_list() if isinstance(v, Tensor) else v.shape for v in (input_a, input_b)
        )
        self.assertAllEqual(shape_a, shape_b, msg=msg)

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:  # noqa: N802
        """`target`'s NumPy dtype equals `expected_dtype`."""
        self.assertEqual(as_ndarray(target).dtype, expected_dtype)

    # --- errors ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(
        self,
        exception_type: type,  # noqa: N802
        expected_err_re_or_predicate: Any,
    ) -> Iterator[None]:
        """The block raises `exception_type` whose message matches the regex (searched) or for
        which the predicate returns true; anything else fails the test."""
        if callable(expected_err_re_or_predicate):
            predicate: Callable[[BaseException], Any] = expected_err_re_or_predicate
        else:

            def predicate(e: BaseException) -> Any:
                text = e.message if isinstance(e, errors.OpError) else str(e)
                return re.search(expected_err_re_or_predicate, text)

        try:
            yield
            self.fail(exception_type.__name__ + " not raised")
        except Exception as e:  # noqa: BLE001 - every exception is judged, as TF
            if not isinstance(e, exception_type) or not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any):  # noqa: ANN201, N802
        """`assertRaisesWithPredicateMatch(tf.errors.OpError, ...)`."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    # --- absltest's helpers that TF tests use ----------------------------------------------
    def assertItemsEqual(self, first: Any, second: Any, msg: str | None = None) -> None:  # noqa: N802
        self.assertCountEqual(first, second, msg)

    def assertLen(self, container: Any, expected_len: int, msg: str | None = None) -> None:  # noqa: N802
        if len(container) != expected_len:
            self.fail(
                msg or f"{container!r} has length of {len(container)}, expected {expected_len}."
            )

    def assertEmpty(self, container: Any, msg: str | None = None) -> None:  # noqa: N802
        if len(container):
            self.fail(msg or f"{container!r} has length of {len(container)}.")

    def assertNotEmpty(self, container: Any, msg: str | None = None) -> None:  # noqa: N802
        if not len(container):
            self.fail(msg or f"{container!r} has length of 0.")

    def assertStartsWith(self, actual: str, expected_start: str, msg: str | None = None) -> None:  # noqa: N802
        if not actual.startswith(expected_start):
            self.fail(
                f"{actual!r} does not start with {expected_start!r}"
                + (f" : {msg!r}" if msg else "")
            )
