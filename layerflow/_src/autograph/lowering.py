"""The AST passes after `jumps`: expressions and calls, then `if`/`while`/`for` in functional
form (`ag__.if_stmt`, `ag__.while_stmt`, `ag__.for_stmt`), then loads of possibly undefined
names through `ag__.ld`.

Every generated node takes the source position of the statement it replaces, so a traceback
through converted code names the user's file and line.
"""

from __future__ import annotations

import ast
from typing import Any

from layerflow._src.autograph import analysis
from layerflow._src.autograph.jumps import Namer, lower_jumps


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(ast.Name("ag__", ast.Load()), attr, ast.Load())


def _call(attr: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_ag(attr), args=list(args), keywords=[])


def _thunk(expr: ast.expr) -> ast.Lambda:
    no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                            kw_defaults=[], kwarg=None, defaults=[])  # fmt: skip
    return ast.Lambda(args=no_args, body=expr)


def stamp(node: Any, like: ast.AST) -> Any:
    """Give every node of `node` without a position the position of `like`."""
    if getattr(like, "lineno", None) is None:
        return node
    nodes = ast.walk(node) if isinstance(node, ast.AST) else [x for m in node for x in ast.walk(m)]
    for n in nodes:
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset = like.lineno, like.col_offset
            n.end_lineno = getattr(like, "end_lineno", like.lineno)
            n.end_col_offset = getattr(like, "end_col_offset", like.col_offset)
    return node


def _is_ag(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and (func.value.id == "ag__")
    )


class Expressions(ast.NodeTransformer):
    """Conditional expressions, `and`/`or`/`not`, `assert`, and calls through
    `ag__.converted_call` (so called user functions are converted too)."""

    def __init__(self, self_arg: str | None) -> None:
        self.self_arg = self_arg

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        extra = getattr(node, "_ag_extra_test", None)
        node = self.generic_visit(node)
        if extra is not None:
            node._ag_extra_test = stamp(self.visit(extra), node)  # type: ignore[attr-defined]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node = self.generic_visit(node)
        text = ast.Constant(ast.unparse(node))
        new = _call("if_exp", node.test, _thunk(node.body), _thunk(node.orelse), text)
        return stamp(new, node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node = self.generic_visit(node)
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _call(name, _thunk(value), _thunk(result))
        return stamp(result, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return stamp(_call("not_", node.operand), node)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        node = self.generic_visit(node)
        msg = node.msg if node.msg is not None else ast.Constant(None)
        return stamp(ast.Expr(_call("assert_stmt", node.test, _thunk(msg))), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "super":
            if not node.args and self.self_arg:
                # Zero-argument super() needs the compiler's class cell, which the regenerated
                # function has as an explicit free variable `__class__`.
                node.args = [ast.Name("__class__", ast.Load()), ast.Name(self.self_arg, ast.Load())]
                stamp(node, node)
            return self.generic_visit(node)
        node = self.generic_visit(node)
        if _is_ag(node.func):
            return node
        args = ast.Tuple(elts=list(node.args), ctx=ast.Load())
        if node.keywords:
            kwargs: ast.expr = ast.Dict(keys=[k.arg and ast.Constant(k.arg) for k in node.keywords],
                                        values=[k.value for k in node.keywords])  # fmt: skip
        else:
            kwargs = ast.Constant(None)
        return stamp(_call("converted_call", node.func, args, kwargs), node)


def _own_nodes(fn: ast.FunctionDef) -> list[ast.AST]:
    out, stack = [], list(fn.body)
    while stack:
        n = stack.pop()
        out.append(n)
        if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(n))
    return out


class _Scope:
    def __init__(self, fn: ast.FunctionDef) -> None:
        self.globals = analysis.declared(fn.body, ast.Global)
        self.nonlocals = analysis.declared(fn.body, ast.Nonlocal)
        self.undefined: set[str] = set()


class ControlFlow(ast.NodeTransformer):
    """`if`, `while` and `for` statements into calls of TF's functional operators."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.scopes: list[_Scope] = []
        self.undefined: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if any(isinstance(n, ast.Yield | ast.YieldFrom | ast.Await) for n in _own_nodes(node)):
            return node  # a generator's blocks cannot move into nested functions
        analysis.analyze(node)
        self.scopes.append(_Scope(node))
        node = self.generic_visit(node)
        self.undefined |= self.scopes.pop().undefined
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    def _block_vars(self, node: ast.stmt, modified: set[str]) -> tuple[list[str], list[str], int]:
        scope = self.scopes[-1]
        live_in, live_out = node._ag_live_in, node._ag_live_out  # type: ignore[attr-defined]
        defined = node._ag_defined_in  # type: ignore[attr-defined]
        basic = {v for v in modified if v in live_in or v in live_out or v in scope.nonlocals}
        undefined = sorted(v for v in basic - defined - scope.globals - scope.nonlocals)
        input_only = (basic & live_in) - live_out
        ordered = sorted(basic, key=lambda v: (v in input_only, v))
        scope.undefined |= set(undefined)
        return ordered, undefined, len(ordered) - len(input_only)

    def _declarations(self, names: list[str]) -> list[ast.stmt]:
        globals_ = [n for n in names if n in self.scopes[-1].globals]
        others = [n for n in names if n not in globals_]
        out: list[ast.stmt] = []
        if globals_:
            out.append(ast.Global(globals_))
        if others:
            out.append(ast.Nonlocal(others))
        return out

    def _def(self, name: str, body: list[ast.stmt], args: list[str] = ()) -> ast.FunctionDef:
        arguments = ast.arguments(
            posonlyargs=[], args=[ast.arg(a) for a in args], vararg=None,
            kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[],
        )  # fmt: skip
        return ast.FunctionDef(name=name, args=arguments, body=body or [ast.Pass()],
                               decorator_list=[], returns=None)  # fmt: skip

    def _state(self, names: list[str]) -> tuple[str, str, list[ast.stmt]]:
        get, put = self.namer.new("get_state"), self.namer.new("set_state")
        values = ast.Tuple(elts=[ast.Name(n, ast.Load()) for n in names], ctx=ast.Load())
        for elt in values.elts:
            elt._ag_raw = True  # type: ignore[attr-defined]
        getter = self._def(get, [ast.Return(values)])
        if names:
            target = ast.Tuple(elts=[ast.Name(n, ast.Store()) for n in names], ctx=ast.Store())
            assign = ast.Assign(targets=[target], value=ast.Name("vars_", ast.Load()))
            setter_body = [*self._declarations(names), assign]
        else:
            setter_body = [ast.Pass()]
        return get, put, [getter, self._def(put, setter_body, ["vars_"])]

    @staticmethod
    def _undefined_assigns(names: list[str]) -> list[ast.stmt]:
        return [
            ast.Assign(
                targets=[ast.Name(n, ast.Store())], value=_call("Undefined", ast.Constant(n))
            )
            for n in names
        ]

    @staticmethod
    def _names(names: list[str]) -> ast.Tuple:
        return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())

    @staticmethod
    def _opts(node: ast.stmt, extra: dict[str, ast.expr] | None = None) -> ast.Dict:
        opts = {**getattr(node, "_ag_opts", {}), **(extra or {})}
        return ast.Dict(keys=[ast.Constant(k) for k in opts], values=list(opts.values()))

    def visit_If(self, node: ast.If) -> Any:
        modified = analysis.stores(node.body + node.orelse)
        names, undefined, nouts = self._block_vars(node, modified)
        node = self.generic_visit(node)
        decl = self._declarations(names)
        get, put, state = self._state(names)
        body, orelse = self.namer.new("if_body"), self.namer.new("else_body")
        call = _call("if_stmt", node.test, ast.Name(body, ast.Load()), ast.Name(orelse, ast.Load()),
                     ast.Name(get, ast.Load()), ast.Name(put, ast.Load()), self._names(names),
                     ast.Constant(nouts))  # fmt: skip
        new = [*state, self._def(body, decl + node.body), self._def(orelse, decl + node.orelse),
               *self._undefined_assigns(undefined), ast.Expr(call)]  # fmt: skip
        return stamp(new, node)

    def visit_While(self, node: ast.While) -> Any:
        names, undefined, _ = self._block_vars(node, analysis.stores(node.body))
        node = self.generic_visit(node)
        decl = self._declarations(names)
        get, put, state = self._state(names)
        body, test = self.namer.new("loop_body"), self.namer.new("loop_test")
        call = _call("while_stmt", ast.Name(test, ast.Load()), ast.Name(body, ast.Load()),
                     ast.Name(get, ast.Load()), ast.Name(put, ast.Load()), self._names(names),
                     self._opts(node))  # fmt: skip
        new = [*state, self._def(body, decl + node.body), self._def(test, [ast.Return(node.test)]),
               *self._undefined_assigns(undefined), ast.Expr(call)]  # fmt: skip
        return stamp(new, node)

    def visit_For(self, node: ast.For) -> Any:
        modified = analysis.stores(node.body) | analysis.stores(node.target)
        names, undefined, _ = self._block_vars(node, modified)
        extra = getattr(node, "_ag_extra_test", None)
        node = self.generic_visit(node)
        decl = self._declarations(names)
        get, put, state = self._state(names)
        body, itr = self.namer.new("loop_body"), self.namer.new("itr")
        unpack = ast.Assign(targets=[node.target], value=ast.Name(itr, ast.Load()))
        new = [*state, self._def(body, [*decl, unpack, *node.body], [itr])]
        extra_name: ast.expr = ast.Constant(None)
        if extra is not None:
            test = self.namer.new("extra_test")
            new.append(self._def(test, [ast.Return(extra)]))
            extra_name = ast.Name(test, ast.Load())
        iterate_names = {"iterate_names": ast.Constant(ast.unparse(node.target))}
        call = _call("for_stmt", node.iter, extra_name, ast.Name(body, ast.Load()),
                     ast.Name(get, ast.Load()), ast.Name(put, ast.Load()), self._names(names),
                     self._opts(node, iterate_names))  # fmt: skip
        new += [*self._undefined_assigns(undefined), ast.Expr(call)]
        return stamp(new, node)


class Loads(ast.NodeTransformer):
    """Reads of names that may hold `Undefined` go through `ag__.ld`."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if (isinstance(node.ctx, ast.Load) and node.id in self.names
                and not getattr(node, "_ag_raw", False)):  # fmt: skip
            return stamp(_call("ld", node), node)
        return node


def convert_tree(fn: ast.FunctionDef, self_arg: str | None) -> ast.FunctionDef:
    """Run every pass on the function node `fn` (already parsed, positions those of its file)."""
    namer = Namer(fn)
    lower_jumps(fn, namer)
    fn = Expressions(self_arg).visit(fn)
    flow = ControlFlow(namer)
    fn = flow.visit(fn)
    if flow.undefined:
        fn = Loads(flow.undefined).visit(fn)
    ast.fix_missing_locations(fn)
    return fn
