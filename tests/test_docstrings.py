"""Every `>>>` example in the package runs and prints what its docstring says."""

import doctest
import importlib
import os
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "layerflow"
SKIP = {"layerflow.demo"}  # a script: tests/test_demo.py runs it
# Modules whose examples need an optional dependency (pyproject's extras), skipped without it.
NEEDS = {
    "layerflow._src.ops.special_math_ops": "scipy",
    "layerflow._src.ops.bessel_ops": "scipy",
    "layerflow._src.ops.sobol_ops": "scipy",
    "layerflow._src.summary.writer": "tensorboard",
    "layerflow._src.ops.image_codec_ops": "PIL",
    "layerflow._src.ops.image_encode_ops": "PIL",
    "layerflow._src.keras.preprocessing_legacy.image_transforms": "scipy",
}
MODULES = sorted(
    ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py")
)


@pytest.mark.parametrize("name", [m for m in MODULES if m not in SKIP])
def test_examples(name):
    if ".datasets." in name and not os.environ.get("LAYERFLOW_DATASETS"):
        pytest.skip("the loaders' examples read the data files; nothing may download in tests")
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_examples_exist():
    finder = doctest.DocTestFinder(exclude_empty=True)
    count = sum(
        len(t.examples)
        for name in MODULES
        if name not in SKIP
        for t in finder.find(importlib.import_module(name), name)
    )
    assert count > 200
