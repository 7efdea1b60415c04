"""Model configs as JSON (`config.json` of a `.keras` file, `model_from_json`): parsed with limits.

A config is data from a file: it is parsed without recursion limits being hit (a document nested
deeper than `MAX_DEPTH` is refused before anything walks it) and every problem with it is a
`ModelFileError` naming the file.
"""

from __future__ import annotations

import json
from typing import Any

from layerflow._src.saving.weights_file import WeightsFileError

# Real configs nest about 10 levels per model (a nested model adds ~4); 100 leaves ample room
# while keeping every recursive walk of the tree far from Python's recursion limit.
MAX_DEPTH = 100


class ModelFileError(WeightsFileError):
    """A model file (`.keras`) or model JSON is damaged or malformed; nothing was loaded.

    The twin of `WeightsFileError` for whole-model files, and a subclass of it (and so of
    ValueError): code that catches `WeightsFileError` for damaged `.keras` files still works.

    >>> issubclass(ModelFileError, ValueError)
    True
    """


def damaged(path: str | None, what: str) -> ModelFileError:
    """The error for the model file at `path` (or, for `path=None`, a model JSON string)."""
    if path is None:
        return ModelFileError(
            f"Cannot load the model JSON: {what}. Pass the string that model.to_json() "
            "returned; nothing was loaded."
        )
    return ModelFileError(
        f"Cannot load model file '{path}': {what}. The file is damaged or is not a `.keras` "
        "file; nothing was loaded. Save it again or restore it from a copy."
    )


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply lists and dicts nest in `value` (iteratively; stops counting past `limit`).

    >>> depth({"a": [1, [2]]})
    3
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def loads(text: str | bytes, path: str | None, member: str = "its JSON") -> Any:
    """Parse a config document; `ModelFileError` naming `path` for bad or too-deep JSON.

    >>> loads('{"class_name": "Dense"}', "m.keras")
    {'class_name': 'Dense'}
    >>> loads("[" * 100000 + "]" * 100000, "m.keras", "'config.json'")
    Traceback (most recent call last):
    ...
    layerflow._src.keras.saving.config_json.ModelFileError: Cannot load model file 'm.keras': ...
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(text)
    except RecursionError:
        value = None  # too deep for the parser: certainly deeper than MAX_DEPTH
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise damaged(path, f"{member} is not valid JSON ({e})") from None
    else:
        if depth(value) <= MAX_DEPTH:
            return value
    raise damaged(
        path, f"{member} nests lists and dicts deeper than the {MAX_DEPTH} levels allowed"
    )
