"""Imports inside layerflow/_src point downward only (DESIGN.md), checked with ast."""

import ast
import pathlib

LEVELS = {
    "utils": 0,
    "backend": 1,
    "framework": 2,
    "autodiff": 3,
    "ops": 4,
    "saving": 5,
    "distribute": 5,
    "data": 5,
    "keras": 6,
}
SRC = pathlib.Path(__file__).resolve().parents[1] / "layerflow" / "_src"


def _imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def test_every_src_package_has_a_level():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert packages <= set(LEVELS), f"packages without a level: {packages - set(LEVELS)}"


def test_imports_point_downward():
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if len(rel.parts) < 2:
            continue
        level = LEVELS[rel.parts[0]]
        for lineno, module in _imports(path):
            if module == "layerflow" or (
                module.startswith("layerflow.") and not module.startswith("layerflow._src")
            ):
                problems.append(f"{rel}:{lineno} imports the public facade {module}")
                continue
            if not module.startswith("layerflow._src."):
                continue
            target = module.split(".")[2]
            if LEVELS[target] > level:
                problems.append(f"{rel}:{lineno} ({rel.parts[0]}) imports upward: {module}")
    assert not problems, "\n".join(problems)


def test_the_checker_sees_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from layerflow._src.keras import layers\n")
    assert list(_imports(bad)) == [(1, "layerflow._src.keras")]
