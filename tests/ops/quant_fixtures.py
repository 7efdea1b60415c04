"""Loading tests/ops/fixtures/quantization.json (TF 2.21's values, made by
make_quantization_fixtures.py) for the tf.quantization tests."""

import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
from quant_inputs import QX  # noqa: E402, F401 - the inputs the fixtures were made from

DATA = json.loads((pathlib.Path(__file__).parent / "fixtures" / "quantization.json").read_text())


def arr(rec):
    """A fixture array: {"dtype", "shape", "values"} as NumPy."""
    return np.array(rec["values"], dtype=rec["dtype"]).reshape(rec["shape"])


def label(case):
    """A short test id from a fixture case's settings."""
    keys = (
        "T",
        "mode",
        "round_mode",
        "narrow_range",
        "axis",
        "min_range",
        "max_range",
        "min",
        "max",
        "num_bits",
        "signed_input",
        "range_given",
        "input_min",
        "input_max",
        "dtype",
    )
    return "-".join(str(case[k]) for k in keys if k in case and not isinstance(case[k], dict))


def tf_error(key):
    """The class name and message TF raised for the error case `key`."""
    rec = DATA["errors"][key]
    return rec["error"], rec.get("message", "")
