"""Who may touch arrays (the rule in `layerflow/_src/__init__.py`), checked with ast.

`keras/` reads no `._data`, names no `xp` and calls no `__array_namespace__`; nothing above
`backend/` names CuPy, CUDA or NCCL. An exception needs an entry in ALLOWED with its reason.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "layerflow" / "_src"
ARRAY_ATTRS = {"_data", "xp", "__array_namespace__"}
DEVICE_WORDS = ("cupy", "cuda", "nccl")
# keras files allowed an array access, each with its reason (none today).
ALLOWED: dict[str, str] = {}


def array_accesses(source: str) -> list[tuple[int, str]]:
    """(line, what) for every `._data` / `.xp` / `.__array_namespace__` attribute and every
    name `xp` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ARRAY_ATTRS:
            found.append((node.lineno, "." + node.attr))
        elif isinstance(node, ast.Name) and node.id == "xp":
            found.append((node.lineno, "xp"))
        elif isinstance(node, ast.arg) and node.arg == "xp":
            found.append((node.lineno, "xp"))
    return found


def device_mentions(source: str) -> list[tuple[int, str]]:
    """(line, word) for every import or attribute naming CuPy, CUDA or NCCL."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        for name in names:
            low = name.lower()
            if any(w in low.split(".") or low == w for w in DEVICE_WORDS):
                found.append((node.lineno, name))
    return found


def _keras_files():
    return sorted((SRC / "keras").rglob("*.py"))


def test_keras_touches_no_array():
    problems = []
    for path in _keras_files():
        rel = str(path.relative_to(SRC))
        if rel in ALLOWED:
            continue
        for line, what in array_accesses(path.read_text()):
            problems.append(f"{rel}:{line}: {what}")
    assert not problems, (
        "keras/ computes with ops and writes through Variable; it must not touch arrays "
        "(layerflow/_src/__init__.py):\n" + "\n".join(problems)
    )


def test_no_device_library_above_backend():
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "backend":
            continue
        for line, word in device_mentions(path.read_text()):
            problems.append(f"{rel}:{line}: {word}")
    assert not problems, "Only backend/ may name CuPy/CUDA/NCCL:\n" + "\n".join(problems)


def test_every_allowance_names_an_existing_file_and_a_reason():
    for rel, reason in ALLOWED.items():
        assert (SRC / rel).is_file(), rel
        assert len(reason.split()) >= 5, f"{rel}: give the reason in a sentence"


@pytest.mark.parametrize(
    "planted",
    [
        "def f(t):\n    return t._data + 1\n",
        "def f(v):\n    v._data += 1\n",
        "def f(t):\n    xp = t._device.xp\n    return xp.sum(t)\n",
        "def f(a):\n    return a.__array_namespace__().sqrt(a)\n",
        "def f(xp, a):\n    return a\n",
    ],
)
def test_a_planted_array_access_is_found(planted):
    assert array_accesses(planted)


@pytest.mark.parametrize(
    "planted",
    [
        "import cupy\n",
        "import cupy as cp\n",
        "from cupy.cuda import nccl\n",
        "def f(xp):\n    return xp.cuda.nccl.available\n",
    ],
)
def test_a_planted_device_library_is_found(planted):
    assert device_mentions(planted)


def test_clean_code_passes():
    clean = "def f(t, v):\n    v.assign_add(t * 2.0)\n    return tuple(t.shape), t.numpy()\n"
    assert not array_accesses(clean) and not device_mentions(clean)
