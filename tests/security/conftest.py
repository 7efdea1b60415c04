"""Fixtures for the hostile-file tests: sentinels in place of dangerous callables."""

import pytest
from hostile import DANGEROUS


@pytest.fixture
def sentinels(monkeypatch):
    """Replace every dangerous callable (hostile.DANGEROUS) by a recorder returning its first
    argument, so that model building goes on and a hole shows as a recorded call rather than as
    an incidental error. Yields the list of recorded `(qualified name, args)` calls.
    """
    calls = []

    def make(qualname, real):
        def record(*args, **kwargs):
            if qualname == "builtins.eval" and args and isinstance(args[0], str):
                # The standard library evals source text (collections.namedtuple); a config
                # can only make the loader call eval on a tensor, never on a string.
                return real(*args, **kwargs)
            calls.append((qualname, args))
            return args[0] if args else None

        record.__name__ = qualname.rsplit(".", 1)[-1]
        return record

    for module, attr, module_name in DANGEROUS:
        monkeypatch.setattr(module, attr, make(f"{module_name}.{attr}", getattr(module, attr)))
    return calls
