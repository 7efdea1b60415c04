"""Imports inside layerflow/_src point downward only (DESIGN.md), checked with ast.

Every import form is resolved to the module it names: `import a.b`, `from a import b` (a module
or a name of a package), relative `from . import x` / `from ..ops import y`, and
`importlib.import_module` / `__import__` calls, which are forbidden for layerflow modules outside
the facade (a string import is an import the reader cannot see). Function-level imports count
like module-level ones: an upward import is a design error, not something to hide in a function.

Cycles between modules are allowed only where the docstring of one module of the cycle says why
(the word "cycle" or "circular", and the names of the other modules of the cycle).
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

LEVELS = {
    "utils": 0,
    "backend": 1,
    "framework": 2,
    "autodiff": 3,
    "ops": 4,
    "autograph": 5,
    "saving": 5,
    "distribute": 5,
    "data": 5,
    "summary": 5,
    "function": 5,
    "testing": 5,
    "keras": 6,
}
SRC = pathlib.Path(__file__).resolve().parents[1] / "layerflow" / "_src"
PREFIX = "layerflow._src"


# --- resolving what a file imports ----------------------------------------------------------
def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    """`layerflow._src.keras.engine.model` for `root/keras/engine/model.py`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PREFIX, *parts])


def _is_module(name: str, root: pathlib.Path) -> bool:
    """Whether `name` (under layerflow._src) is a module or package of the tree at `root`."""
    if name == PREFIX:
        return True
    if not name.startswith(PREFIX + "."):
        return False
    rel = pathlib.Path(*name[len(PREFIX) + 1 :].split("."))
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def _string_prefix(node: ast.AST) -> str | None:
    """The literal text of a string argument, or the constant head of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        head = ""
        for value in node.values:
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                break
            head += value.value
        return head
    return None


def _is_dynamic_import(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in {"import_module", "__import__"}


def imports(source: str, name: str, is_package: bool, root: pathlib.Path):
    """Yield `(lineno, form, target)` for every import in `source`, module `name`.

    `target` is the full dotted name of the module imported (for `from pkg import x`: `pkg.x` when
    that is a module of the tree, else `pkg`); `form` is "import", "from", "relative" or
    "importlib" (for importlib, `target` is the string, or None when it is not a literal).
    """
    tree = ast.parse(source)
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, "import", alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level - 1 >= len(base_parts):
                    yield node.lineno, "relative", "<beyond the top package>"
                    continue
                base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                if node.module:
                    base = f"{base}.{node.module}"
                form = "relative"
            else:
                base, form = node.module, "from"
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield node.lineno, form, full if _is_module(full, root) else base
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            text = _string_prefix(node.args[0]) if node.args else None
            yield node.lineno, "importlib", text


def _judge(rel: str, level: int, top: str, lineno: int, form: str, target: str | None):
    where = f"{rel}:{lineno}"
    if form == "importlib":
        if target is None:
            return f"{where} imports a module named at run time (importlib); import it plainly"
        if target.startswith("layerflow") or target.startswith("."):
            return (
                f"{where} imports {target!r} with importlib; outside the facade, import "
                "layerflow modules with a plain import statement"
            )
        return None
    if (
        target == "layerflow"
        or (target.startswith("layerflow.") and not target.startswith(PREFIX))
        or target == "<beyond the top package>"
    ):
        return f"{where} imports the public facade ({target}) from inside layerflow._src"
    if not target.startswith(PREFIX + "."):
        return None
    other = target.split(".")[2]
    if other not in LEVELS:
        return f"{where} imports {target}, a package without a level in LEVELS"
    if LEVELS[other] > level:
        return f"{where} ({top}, level {level}) imports upward: {target} ({other}, {form} form)"
    return None


def check_file(path: pathlib.Path, root: pathlib.Path) -> list[str]:
    """Every layering problem of one source file of the tree `root` (a `layerflow/_src`)."""
    rel = path.relative_to(root)
    if len(rel.parts) < 2:
        return []
    top = rel.parts[0]
    if top not in LEVELS:
        return [f"{rel}: package {top!r} has no level in LEVELS"]
    name = module_name(path, root)
    found = imports(path.read_text(), name, path.name == "__init__.py", root)
    return [
        problem
        for lineno, form, target in found
        if (problem := _judge(str(rel), LEVELS[top], top, lineno, form, target))
    ]


# --- cycles ---------------------------------------------------------------------------------
def import_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (any form, any depth in the file)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        targets = graph.setdefault(name, set())
        for _, form, target in imports(path.read_text(), name, path.name == "__init__.py", root):
            if form != "importlib" and target and _is_module(target, root) and target != name:
                targets.add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _path_of(name: str, root: pathlib.Path) -> pathlib.Path:
    rel = pathlib.Path(*name[len(PREFIX) + 1 :].split("."))
    file = (root / rel).with_suffix(".py")
    return file if file.is_file() else root / rel / "__init__.py"


def check_cycles(root: pathlib.Path) -> list[str]:
    """Each import cycle must be explained in the docstring of one of its modules: the word
    "cycle" (or "circular") and the name of every other module of the cycle."""
    problems = []
    for component in cycles(import_graph(root)):
        short = {name: name.rpartition(".")[2] for name in component}
        explained = False
        for name in component:
            doc = (ast.get_docstring(ast.parse(_path_of(name, root).read_text())) or "").lower()
            others = [short[other] for other in component if other != name]
            if ("cycle" in doc or "circular" in doc) and all(
                re.search(rf"\b{re.escape(o)}\b", doc) for o in others
            ):
                explained = True
        if not explained:
            problems.append(
                f"import cycle {sorted(short.values())} ({', '.join(component)}): break it, or "
                "say why in the docstring of one of its modules (the word 'cycle' and the "
                "names of the other modules)"
            )
    return problems


def check_tree(root: pathlib.Path) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        problems += check_file(path, root)
    return problems + check_cycles(root)


# --- the real tree --------------------------------------------------------------------------
def test_every_src_package_has_a_level():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert packages <= set(LEVELS), f"packages without a level: {packages - set(LEVELS)}"


def test_imports_point_downward():
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        problems += check_file(path, SRC)
    assert not problems, "\n".join(problems)


def test_import_cycles_are_explained():
    problems = check_cycles(SRC)
    assert not problems, "\n".join(problems)


# --- the checker on planted modules ---------------------------------------------------------
def _plant(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if parent != pathlib.Path("."):
                init = root / parent / "__init__.py"
                if not init.exists():
                    init.write_text("")
        path.write_text(text)
    return root


UPWARD = {
    "absolute import": "import layerflow._src.keras.layers\n",
    "from a package import a module": "from layerflow._src import keras\n",
    "from a module import a name": "from layerflow._src.keras.layers import Dense\n",
    "from a package import a subpackage": "from layerflow._src.keras import engine\n",
    "relative package import": "from .. import keras\n",
    "relative module import": "from ..keras.engine import base_layer\n",
    "relative import of a name": "from ..keras.layers import Dense\n",
    "import inside a function": "def f():\n    from layerflow._src import keras\n",
    "facade import": "import layerflow as tf\n",
    "relative import of the facade": "from ... import nn\n",
}


@pytest.mark.parametrize("form", sorted(UPWARD))
def test_the_checker_sees_an_upward_import(tmp_path, form):
    root = _plant(
        tmp_path / "_src",
        {
            "ops/bad.py": UPWARD[form],
            "keras/layers/__init__.py": "Dense = object\n",
            "keras/engine/base_layer.py": "",
        },
    )
    problems = check_file(root / "ops" / "bad.py", root)
    assert len(problems) == 1, problems
    assert problems[0].startswith("ops/bad.py:")
    assert ("upward" in problems[0]) or ("facade" in problems[0])


@pytest.mark.parametrize(
    "source",
    [
        'import importlib\nimportlib.import_module("layerflow._src.backend")\n',
        'from importlib import import_module\nimport_module("layerflow._src.keras.layers")\n',
        'import importlib\nimportlib.import_module(f"layerflow._src.keras.{name}")\n',
        'import importlib\nimportlib.import_module(".engine", "layerflow._src.keras")\n',
        '__import__("layerflow._src.ops")\n',
        "import importlib\nimportlib.import_module(name)\n",
    ],
)
def test_the_checker_forbids_importlib_of_layerflow(tmp_path, source):
    root = _plant(tmp_path / "_src", {"keras/bad.py": source})
    problems = check_file(root / "keras" / "bad.py", root)
    assert len(problems) == 1 and "importlib" in problems[0], problems


def test_the_checker_accepts_downward_and_same_level_imports(tmp_path):
    root = _plant(
        tmp_path / "_src",
        {
            "keras/engine/model.py": (
                "from layerflow._src import backend\n"
                "from layerflow._src.ops import math_ops\n"
                "from . import functional\n"
                "from ..layers import core\n"
                "from ...saving import io\n"
                "import numpy as np\n"
                "from importlib.metadata import version\n"
            ),
            "keras/engine/functional.py": "",
            "keras/layers/core.py": "",
            "saving/io.py": "",
            "ops/math_ops.py": "",
            "backend/__init__.py": "",
        },
    )
    assert check_file(root / "keras" / "engine" / "model.py", root) == []


def test_relative_imports_resolve_against_the_package(tmp_path):
    root = _plant(tmp_path / "_src", {"ops/__init__.py": "from . import x\n", "ops/x.py": ""})
    found = list(imports("from . import x\n", "layerflow._src.ops", True, root))
    assert found == [(1, "relative", "layerflow._src.ops.x")]
    found = list(imports("from .x import y\n", "layerflow._src.ops.z", False, root))
    assert found == [(1, "relative", "layerflow._src.ops.x")]


def test_the_checker_sees_an_unexplained_cycle(tmp_path):
    files = {
        "keras/alpha.py": '"""Alpha."""\nfrom . import beta\n',
        "keras/beta.py": '"""Beta."""\n\ndef f():\n    from . import alpha\n',
        "keras/gamma.py": "from . import alpha\n",
    }
    root = _plant(tmp_path / "_src", files)
    assert cycles(import_graph(root)) == [
        ["layerflow._src.keras.alpha", "layerflow._src.keras.beta"]
    ]
    problems = check_tree(root)
    assert len(problems) == 1 and "import cycle ['alpha', 'beta']" in problems[0], problems

    body = "\n\ndef f():\n    from . import alpha\n"
    # Mentioning a cycle without naming the other module does not explain it.
    (root / "keras" / "beta.py").write_text('"""Beta (an import cycle)."""' + body)
    assert len(check_tree(root)) == 1
    (root / "keras" / "beta.py").write_text('"""Beta: import cycle, alpha builds Betas."""' + body)
    assert check_tree(root) == []
