"""The per-weight options Keras layers take (`<weight>_initializer`, `_regularizer`,
`_constraint`), looked up and stored the same way by every layer that creates weights."""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import constraints, initializers, regularizers


def set_weight_options(
    layer: Any, weight: str, initializer: Any, regularizer: Any, constraint: Any
) -> None:
    """Store `layer.<weight>_initializer/_regularizer/_constraint` from their Keras identifiers.

    >>> from layerflow._src.keras.layers.weight_options import set_weight_options
    >>> class Holder: pass
    >>> h = Holder()
    >>> set_weight_options(h, "kernel", "zeros", None, None)
    >>> type(h.kernel_initializer).__name__, h.kernel_regularizer, h.kernel_constraint
    ('Zeros', None, None)
    """
    setattr(layer, f"{weight}_initializer", initializers.get(initializer))
    setattr(layer, f"{weight}_regularizer", regularizers.get(regularizer))
    setattr(layer, f"{weight}_constraint", constraints.get(constraint))
