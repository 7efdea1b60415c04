"""`tf.test.TestCase`: its assertions pass and fail as TF 2.21's, run through unittest."""

from __future__ import annotations

import collections
import io
import os
import unittest

import numpy as np
import pytest

import layerflow as tf


def run_case(cls: type, *names: str) -> unittest.TestResult:
    suite = unittest.TestSuite(cls(n) for n in names)
    return unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)


class Passing(tf.test.TestCase):
    __test__ = False  # run by run_case, not collected by pytest

    def test_close_and_equal(self):
        Point = collections.namedtuple("Point", ["x", "y"])
        self.assertAllClose(tf.constant([1.0, 2.0]), [1.0, 2.0 + 1e-7])
        self.assertAllClose(
            {"a": [tf.constant(1.0)], "b": Point(1.0, (2.0, 3.0))},
            {"a": [1.0], "b": Point(1.0, (2.0, 3.0))},
        )
        self.assertAllClose([[1.0], [2.0, 3.0]], [[1.0], [2.0, 3.0]])  # ragged: per element
        self.assertAllClose(1.0, 1.05, rtol=0.1)
        self.assertAllCloseAccordingToType(np.float16(1.0), np.float16(1.0005))
        self.assertNotAllClose([1.0], [1.1])
        self.assertAllEqual(tf.constant([1, 2]), np.array([1, 2]))
        self.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])
        self.assertNotAllEqual([1, 2], [1, 3])
        self.assertAllGreater([2, 3], 1)
        self.assertAllGreaterEqual([1, 3], 1)
        self.assertAllLess(tf.constant([1.0]), 2.0)
        self.assertAllLessEqual([2], 2)
        self.assertAllInRange([0.0, 1.0], 0, 1)
        self.assertAllInSet([1, 2, 1], {1, 2})
        self.assertShapeEqual(np.zeros((2, 3)), tf.zeros((2, 3)))
        self.assertDTypeEqual(tf.constant([1.0]), np.float32)
        self.assertNear(1.0, 1.05, 0.1)
        self.assertArrayNear([1.0, 2.0], [1.0, 2.05], 0.1)
        self.assertNDArrayNear(np.ones(3), np.ones(3), 1e-6)
        self.assertLen([1, 2], 2)
        self.assertItemsEqual([1, 2], [2, 1])

    def test_errors_and_evaluate(self):
        with self.assertRaisesOpError("bad fo+"):
            raise tf.errors.InvalidArgumentError(None, None, "bad foo")
        with self.assertRaisesWithPredicateMatch(ValueError, lambda e: "x" in str(e)):
            raise ValueError("xyz")
        got = self.evaluate({"a": tf.constant([1.0]), "b": (tf.Variable(2),)})
        assert isinstance(got["a"], np.ndarray) and got["a"].tolist() == [1.0]
        assert got["b"][0] == 2 and isinstance(got["b"], tuple)
        with self.cached_session() as sess:
            assert sess.run(tf.constant(3.0) * 2) == 6.0
        with self.session() as sess, self.test_session() as sess2:
            assert sess.run([tf.constant(1)]) == [1] and sess2.run(None) is None

    def test_temp_dir_is_kept_for_the_test(self):
        d = self.get_temp_dir()
        assert os.path.isdir(d) and self.get_temp_dir() == d
        type(self).seen_dir = d

    def test_seeded_like_tf(self):
        type(self).draws = [np.random.rand(), tf.random.uniform([]).numpy()]


def test_assertions_pass_through_unittest():
    result = run_case(
        Passing,
        "test_close_and_equal",
        "test_errors_and_evaluate",
        "test_temp_dir_is_kept_for_the_test",
    )
    assert result.wasSuccessful(), result.failures + result.errors
    assert result.testsRun == 3
    assert not os.path.exists(Passing.seen_dir)  # removed when the test ended


def test_setup_seeds_each_test_the_same():
    run_case(Passing, "test_seeded_like_tf")
    first = Passing.draws
    np.random.rand(5), tf.random.uniform([5])  # move the generators on
    run_case(Passing, "test_seeded_like_tf")
    assert Passing.draws == first


class Failing(tf.test.TestCase):
    __test__ = False

    def test_close(self):
        self.assertAllClose([1.0, 2.0], [1.0, 2.1])

    def test_close_nested(self):
        self.assertAllClose({"a": [1.0], "b": (2.0,)}, {"a": [1.0], "b": (3.0,)})

    def test_close_shape(self):
        self.assertAllClose([1.0, 2.0], [[1.0, 2.0]])

    def test_equal(self):
        self.assertAllEqual([1, 2], [1, 3])

    def test_greater(self):
        self.assertAllGreater([1, 2], 1)

    def test_range(self):
        self.assertAllInRange([1, 2], 0, 1)

    def test_not_close(self):
        self.assertNotAllClose([1.0], [1.0])

    def test_near(self):
        self.assertNear(1.0, 1.2, 0.1)

    def test_op_error_message(self):
        with self.assertRaisesOpError("zzz"):
            raise tf.errors.InvalidArgumentError(None, None, "bad foo")

    def test_op_error_type(self):
        with self.assertRaisesOpError("foo"):
            raise ValueError("foo")

    def test_nothing_raised(self):
        with self.assertRaisesWithPredicateMatch(ValueError, "x"):
            pass

    def test_dtype(self):
        self.assertDTypeEqual(np.zeros(2, np.float32), np.float64)

    def test_shape(self):
        self.assertShapeEqual(np.zeros((2, 3)), tf.zeros((3, 2)))


# The start of TF 2.21's message for each failing assertion (checked with the real TF).
EXPECTED = {
    "test_close": "\nNot equal to tolerance rtol=1e-06, atol=1e-06\nMismatched value: a is "
    "different from b. \nnot close where = (array([1]),)\nnot close lhs = [2.]\nnot close rhs "
    "= [2.1]\nnot close dif = [0.1]\nnot close tol = [3.1e-06]\ndtype = float64, shape = (2,)\n"
    "Mismatched elements: 1 / 2 (50%)",
    "test_close_nested": "\nNot equal to tolerance rtol=1e-06, atol=1e-06\nMismatched value: "
    "a[b] is different from b[b]. \nnot close where = (array([0]),)\nnot close lhs = [2.]",
    "test_close_shape": "Tuples differ: (2,) != (1, 2)",
    "test_equal": "\nArrays are not equal\n\nnot equal where = (array([1]),)\nnot equal lhs = "
    "array([2])\nnot equal rhs = array([3])",
    "test_greater": "np.int64(1) not greater than 1",
    "test_range": "1 of the 2 element(s) are outside the range [0, 1]. Subscript(s) and "
    "value(s) of the offending elements:\n  [1] : 2",
    "test_not_close": "The two values are close at all elements. ",
    "test_near": "False is not true : 1.000000 != 1.200000 +/- 0.100000 (difference: 0.2)",
    "test_op_error_message": "Exception of type <class 'layerflow._src.framework.errors."
    "InvalidArgumentError'>: bad foo",
    "test_op_error_type": "Exception of type <class 'ValueError'>: foo",
    "test_nothing_raised": "Exception of type <class 'AssertionError'>: ValueError not raised",
    "test_dtype": "dtype('float32') != <class 'numpy.float64'>",
    "test_shape": "\nArrays are not equal\n\nnot equal where = (array([0, 1]),)",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_assertions_fail_as_tf(name):
    result = run_case(Failing, name)
    assert len(result.failures) == 1 and not result.errors, result.errors
    text = result.failures[0][1]
    message = text.rsplit("\nAssertionError: ", 1)[1]  # the last exception of the chain
    assert message.startswith(EXPECTED[name]), message


def test_structure_mismatch_is_a_value_error_and_evaluate_refuses_plain_values():
    case = tf.test.TestCase()
    with pytest.raises(AssertionError, match="mismatched keys"):
        case.assertAllClose({"a": 1.0}, {"b": 1.0})
    with pytest.raises(ValueError, match="Can't compare dict to non-dict"):
        case.assertAllClose({"a": 1.0}, [1.0])
    with pytest.raises(AssertionError, match=r"a\[0\]\[a\] is different from b\[0\]\[a\]"):
        case.assertAllClose([{"a": 1.0}], [{"a": 1.1}])  # dicts in lists: element by element
    with pytest.raises(ValueError, match="Unsupported type 'int'"):
        case.evaluate([tf.constant(1), 3])
    with pytest.raises(TypeError, match="input_a must be"):
        case.assertShapeEqual([1], np.zeros(1))
    with case.cached_session() as sess, pytest.raises(RuntimeError, match="feed_dict"):
        sess.run(tf.constant(1.0), feed_dict={"x": 1})


def test_ragged_tensors_compare_as_nested_lists():
    case = tf.test.TestCase()
    rt = tf.ragged.constant([[1.0], [2.0, 3.0]])
    case.assertAllEqual(rt, [[1.0], [2.0, 3.0]])
    case.assertAllClose(rt, tf.ragged.constant([[1.0], [2.0, 3.0 + 1e-7]]))
    with pytest.raises(AssertionError, match="Lists differ"):
        case.assertAllEqual(rt, [[1.0], [2.0]])
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        case.assertAllClose(rt, [[1.0], [2.0, 3.5]])
    with pytest.raises(AssertionError, match="ragged_rank mismatch"):
        case.assertAllEqual(rt, np.array([[1.0], [2.0, 3.0]], dtype=object))
