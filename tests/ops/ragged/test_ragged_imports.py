"""Each ragged module imports first in a fresh interpreter (no import cycle depends on which one
a program reaches first), the ops' ragged overrides come with it, and `import layerflow` alone
loads none of them."""

import subprocess
import sys

import pytest

MODULES = ["ragged_shape", "ragged_tensor", "ragged_ops", "ragged_spec", "ragged_getitem",
           "ragged_convert", "ragged_dispatch"]  # fmt: skip


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("module", MODULES)
def test_any_ragged_module_imports_first(module):
    out = _run(
        f"from layerflow._src.ops.ragged import {module}\n"
        "import layerflow as tf\n"
        "print(tf.experimental.DynamicRaggedShape.__name__, tf.ragged.constant([[1], [2, 3]]) + 1)"
    )
    assert out.strip() == "DynamicRaggedShape <tf.RaggedTensor [[2], [3, 4]]>"


def test_import_layerflow_loads_no_ragged_module():
    out = _run(
        "import sys, layerflow\n"
        "print(sorted(m for m in sys.modules if m.startswith('layerflow._src.ops.ragged')))"
    )
    assert out.strip() == "[]"
