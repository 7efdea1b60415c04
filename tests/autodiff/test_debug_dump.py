"""tf.debugging.experimental.enable_dump_debug_info (a JSON-lines record per op, TF's modes,
filters, circular buffer, TF's re-enable rules) and enable/disable_traceback_filtering."""

import json
import os
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.tape import _state

X = tf.debugging.experimental


def _records(root):
    with open(os.path.join(root, "execution.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def root(tmp_path):
    yield str(tmp_path / "dump")
    X.disable_dump_debug_info()
    assert _state.tapes == []


def test_dump_records_each_op_with_shapes_and_health(root):
    writer = X.enable_dump_debug_info(root, tensor_debug_mode="FULL_HEALTH")
    x = tf.constant([np.nan, -np.inf, -1.0, 0.0, 2.0])
    tf.multiply(x, 1.0)
    tf.exp(tf.constant([0.0]))
    writer.FlushExecutionFiles()
    recs = _records(root)
    assert [r["op_type"] for r in recs] == ["multiply", "exp"]
    mul = recs[0]
    assert mul["inputs"] == [{"dtype": "float32", "shape": [5]}, {"dtype": "float32", "shape": []}]
    out = mul["outputs"][0]
    assert (out["nan"], out["neg_inf"], out["pos_inf"], out["size"]) == (1, 1, 0, 5)
    assert (out["negative"], out["zero"], out["positive"]) == (1, 1, 1)
    assert mul["device"].endswith("CPU:0") and mul["stack"][0][0] == __file__
    with open(os.path.join(root, "metadata.json")) as f:
        meta = json.load(f)
    assert meta["tensor_debug_mode"] == "FULL_HEALTH" and meta["circular_buffer_size"] == 1000


@pytest.mark.parametrize(
    "mode,want",
    [("NO_TENSOR", {"dtype": "float32"}),
     ("CURT_HEALTH", {"dtype": "float32", "any_inf_or_nan": True}),
     ("CONCISE_HEALTH", {"dtype": "float32", "size": 2, "neg_inf": 0, "pos_inf": 1, "nan": 0}),
     ("SHAPE", {"dtype": "float32", "rank": 1, "size": 2, "shape": [2]})],
)  # fmt: skip
def test_tensor_debug_modes(root, mode, want):
    X.enable_dump_debug_info(root, tensor_debug_mode=mode, circular_buffer_size=-1)
    tf.multiply(tf.constant([1.0, np.inf]), 1.0)
    assert _records(root)[0]["outputs"] == [want]  # unbuffered: written at once


def test_circular_buffer_filters_and_disable(root):
    X.enable_dump_debug_info(root, circular_buffer_size=2, op_regex="^(exp|sinh)$",
                             tensor_dtypes=[tf.float64])  # fmt: skip
    a, b = tf.constant([1.0], tf.float64), tf.constant([1.0])
    for _ in range(3):
        tf.exp(a)
    tf.exp(b)  # float32: filtered out
    tf.sinh(a)
    tf.cosh(a)  # not matched by the regex
    assert _records(root) == []  # still buffered
    X.disable_dump_debug_info()
    recs = _records(root)
    assert [(r["index"], r["op_type"]) for r in recs] == [(2, "exp"), (3, "sinh")]
    tf.exp(a)  # disabled: nothing more
    assert len(_records(root)) == 2


def test_enable_rules_as_tf(root, tmp_path):
    w = X.enable_dump_debug_info(root)
    assert X.enable_dump_debug_info(root) is w  # idempotent
    with pytest.raises(ValueError, match="different tensor-debug mode"):
        X.enable_dump_debug_info(root, tensor_debug_mode="SHAPE")
    with pytest.raises(ValueError, match="circular-buffer size"):
        X.enable_dump_debug_info(root, circular_buffer_size=5)
    other = str(tmp_path / "other")
    X.enable_dump_debug_info(other, tensor_debug_mode="SHAPE")  # replaces the first
    tf.exp(tf.constant(1.0))
    X.disable_dump_debug_info()
    assert _records(root) == [] and len(_records(other)) == 1
    with pytest.raises(ValueError, match="Invalid value in tensor_debug_mode"):
        X.enable_dump_debug_info(root, tensor_debug_mode="ALL")


def _raise_inside_layerflow():
    try:
        tf.reshape(tf.constant([1.0, 2.0]), [3])
    except Exception:
        return sys.exc_info()


def test_traceback_filtering_hides_layerflow_frames(capsys):
    assert tf.debugging.is_traceback_filtering_enabled() is False
    previous = sys.excepthook
    tf.debugging.enable_traceback_filtering()
    try:
        assert tf.debugging.is_traceback_filtering_enabled() is True
        kind, err, tb = _raise_inside_layerflow()
        sys.excepthook(kind, err, tb)
        shown = capsys.readouterr().err
        assert "_raise_inside_layerflow" in shown and "InvalidArgumentError" in shown
        assert "layerflow/_src" not in shown
    finally:
        tf.debugging.disable_traceback_filtering()
    assert sys.excepthook is previous and not tf.debugging.is_traceback_filtering_enabled()
    kind, err, tb = _raise_inside_layerflow()
    sys.excepthook(kind, err, tb)
    assert "layerflow/_src" in capsys.readouterr().err
    np.testing.assert_equal(tf.debugging.is_traceback_filtering_enabled(), False)
