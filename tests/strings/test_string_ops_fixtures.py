"""tf.strings / tf.strings.unicode_* / tf.io parsing ops against TF 2.21's results.

Each expression of `fixtures/cases_string_ops.py` ran once under real TensorFlow (fixtures/
README.md); here it runs under layerflow and must give the same dtype, shape and values, or an
error of the same class.
"""

import json
import math
import os
import sys

import pytest

import layerflow as tf

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, HERE)
from cases_string_ops import CASES  # noqa: E402
from encode import run  # noqa: E402

sys.path.remove(HERE)

with open(os.path.join(HERE, "string_ops.json")) as f:
    EXPECTED = json.load(f)


def _close(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a if k != "message")
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return a == b


@pytest.mark.parametrize("expr", CASES)
def test_matches_tensorflow(expr):
    want = EXPECTED[expr]
    got = run(tf, expr)
    assert _close(got, want), f"{expr}\n got: {got}\nwant: {want}"
