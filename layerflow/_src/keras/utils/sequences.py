"""`tf.keras.utils.pad_sequences`: a list of sequences to one padded NumPy array."""

from __future__ import annotations

from typing import Any

import numpy as np


def pad_sequences(sequences: Any, maxlen: int | None = None, dtype: Any = "int32",
                  padding: str = "pre", truncating: str = "pre",
                  value: Any = 0.0) -> np.ndarray:  # fmt: skip
    """Pad (or truncate) every sequence to `maxlen` (default: the longest), as Keras does.

    `padding`/`truncating` are "pre" (at the start, the default) or "post". Strings need
    `dtype=object` (or a string dtype).

    >>> import layerflow as tf
    >>> tf.keras.utils.pad_sequences([[1, 2, 3], [4]], maxlen=2, padding="post", value=-1)
    array([[ 2,  3],
           [ 4, -1]], dtype=int32)
    """
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood: use "pre" or "post".')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood: use "pre" or "post".')
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    lengths = []
    sample_shape: tuple = ()
    found = False
    for x in sequences:
        try:
            lengths.append(len(x))
        except TypeError:
            raise ValueError(
                f"`sequences` must be a list of iterables. Found non-iterable: {x!s}"
            ) from None
        if not found and len(x):
            sample_shape = np.asarray(x).shape[1:]
            found = True
    if maxlen is None:
        maxlen = int(np.max(lengths)) if lengths else 0
    elif maxlen < 0:
        raise ValueError(f"maxlen must be non-negative or None, got {maxlen}.")
    is_str = np.issubdtype(np.dtype(dtype), np.str_) if dtype is not object else False
    if isinstance(value, str) and dtype is not object and np.dtype(dtype) != object and not is_str:
        raise ValueError(
            f"`dtype` {dtype} is not compatible with `value`'s type: {type(value)}\n"
            "You should set `dtype=object` for variable length strings."
        )
    out = np.full((len(lengths), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(
                f"Shape of sample {trunc.shape[1:]} of sequence at position {i} is different "
                f"from expected shape {sample_shape}"
            )
        if padding == "post":
            out[i, : len(trunc)] = trunc
        else:
            out[i, -len(trunc) :] = trunc
    return out
