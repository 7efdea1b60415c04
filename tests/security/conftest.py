"""Fixtures for the hostile-file tests: sentinels in place of dangerous callables."""

import pytest

from .hostile import install_sentinels


@pytest.fixture
def sentinels(monkeypatch):
    """The dangerous callables of hostile.DANGEROUS replaced by recorders; yields their calls."""
    return install_sentinels(monkeypatch)
