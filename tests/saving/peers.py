"""The interpreter with real TensorFlow and Keras that the interop tests run files through.

It is named by the environment variable LAYERFLOW_PEERS, the same one `bench/` uses.
`tests/conftest.py` sets it to `../peers/bin/python` beside the checkout when that exists and
the variable is unset; without it the interop tests are skipped, and a LAYERFLOW_PEERS that
names no file is an error, not a skip.
"""

import os
import pathlib

import pytest

VARIABLE = "LAYERFLOW_PEERS"


def python() -> pathlib.Path:
    """The peers' interpreter; fails the test when LAYERFLOW_PEERS names no file."""
    path = pathlib.Path(os.environ[VARIABLE])
    if not path.is_file():
        pytest.fail(
            f"{VARIABLE}={path} names no file; point it at a Python with tensorflow and keras "
            f"installed, or unset it to skip the real-Keras interop tests."
        )
    return path


needs_peers = pytest.mark.skipif(
    not os.environ.get(VARIABLE),
    reason=f"real Keras is not available: set {VARIABLE} to a Python with tensorflow and keras",
)
