"""AutoGraph's entry points: `convert(fn)` (what `tf.function` calls), `converted_call` (what
converted code calls instead of a plain call), `to_graph`, `to_code`, `do_not_convert`.

A function is converted from its own source: parsed with `ast` at its positions in its file,
transformed (`jumps`, `lowering`), compiled under its file name (so tracebacks name the user's
lines) and rebuilt with the original globals, closure cells and defaults, as TF does. The
generated code is cached by the original code object. Functions without source (builtins, C
code, interactive definitions) run as they are, with TF's warning; layerflow's own code, NumPy,
the standard library and other allow-listed packages are never converted.
"""

from __future__ import annotations

import ast
import functools
import inspect
import logging
import os
import pathlib
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

from layerflow._src.autograph import control_flow, py_builtins, variables
from layerflow._src.autograph.lowering import convert_tree

logger = logging.getLogger("layerflow.autograph")

_LAYERFLOW_DIR = str(pathlib.Path(__file__).resolve().parents[2]) + os.sep
# Top-level packages whose functions run unconverted (TF's DoNotConvert list, plus ours).
DO_NOT_CONVERT = frozenset({
    "layerflow", "numpy", "cupy", "scipy", "pandas", "matplotlib", "tensorflow", "keras",
    "tf_keras", "jax", "torch", "PIL", "IPython", "ipdb", "mock", "pytest", "_pytest", "pluggy",
    "hypothesis", "h5py", "tqdm", "mpi4py", "threadpoolctl", "numexpr", "numba",
})  # fmt: skip
_NOT_CONVERTED_WARNING = (
    "AutoGraph could not transform {fn} and will run it as-is.\nCause: {cause}\n"
    "To silence this warning, decorate the function with "
    "@tf.autograph.experimental.do_not_convert"
)

_verbosity = [int(os.environ.get("AUTOGRAPH_VERBOSITY", "0") or 0), False]
# Original code object -> (factory code, generated source) or the reason it cannot convert.
_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_generated: weakref.WeakSet = weakref.WeakSet()


class ConversionError(ValueError):
    """A function that `to_graph` / `to_code` was asked to convert cannot be converted."""


# --- the namespace generated code sees as `ag__` --------------------------------------------
def converted_call(f: Any, args: tuple, kwargs: dict | None, caller_fn_scope: Any = None,
                   options: Any = None) -> Any:  # fmt: skip
    """Call `f(*args, **kwargs)`, converting `f` first when it is user code (TF's
    `ag__.converted_call`); builtins like `print`, `len`, `range` get their tensor-aware forms."""
    kwargs = kwargs or {}
    try:
        override = py_builtins.BUILTIN_OVERRIDES.get(f)
    except TypeError:  # unhashable callable
        override = None
    if override is not None:
        return override(*args, **kwargs)
    if isinstance(f, functools.partial):
        return converted_call(f.func, (*f.args, *args), {**f.keywords, **kwargs})
    return convert(f)(*args, **kwargs)


def _operators() -> types.SimpleNamespace:
    names = ["if_stmt", "while_stmt", "for_stmt"]
    ns = {n: getattr(control_flow, n) for n in names}
    for n in ["if_exp", "and_", "or_", "not_", "assert_stmt"]:
        ns[n] = getattr(py_builtins, n)
    for n in ["Undefined", "UndefinedReturnValue", "ld", "retval"]:
        ns[n] = getattr(variables, n)
    return types.SimpleNamespace(**ns, converted_call=converted_call)


_AG = _operators()


# --- what is converted ----------------------------------------------------------------------
def _is_allowlisted(fn: Any) -> bool:
    if getattr(fn, "__ag_do_not_convert__", False):
        return True
    code = getattr(fn, "__code__", None)
    if code is not None and (code in _generated or code.co_filename.startswith(_LAYERFLOW_DIR)):
        return True
    top = (getattr(fn, "__module__", None) or "").split(".")[0]
    return top in DO_NOT_CONVERT or top in sys.stdlib_module_names


def convert(fn: Any) -> Any:
    """`fn` with AutoGraph applied: a converted function (bound again for a method), or `fn`
    itself when it is allow-listed or cannot be converted (with TF's warning).

    This is the one call `tf.function(autograph=True)` makes on the Python function it traces.
    """
    if inspect.ismethod(fn):
        new = convert(fn.__func__)
        return fn if new is fn.__func__ else types.MethodType(new, fn.__self__)
    if not inspect.isfunction(fn):
        call = vars(type(fn)).get("__call__") if callable(fn) else None
        if not inspect.isclass(fn) and inspect.isfunction(call) and not _is_allowlisted(call):
            return convert(fn.__call__)
        return fn
    if _is_allowlisted(fn):
        return fn
    entry = _factory(fn)
    if isinstance(entry, str):
        return fn
    return _instantiate(fn, entry[0])


def _factory(fn: types.FunctionType) -> tuple[types.CodeType, str] | str:
    code = fn.__code__
    entry = _cache.get(code)
    if entry is None:
        try:
            entry = _transform(fn)
        except _NoSource as err:
            entry = str(err)
            logger.warning(_NOT_CONVERTED_WARNING.format(fn=fn, cause=err))
        _cache[code] = entry
        if not isinstance(entry, str) and _verbosity[0] >= 1:
            logger.info("Converted %s:\n%s", fn, entry[1])
    return entry


class _NoSource(Exception):
    pass


def _function_node(fn: types.FunctionType) -> tuple[ast.FunctionDef, str]:
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise _NoSource("generators and coroutines are not converted")
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError) as err:
        raise _NoSource(f"could not get source code ({err})") from None
    text = "".join(lines)
    indented = bool(lines) and lines[0][:1] in (" ", "\t")
    try:
        # Parsing an indented block under `if 1:` keeps every column as in the file.
        tree = ast.parse("if 1:\n" + text if indented else text)
    except SyntaxError:
        tree = None
    if code.co_name == "<lambda>":
        return _lambda_node(fn, tree, start, indented), code.co_filename
    if tree is None:
        raise _NoSource("could not parse the source code")
    node = tree.body[0].body[0] if indented else tree.body[0]  # type: ignore[attr-defined]
    if not isinstance(node, ast.FunctionDef) or node.name != code.co_name:
        raise _NoSource(f"the source at line {start} is not the definition of {code.co_name}")
    ast.increment_lineno(node, start - 2 if indented else start - 1)
    return node, code.co_filename


def _lambda_node(fn: types.FunctionType, tree: ast.AST | None, start: int,
                 indented: bool) -> ast.FunctionDef:  # fmt: skip
    if tree is None:
        raise _NoSource("could not parse the source code of the lambda")
    ast.increment_lineno(tree, start - 2 if indented else start - 1)
    code = fn.__code__
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    found = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
        and [a.arg for a in [*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs]] == params
    ]  # fmt: skip
    if len(found) != 1:
        raise _NoSource(f"could not identify the lambda's source ({len(found)} candidates)")
    lam = found[0]
    node = ast.FunctionDef(name="lambda__", args=lam.args, body=[ast.Return(lam.body)],
                           decorator_list=[], returns=None)  # fmt: skip
    return ast.copy_location(node, lam)


def _transform(fn: types.FunctionType) -> tuple[types.CodeType, str]:
    node, filename = _function_node(fn)
    code = fn.__code__
    node.decorator_list = []
    # Defaults come from the original function object, not from evaluating the source again.
    node.args.defaults = []
    node.args.kw_defaults = [None] * len(node.args.kwonlyargs)
    node.returns = None
    for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
        a.annotation = None
    node.name = "tf__" + (code.co_name if code.co_name != "<lambda>" else "lambda")
    self_arg = code.co_varnames[0] if "__class__" in code.co_freevars and code.co_argcount else None
    node = convert_tree(node, self_arg)
    source = ast.unparse(node)
    module = _factory_module(node, code.co_freevars)
    compiled = compile(module, filename, "exec", dont_inherit=True)
    namespace: dict[str, Any] = {}
    exec(compiled, namespace)  # noqa: S102 - the transformed source of the user's own function
    factory = namespace["outer_factory"]()
    # Tracebacks name the user's function (`in mm`, as TF's filtered traces do), not `tf__mm`.
    original = code.co_name if code.co_name != "<lambda>" else "<lambda>"
    inner = factory.__code__
    inner = inner.replace(co_consts=tuple(
        c.replace(co_name=original, co_qualname=code.co_qualname)
        if isinstance(c, types.CodeType) and c.co_name == node.name else c
        for c in inner.co_consts
    ))  # fmt: skip
    _mark_generated(compiled)
    _mark_generated(inner)
    return inner, source


def _factory_module(node: ast.FunctionDef, freevars: tuple[str, ...]) -> ast.Module:
    def empty_args(*names: str) -> ast.arguments:
        return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                             kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])  # fmt: skip

    inner = ast.FunctionDef(
        name="inner_factory", args=empty_args("ag__"), decorator_list=[], returns=None,
        body=[node, ast.Return(ast.Name(node.name, ast.Load()))],
    )  # fmt: skip
    cells = [ast.Assign(targets=[ast.Name(v, ast.Store())], value=ast.Constant(None))
             for v in freevars]  # fmt: skip
    outer = ast.FunctionDef(
        name="outer_factory", args=empty_args(), decorator_list=[], returns=None,
        body=[*cells, inner, ast.Return(ast.Name("inner_factory", ast.Load()))],
    )  # fmt: skip
    module = ast.Module(body=[outer], type_ignores=[])
    for n in ast.walk(module):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            ast.copy_location(n, node)
    return ast.fix_missing_locations(module)


def _mark_generated(code: types.CodeType) -> None:
    stack = [code]
    while stack:
        c = stack.pop()
        _generated.add(c)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]


def _instantiate(fn: types.FunctionType, factory_code: types.CodeType) -> types.FunctionType:
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[name] for name in factory_code.co_freevars)
    factory = types.FunctionType(factory_code, fn.__globals__, "inner_factory", (), closure)
    new = factory(_AG)
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__name__, new.__qualname__ = fn.__name__, fn.__qualname__
    new.__doc__, new.__module__ = fn.__doc__, fn.__module__
    new.__dict__.update(fn.__dict__)
    new.__ag_converted__ = True  # type: ignore[attr-defined]
    return new


# --- the public API -------------------------------------------------------------------------
def _convertible(entity: Any, what: str) -> types.FunctionType:
    target = entity.__func__ if inspect.ismethod(entity) else entity
    if not inspect.isfunction(target):
        raise ConversionError(
            f"{what}: {entity!r} is not a Python function or method; AutoGraph converts "
            "functions written in Python (pass the function, not its result)."
        )
    if _is_allowlisted(target):
        return target
    entry = _factory(target)
    if isinstance(entry, str):
        raise ConversionError(f"{what}: could not convert {entity!r}: {entry}")
    return target


def to_graph(entity: Callable, recursive: bool = True,
             experimental_optional_features: Any = None) -> Callable:  # fmt: skip
    """The converted Python function of `entity` (`tf.autograph.to_graph`): its `if`, `while`
    and `for` on tensors become `tf.cond` / `tf.while_loop`; on Python values they stay Python.

    >>> import layerflow as tf
    >>> def f(x):
    ...     if x > 0:
    ...         x = x * 2
    ...     return x
    >>> int(tf.autograph.to_graph(f)(tf.constant(3)))
    6
    """
    _convertible(entity, "to_graph")
    return convert(entity)


def to_code(entity: Callable, recursive: bool = True,
            experimental_optional_features: Any = None) -> str:  # fmt: skip
    """The source AutoGraph generates for `entity` (`tf.autograph.to_code`), e.g. for
    `def f(x): if x > 0: x = -x; return x` a `def tf__f(x):` whose `if` became
    `ag__.if_stmt(x > 0, if_body, else_body, get_state, set_state, ('x',), 1)`. Functions
    defined where their source cannot be read (an interactive session) cannot be shown.
    """
    target = _convertible(entity, "to_code")
    if _is_allowlisted(target):
        raise ConversionError(f"to_code: {entity!r} is not converted by AutoGraph (allow-listed)")
    return _factory(target)[1] + "\n"  # type: ignore[index]


def do_not_convert(func: Callable | None = None) -> Any:
    """Mark `func` to run as it is, never converted (`tf.autograph.experimental.do_not_convert`).

    >>> import layerflow as tf
    >>> @tf.autograph.experimental.do_not_convert
    ... def f(x):
    ...     return x
    >>> tf.autograph.to_graph(f) is f
    True
    """
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    wrapper.__ag_do_not_convert__ = True  # type: ignore[attr-defined]
    return wrapper


def set_verbosity(level: int, alsologtostdout: bool = False) -> None:
    """How much AutoGraph logs (`tf.autograph.set_verbosity`); 1 or more logs each converted
    function's source at INFO level. `AUTOGRAPH_VERBOSITY` sets the starting value."""
    _verbosity[0], _verbosity[1] = int(level), bool(alsologtostdout)
    if alsologtostdout and not any(getattr(h, "_ag_stdout", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler._ag_stdout = True  # type: ignore[attr-defined]
        logger.addHandler(handler)


def get_verbosity() -> int:
    return _verbosity[0]


def trace(*args: Any) -> None:
    """Print `args` when the code runs in Python, i.e. at trace time (`tf.autograph.trace`)."""
    print(*args)
