"""Shared checks of the modern application families against the tf_keras oracles written by
`fixtures/make_modern_oracles.py` (structure of every constructor, argument errors, forward
passes of tiny configurations with tf_keras's weights in Keras 2 HDF5 files).

Structure checks build the models with zero-filled weights (`zero_weights`): names, classes,
shapes and counts do not depend on the initial values, and the random initializers would
dominate the run time (EfficientNetB7 spends 80% of its build drawing truncated normals). The
largest models run only with LAYERFLOW_SLOW_TESTS=1.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import pathlib
import re
import types

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework import dtypes
from layerflow._src.keras.engine import layer_state

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
SLOW = os.environ.get("LAYERFLOW_SLOW_TESTS") == "1"


@functools.cache
def oracle(family: str) -> dict:
    with gzip.open(FIXTURES / f"modern_{family}.json.gz", "rt") as f:
        return json.load(f)


@functools.cache
def tiny_meta(family: str) -> list:
    return json.loads((FIXTURES / f"modern_{family}_tiny.json").read_text())


def tiny_arrays(family: str) -> dict:
    with np.load(FIXTURES / f"modern_{family}_tiny.npz") as f:
        return dict(f)


def tiny_h5(family: str, k: int) -> str:
    return str(FIXTURES / f"modern_{family}_tiny{k}.h5")


def kwargs_of(entry: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) and k == "input_shape" else v
            for k, v in entry["kwargs"].items()}  # fmt: skip


def case_id(entry: dict) -> str:
    kw = ",".join(f"{k}={v}" for k, v in entry["kwargs"].items() if k != "weights")
    return f"{entry['fn']}({kw})".replace(" ", "")


def structure(model: tf.keras.Model) -> dict:
    """What the oracle records of a model (see make_modern_oracles.structure)."""
    return {
        "name": model.name,
        "total": int(sum(np.prod(w.shape) for w in model.weights)),
        "trainable": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
        "n_layers": len(model.layers),
        "output_shape": list(model.output_shape),
        "input_shape": list(model.input_shape),
        "layers": [
            [layer.name, type(layer).__name__, [[w.name, list(w.shape)] for w in layer.weights]]
            for layer in model.layers
        ],
    }


def assert_same_structure(got: dict, want: dict) -> None:
    for key in ("name", "total", "trainable", "n_layers", "output_shape", "input_shape"):
        assert got[key] == want[key], f"{key}: got {got[key]}, tf_keras {want[key]}"
    for i, (g, w) in enumerate(zip(got["layers"], want["layers"])):
        assert g == w, f"layer {i}: got {g}, tf_keras {w}"


class _ZeroInit:
    def __call__(self, shape: tuple, dtype: object = None) -> np.ndarray:
        return np.zeros(shape, dtypes.as_dtype(dtype).np)


@pytest.fixture
def zero_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """New weights start as zeros instead of running their initializers (see the module doc)."""
    monkeypatch.setattr(
        layer_state, "initializers_mod", types.SimpleNamespace(get=lambda _: _ZeroInit())
    )


def build_case(module: object, entry: dict) -> tf.keras.Model:
    tf.keras.backend.clear_session()  # auto-generated names count from 0, as in the oracle
    return getattr(module, entry["fn"])(**kwargs_of(entry))


def structure_cases(family: str, slow: set[str]) -> list:
    """Every oracle structure, the `slow` constructors marked to run only with SLOW."""
    out = []
    for entry in oracle(family)["structures"]:
        marks = []
        if entry["fn"] in slow:
            marks.append(pytest.mark.skipif(not SLOW, reason="large; LAYERFLOW_SLOW_TESTS=1"))
        out.append(pytest.param(entry, id=case_id(entry), marks=marks))
    return out


def _normalized(message: str) -> str:
    return " ".join(re.sub(r"[`'\"]", "", message).split())


def check_error(module: object, family: str, key: str) -> None:
    """The constructor raises the oracle's error class with tf_keras's message (layerflow may
    append what it received)."""
    case = oracle(family)["errors"][key]
    fn = getattr(module, oracle(family)["structures"][0]["fn"])
    cls = {"ValueError": ValueError, "TypeError": TypeError}[case["type"]]
    tf.keras.backend.clear_session()
    with pytest.raises(cls) as info:
        fn(**kwargs_of(case))
    want = _normalized(case["message"].split("Received")[0])
    assert want in _normalized(str(info.value)), (str(info.value), case["message"])


def check_tiny_forward(builder: object, family: str, k: int, atol: float = 1e-4) -> tf.keras.Model:
    """Build tiny configuration `k` with tf_keras's weights file and compare the outputs."""
    meta = tiny_meta(family)[k]
    arrays = tiny_arrays(family)
    tf.keras.backend.clear_session()
    kwargs = kwargs_of(meta)
    kwargs["weights"] = tiny_h5(family, k)
    model = builder(**kwargs)
    assert_same_structure(structure(model), meta["structure"])
    x = arrays[f"m{k}/x"]
    np.testing.assert_allclose(
        model(x, training=False).numpy(), arrays[f"m{k}/y"], rtol=atol, atol=atol
    )
    return model
