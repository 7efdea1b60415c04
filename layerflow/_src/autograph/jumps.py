"""Lower `break`, `continue` and `return` into flag variables, as TF's converters do.

`break` becomes `break_ = True; continue` and the loop also tests `not break_`; `continue`
becomes `continue_ = True` with the rest of the body under `if not continue_:`; a `return`
inside a conditional or a loop becomes `do_return = True; retval_ = value`, with what follows
under `if not do_return:` and loops also testing `not do_return`. What remains is plain
structured code that the control-flow converter can turn into functional form. Loop `else:`
blocks become `if not break_:` after the loop. `set_loop_options(...)` directives are lifted
out of loop bodies into the loop's options (`_ag_opts`). A `for` loop's extra stop test is kept
on the node as `_ag_extra_test`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_LOOPS = (ast.For, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Namer:
    """Fresh names that clash with no name of the function's source."""

    def __init__(self, tree: ast.AST) -> None:
        self.used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        self.used |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        self.used |= {
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)
        }

    def new(self, base: str) -> str:
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def _contains(node: ast.AST, kinds: tuple, stop: tuple) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        stack += [c for c in ast.iter_child_nodes(n) if not isinstance(c, stop)]
    return False


def _flag(name: str, value: bool) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(value))


def _not(name: str) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=ast.Name(name, ast.Load()))


def _and(first: ast.expr, second: ast.expr | None) -> ast.expr:
    return first if second is None else ast.BoolOp(op=ast.And(), values=[first, second])


def _guard(stmts: list[ast.stmt], is_jump: Callable[[ast.stmt], bool],
           replace: Callable[[ast.stmt], list[ast.stmt]], may_jump: Callable[[ast.stmt], bool],
           flag: str, into_loops: bool) -> list[ast.stmt]:  # fmt: skip
    """Replace each jump of a block (and of its nested blocks) and put what follows a statement
    that may jump under `if not flag:`; statements after a jump are dead and dropped."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        if is_jump(s):
            return out + [ast.copy_location(r, s) for r in replace(s)]
        jumps = may_jump(s)  # before the jumps inside are replaced
        if isinstance(s, ast.If) or (into_loops and isinstance(s, _LOOPS)):
            s.body = _guard(s.body, is_jump, replace, may_jump, flag, into_loops)
            s.orelse = _guard(s.orelse, is_jump, replace, may_jump, flag, into_loops)
        elif isinstance(s, ast.With | ast.AsyncWith):
            s.body = _guard(s.body, is_jump, replace, may_jump, flag, into_loops)
        elif isinstance(s, ast.Try):
            for block in ("body", "orelse", "finalbody"):
                setattr(s, block, _guard(getattr(s, block), is_jump, replace, may_jump, flag,
                                         into_loops))  # fmt: skip
            for h in s.handlers:
                h.body = _guard(h.body, is_jump, replace, may_jump, flag, into_loops)
        out.append(s)
        if jumps:
            rest = _guard(stmts[i + 1 :], is_jump, replace, may_jump, flag, into_loops)
            if rest:
                out.append(
                    ast.copy_location(ast.If(test=_not(flag), body=rest, orelse=[]), rest[0])
                )
            return out
    return out


def _is_directive(s: ast.stmt) -> bool:
    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
        return False
    f = s.value.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return name == "set_loop_options"


class _Loops(ast.NodeTransformer):
    """Directives, `break`, `continue` and loop `else:` of every loop, innermost first."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self.generic_visit(node)

    def _loop(self, node: ast.For | ast.While) -> list[ast.stmt]:
        opts: dict[str, ast.expr] = {}
        for s in [s for s in node.body if _is_directive(s)]:
            for kw in s.value.keywords:  # type: ignore[attr-defined]
                if kw.arg is not None:
                    opts[kw.arg] = kw.value
            node.body.remove(s)
        if not node.body:
            node.body = [ast.Pass()]
        node._ag_opts = opts  # type: ignore[attr-defined]
        node = self.generic_visit(node)  # inner loops first
        before: list[ast.stmt] = []
        after = node.orelse
        node.orelse = []
        stop = (*_LOOPS, *_SCOPES)
        if any(_contains(s, (ast.Break,), stop) for s in node.body):
            brk = self.namer.new("break_")
            node.body = _guard(
                node.body, lambda s: isinstance(s, ast.Break),
                lambda s: [_flag(brk, True), ast.Continue()],
                lambda s: False, brk, into_loops=False,
            )  # fmt: skip
            before.append(ast.copy_location(_flag(brk, False), node))
            if isinstance(node, ast.While):
                node.test = _and(_not(brk), node.test)
            else:
                node._ag_extra_test = _not(brk)  # type: ignore[attr-defined]
            if after:
                after = [ast.copy_location(ast.If(test=_not(brk), body=after, orelse=[]), after[0])]
        if any(_contains(s, (ast.Continue,), stop) for s in node.body):
            cont = self.namer.new("continue_")
            node.body = _guard(
                node.body, lambda s: isinstance(s, ast.Continue),
                lambda s: [_flag(cont, True)],
                lambda s: _contains(s, (ast.Continue,), stop), cont, into_loops=False,
            )  # fmt: skip
            node.body.insert(0, ast.copy_location(_flag(cont, False), node))
        return [*before, node, *after]

    visit_For = _loop
    visit_While = _loop

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node  # class bodies are not converted


def _definitely_returns(stmts: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """Move the statements after `if c: ... return` into the `else:` block (and vice versa),
    so both branches of a conditional return define the return value (TF's rewrite)."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            return [*out, s], True
        rest = stmts[i + 1 :]
        if isinstance(s, ast.If):
            s.body, b = _definitely_returns(s.body)
            s.orelse, o = _definitely_returns(s.orelse)
            if b and rest and not o:
                s.orelse, o = _definitely_returns(s.orelse + rest)
                return [*out, s], o
            if o and rest and not b:
                s.body, b = _definitely_returns(s.body + rest)
                return [*out, s], b
            if b and o:
                return [*out, s], True
        elif isinstance(s, _LOOPS):
            s.body, _ = _definitely_returns(s.body)
        elif isinstance(s, ast.With):
            s.body, d = _definitely_returns(s.body)
            if d:
                return [*out, s], True
        out.append(s)
    return out, False


def _lower_returns(fn: ast.FunctionDef, namer: Namer) -> None:
    nested = (ast.If, *_LOOPS)
    stop = _SCOPES

    def returns_inside(n: ast.AST) -> bool:
        return any(
            isinstance(c, nested) and _contains(c, (ast.Return,), stop)
            for c in ast.iter_child_nodes(n)
        ) or any(returns_inside(c) for c in ast.iter_child_nodes(n) if not isinstance(c, stop))

    if not returns_inside(ast.Module(body=fn.body, type_ignores=[])):
        return
    fn.body, _ = _definitely_returns(fn.body)
    do_return, retval = namer.new("do_return"), namer.new("retval_")

    def replace(s: ast.stmt) -> list[ast.stmt]:
        value = s.value if s.value is not None else ast.Constant(None)  # type: ignore[attr-defined]
        return [_flag(do_return, True),
                ast.Assign(targets=[ast.Name(retval, ast.Store())], value=value)]  # fmt: skip

    def add_tests(n: ast.AST) -> None:
        for c in ast.iter_child_nodes(n):
            if isinstance(c, stop):
                continue
            if isinstance(c, _LOOPS) and _contains(c, (ast.Return,), stop):
                if isinstance(c, ast.While):
                    c.test = _and(_not(do_return), c.test)
                else:
                    c._ag_extra_test = _and(_not(do_return), getattr(c, "_ag_extra_test", None))
            add_tests(c)

    add_tests(ast.Module(body=fn.body, type_ignores=[]))
    body = _guard(
        fn.body, lambda s: isinstance(s, ast.Return), replace,
        lambda s: _contains(s, (ast.Return,), stop), do_return, into_loops=True,
    )  # fmt: skip
    undefined = ast.Call(
        func=ast.Attribute(ast.Name("ag__", ast.Load()), "UndefinedReturnValue", ast.Load()),
        args=[], keywords=[],
    )  # fmt: skip
    head = [_flag(do_return, False),
            ast.Assign(targets=[ast.Name(retval, ast.Store())], value=undefined)]  # fmt: skip
    final = ast.Return(
        value=ast.Call(
            func=ast.Attribute(ast.Name("ag__", ast.Load()), "retval", ast.Load()),
            args=[ast.Name(retval, ast.Load())], keywords=[],
        )
    )  # fmt: skip
    where = fn.body[0]
    fn.body = [ast.copy_location(h, where) for h in head] + body
    fn.body.append(ast.copy_location(final, fn.body[-1]))


def lower_jumps(tree: ast.AST, namer: Namer) -> None:
    """Lower the jumps of every function of `tree` (the converted function and nested ones)."""
    _Loops(namer).visit(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            _lower_returns(node, namer)
