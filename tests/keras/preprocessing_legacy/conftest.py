"""The tf_keras reference outputs (fixtures/make_fixture.py, run with real tf_keras 2.21)."""

import json
import pathlib

import pytest

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "tf_keras_preprocessing.json"


@pytest.fixture(scope="session")
def ref():
    return json.loads(FIXTURE.read_text())
