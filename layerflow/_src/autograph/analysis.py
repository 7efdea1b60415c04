"""Static analysis of one function body for the control-flow converter, on Python's `ast`.

Structured (no control-flow graph): the statements of a body are walked backward for liveness
(`_ag_live_in` / `_ag_live_out` on each statement: the names whose current value may still be
read) and forward for the names possibly defined on entry (`_ag_defined_in`). Nested functions,
classes, lambdas and comprehensions are their own scopes: their bindings stay inside, the names
they read from outside count as reads where they are defined.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def arg_names(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in every}


def stores(nodes: ast.AST | Iterable[ast.AST]) -> set[str]:
    """Names a statement (or statements) binds in its own scope."""
    out: set[str] = set()
    stack = list(nodes) if isinstance(nodes, list | tuple) else [nodes]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Store | ast.Del):
                out.add(n.id)
            continue
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(n.name)
            stack += n.decorator_list
            continue
        if isinstance(n, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        if isinstance(n, ast.Import | ast.ImportFrom):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name != "*"}
            continue
        if isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        stack.extend(ast.iter_child_nodes(n))
    return out


def declared(body: list[ast.stmt], kind: type) -> set[str]:
    """Names of the `global` (or `nonlocal`) statements of a function body (its own scope)."""
    out: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            out |= set(n.names)  # type: ignore[attr-defined]
        elif not isinstance(n, _DEFS):
            stack.extend(ast.iter_child_nodes(n))
    return out


def reads(node: ast.AST | None) -> set[str]:
    """Names read from the enclosing scope by an expression or statement (nested scopes count
    with what they read from outside)."""
    out: set[str] = set()

    def visit(n: ast.AST, bound: frozenset) -> None:
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load) and n.id not in bound:
                out.add(n.id)
            return
        if isinstance(n, ast.Lambda):
            for d in [*n.args.defaults, *(d for d in n.args.kw_defaults if d)]:
                visit(d, bound)
            visit(n.body, bound | arg_names(n.args))
            return
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in [*n.decorator_list, *n.args.defaults, *(d for d in n.args.kw_defaults if d)]:
                visit(d, bound)
            inner = bound | arg_names(n.args) | (stores(n.body) - declared(n.body, ast.Global))
            for s in n.body:
                visit(s, frozenset(inner))
            return
        if isinstance(n, ast.ClassDef):
            for d in [*n.decorator_list, *n.bases, *(k.value for k in n.keywords)]:
                visit(d, bound)
            for s in n.body:
                visit(s, bound)
            return
        if isinstance(n, _COMPREHENSIONS):
            targets = frozenset(stores([g.target for g in n.generators]))
            for i, g in enumerate(n.generators):
                visit(g.iter, bound if i == 0 else bound | targets)
                for cond in g.ifs:
                    visit(cond, bound | targets)
            for part in (n.key, n.value) if isinstance(n, ast.DictComp) else (n.elt,):
                visit(part, bound | targets)
            return
        for child in ast.iter_child_nodes(n):
            visit(child, bound)

    if node is not None:
        visit(node, frozenset())
    return out


def _reads_all(nodes: Iterable[ast.AST | None]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        out |= reads(n)
    return out


# --- liveness (backward) --------------------------------------------------------------------
def live_block(stmts: list[ast.stmt], out: set[str], brk: set[str], cont: set[str]) -> set[str]:
    for s in reversed(stmts):
        out = _live_stmt(s, out, brk, cont)
    return out


def _live_loop_head(node: ast.stmt, out: set[str]) -> set[str]:
    head: set[str] = set()
    extra = reads(getattr(node, "_ag_extra_test", None))
    for _ in range(50):
        after_orelse = live_block(node.orelse, out, set(), set())
        if isinstance(node, ast.While):
            new = reads(node.test) | extra | after_orelse
            new |= live_block(node.body, head | new, out, head | new)
        else:
            new = extra | after_orelse
            body_in = live_block(node.body, head | new, out, head | new)
            new |= body_in - stores(node.target)
        if new == head:
            break
        head = new
    return head


def _live_stmt(s: ast.stmt, out: set[str], brk: set[str], cont: set[str]) -> set[str]:
    s._ag_live_out = set(out)  # type: ignore[attr-defined]
    if isinstance(s, ast.Return):
        result = reads(s.value)
    elif isinstance(s, ast.Break):
        result = set(brk)
    elif isinstance(s, ast.Continue):
        result = set(cont)
    elif isinstance(s, ast.Raise):
        result = _reads_all([s.exc, s.cause])
    elif isinstance(s, ast.If):
        result = reads(s.test) | live_block(s.body, out, brk, cont)
        result |= live_block(s.orelse, out, brk, cont)
    elif isinstance(s, ast.While):
        result = _live_loop_head(s, out)
    elif isinstance(s, ast.For | ast.AsyncFor):
        result = reads(s.iter) | _live_loop_head(s, out)
        result |= _reads_all(getattr(s, "_ag_opts", {}).values())
    elif isinstance(s, ast.Try):
        fin = live_block(s.finalbody, out, brk, cont)
        handlers: set[str] = set()
        for h in s.handlers:
            handlers |= reads(h.type) | (live_block(h.body, fin, brk, cont) - {h.name})
        body_out = live_block(s.orelse, fin, brk, cont) | handlers
        result = live_block(s.body, body_out, brk, cont) | handlers | fin
    elif isinstance(s, ast.With | ast.AsyncWith):
        inner = live_block(s.body, out, brk, cont)
        bound = stores([i.optional_vars for i in s.items if i.optional_vars is not None])
        result = _reads_all(s.items) | (inner - bound)
    elif isinstance(s, ast.AugAssign):
        result = out | reads(s.value) | reads(s.target) | stores(s.target)
    else:
        result = (out - stores(s)) | reads(s)
    if isinstance(s, _LOOPS):
        result |= _reads_all(getattr(s, "_ag_opts", {}).values())
    s._ag_live_in = set(result)  # type: ignore[attr-defined]
    return result


# --- possibly defined (forward) -------------------------------------------------------------
def defined_block(stmts: list[ast.stmt], defined: set[str]) -> set[str]:
    for s in stmts:
        s._ag_defined_in = set(defined)  # type: ignore[attr-defined]
        defined = _defined_stmt(s, defined)
    return defined


def _defined_stmt(s: ast.stmt, defined: set[str]) -> set[str]:
    if isinstance(s, ast.If):
        return defined_block(s.body, defined) | defined_block(s.orelse, defined)
    if isinstance(s, _LOOPS):
        target = stores(s.target) if isinstance(s, ast.For | ast.AsyncFor) else set()
        head = set(defined)
        for _ in range(50):
            new = defined | defined_block(s.body, head | target)
            if new == head:
                break
            head = new
        return head | defined_block(s.orelse, head)
    if isinstance(s, ast.Try):
        out = defined_block(s.body, defined)
        for h in s.handlers:
            out |= defined_block(h.body, defined | ({h.name} if h.name else set()))
        out = defined_block(s.orelse, out)
        return defined_block(s.finalbody, out)
    if isinstance(s, ast.With | ast.AsyncWith):
        bound = stores([i.optional_vars for i in s.items if i.optional_vars is not None])
        return defined_block(s.body, defined | bound)
    return defined | stores(s)


def analyze(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Annotate every statement of `fn`'s body (its own scope) with liveness and definedness."""
    live_block(fn.body, set(), set(), set())
    params = arg_names(fn.args)
    outer = declared(fn.body, ast.Global) | declared(fn.body, ast.Nonlocal)
    defined_block(fn.body, params | outer)
