"""Every case of cases.py on layerflow's `keras.backend` against tf_keras's saved outputs."""

import importlib.util
import pathlib

import numpy as np
import pytest

import layerflow as tf

HERE = pathlib.Path(__file__).parent
_spec = importlib.util.spec_from_file_location("backend_api_cases", HERE / "cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
with np.load(HERE / "fixtures" / "backend.npz") as _npz:
    FIXTURE = dict(_npz)
K = tf.keras.backend
TOL = {"ctc_cost": 1e-4, "ctc_decode_beam": 1e-4, "grad_rnn": 1e-5}


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_tf_keras(name):
    cases.bind(tf)
    result = cases.CASES[name](tf, K)
    if not isinstance(result, tuple):
        result = (result,)
    expected = sorted(k for k in FIXTURE if k.rsplit("/", 1)[0] == name)
    assert len(result) == len(expected), (
        f"{name}: {len(result)} outputs, tf_keras has {len(expected)}"
    )
    for i, got in enumerate(result):
        want = FIXTURE[f"{name}/{i}"]
        got = np.asarray(got)
        assert got.shape == want.shape, f"{name}/{i}: shape {got.shape} != tf_keras {want.shape}"
        assert got.dtype == want.dtype, f"{name}/{i}: dtype {got.dtype} != tf_keras {want.dtype}"
        if got.dtype.kind in "USb":
            np.testing.assert_array_equal(got, want, err_msg=f"{name}/{i}")
            continue
        tol = TOL.get(name, 2e-6 if got.dtype.kind == "f" else 0)
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol, err_msg=f"{name}/{i}")
