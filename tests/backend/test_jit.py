"""The optional numba kernels: lazy import, the off switch, and the error without numba."""

import subprocess
import sys

import numpy as np
import pytest

from layerflow._src.backend import jit


@jit.kernel
def _scale(x, factor, out):
    for i in range(x.size):
        out[i] = x[i] * factor


@jit.kernel(fastmath=False)
def _total(x):
    s = 0.0
    for i in range(x.size):
        s += x[i]
    return s


@jit.kernel
def _scale_rows(x, factor, out):  # a kernel calling another one, named as a global
    for r in range(x.shape[0]):
        _scale(x[r], factor, out[r])


def test_import_layerflow_does_not_import_numba():
    code = "import sys, layerflow; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_off_switch_in_the_environment():
    code = (
        "from layerflow._src.backend import jit; import sys;"
        "print(jit.available(), jit.enabled(), 'numba' in sys.modules)"
    )
    env = {"LAYERFLOW_NUMBA": "0", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]


def test_use_overrides_enabled():
    with jit.use(False):
        assert not jit.enabled()
        with jit.use(True):
            assert jit.enabled() == jit.available()
        assert not jit.enabled()


@pytest.mark.skipif(not jit.available(), reason="numba is not installed (extra `fast`)")
def test_kernel_compiles_and_matches_numpy():
    x = np.arange(7, dtype=np.float32)
    out = np.empty_like(x)
    _scale(x, np.float32(3), out)
    np.testing.assert_array_equal(out, x * 3)
    assert _total(np.arange(5.0)) == 10.0
    x2 = np.arange(12, dtype=np.float32).reshape(3, 4)
    out2 = np.empty_like(x2)
    _scale_rows(x2, np.float32(2), out2)
    np.testing.assert_array_equal(out2, x2 * 2)
    assert _total.__name__ == "_total"


def test_kernel_without_numba_names_the_fix(monkeypatch):
    monkeypatch.setattr(jit, "_numba", False)

    @jit.kernel
    def _never(x):
        return x

    with pytest.raises(RuntimeError, match=r"'_never' needs numba.*layerflow\[fast\]"):
        _never(1)
    assert not jit.enabled()
