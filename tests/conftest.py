import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_shared = ROOT.parent / "shared" / "data"
if "LAYERFLOW_DATASETS" not in os.environ and (_shared / "fashion-mnist").is_dir():
    os.environ["LAYERFLOW_DATASETS"] = str(_shared)


@pytest.fixture
def datasets_dir():
    path = os.environ.get("LAYERFLOW_DATASETS")
    if not path or not (pathlib.Path(path) / "fashion-mnist").is_dir():
        pytest.skip("Fashion-MNIST files not found; set LAYERFLOW_DATASETS=../shared/data")
    return pathlib.Path(path)
