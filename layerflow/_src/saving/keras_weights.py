"""save_weights / load_weights for Keras layers and models (placeholder until the saving work lands)."""

from typing import Any


def save_weights(root: Any, filepath: Any, overwrite: bool = True, save_format: Any = None,
                 options: Any = None) -> None:  # fmt: skip
    raise NotImplementedError("save_weights is being implemented (issue 5).")


def load_weights(root: Any, filepath: Any, skip_mismatch: bool = False, by_name: bool = False,
                 options: Any = None) -> Any:  # fmt: skip
    raise NotImplementedError("load_weights is being implemented (issue 5).")
