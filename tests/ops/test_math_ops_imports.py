"""math_ops is the ops' common import point: the names split out into core_ops and compare_ops
are the same objects there, so `math_ops.reduce_sum` and friends keep working."""

import layerflow as tf
from layerflow._src.ops import compare_ops, core_ops, math_ops


def _defined_in(module):
    return [
        n for n, v in vars(module).items()
        if callable(v) and getattr(v, "__module__", None) == module.__name__
        and n not in ("_", "_compare", "_extremum")
    ]  # fmt: skip


def test_split_names_are_re_exported_from_math_ops():
    for module in (core_ops, compare_ops):
        names = _defined_in(module)
        assert len(names) > 10, module.__name__
        for n in names:
            assert getattr(math_ops, n) is getattr(module, n), f"math_ops.{n}"


def test_the_facade_uses_the_same_objects():
    assert tf.reduce_sum is math_ops.reduce_sum is core_ops.reduce_sum
    assert tf.cast is math_ops.cast is compare_ops.cast
    assert int(tf.reduce_sum(tf.cast(tf.equal([1, 2, 3], [1, 0, 3]), tf.int32))) == 2
