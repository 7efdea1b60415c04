"""`tf.debugging`: the assert_* family, `Assert` and `check_numerics`, with TF 2.21's eager
behaviour: a check that holds returns None (`check_numerics` returns its input); one that fails
raises `InvalidArgumentError` for values, `ValueError` for static shapes and ranks, and
`TypeError` for dtypes, with TF's messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import math_ops


def _tensor(x: Any, dtype: Any = None) -> Any:
    return x if isinstance(x, TensorLike) else convert_to_tensor(x, dtype=dtype)


def _pair(x: Any, y: Any) -> tuple[Any, Any]:
    # A Python value takes its tensor partner's dtype, as in TF's comparison ops.
    if isinstance(x, TensorLike) and not isinstance(y, TensorLike):
        return x, convert_to_tensor(y, dtype=x.dtype)
    if isinstance(y, TensorLike) and not isinstance(x, TensorLike):
        return convert_to_tensor(x, dtype=y.dtype), y
    return _tensor(x), _tensor(y)


def _host(t: Any) -> np.ndarray:
    return np.asarray(backend.to_host(t._data))


def _lines(message: Any) -> list[str]:
    return [str(message)] if message else []


def _binary(symbol: str, compare: Callable[[Any, Any], Any]) -> Callable[..., None]:
    def check(x: Any, y: Any, message: Any = None, summarize: Any = None,
              name: str | None = None) -> None:  # fmt: skip
        x, y = _pair(x, y)
        ok = _host(compare(x, y))
        if ok.all():
            return None
        n = 3 if summarize is None else int(summarize)
        xs, ys = _host(x), _host(y)
        lines = [*_lines(message), f"Condition x {symbol} y did not hold."]
        if xs.shape == ys.shape:
            bad = np.argwhere(~ok)[:n]
            lines += [
                f"Indices of first {len(bad)} different values:", str(bad),
                "Corresponding x values:", str(xs[tuple(bad.T)]),
                "Corresponding y values:", str(ys[tuple(bad.T)]),
            ]  # fmt: skip
        xf, yf = xs.reshape(-1)[:n], ys.reshape(-1)[:n]
        lines += [f"First {xf.size} elements of x:", str(xf)]
        lines += [f"First {yf.size} elements of y:", str(yf)]
        raise errors.InvalidArgumentError(None, name, "\n".join(lines))

    check.__name__ = f"assert {symbol}"
    check.__doc__ = (
        f"Raise InvalidArgumentError unless `x {symbol} y` holds for every element (after "
        f"broadcasting); return None otherwise, as TF does eagerly."
    )
    return check


assert_equal = _binary("==", math_ops.equal)
assert_none_equal = _binary("!=", math_ops.not_equal)
assert_less = _binary("<", math_ops.less)
assert_less_equal = _binary("<=", math_ops.less_equal)
assert_greater = _binary(">", math_ops.greater)
assert_greater_equal = _binary(">=", math_ops.greater_equal)
for _f, _n in [(assert_equal, "assert_equal"), (assert_none_equal, "assert_none_equal"),
               (assert_less, "assert_less"), (assert_less_equal, "assert_less_equal"),
               (assert_greater, "assert_greater"),
               (assert_greater_equal, "assert_greater_equal")]:  # fmt: skip
    _f.__name__ = _f.__qualname__ = _n


def _unary(symbol: str, test: Callable[[np.ndarray], np.ndarray], fname: str) -> Callable:
    def check(x: Any, message: Any = None, summarize: Any = None,
              name: str | None = None) -> None:  # fmt: skip
        x = _tensor(x)
        xs = _host(x)
        if test(xs).all():
            return None
        n = 3 if summarize is None else int(summarize)
        lines = [
            *_lines(message),
            f"Condition x {symbol} 0 did not hold element-wise:",
            f"x (shape={tuple(x.shape.as_list())} dtype={x.dtype.name}) = ",
            str([str(v) for v in xs.reshape(-1)[:n]]),
        ]
        raise errors.InvalidArgumentError(None, name, "\n".join(lines))

    check.__name__ = check.__qualname__ = fname
    check.__doc__ = f"Raise InvalidArgumentError unless `x {symbol} 0` for every element."
    return check


assert_positive = _unary(">", lambda a: a > 0, "assert_positive")
assert_negative = _unary("<", lambda a: a < 0, "assert_negative")
assert_non_negative = _unary(">=", lambda a: a >= 0, "assert_non_negative")
assert_non_positive = _unary("<=", lambda a: a <= 0, "assert_non_positive")


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: Any = None,
                summarize: Any = None, name: str | None = None) -> None:  # fmt: skip
    """Raise InvalidArgumentError unless `|x - y| <= atol + rtol * |y|` everywhere; the default
    tolerances are 10 * eps of the dtype (float and complex only)."""
    x, y = _pair(x, y)
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise ValueError(
            f"assert_near: x and y must be floating or complex, got {x.dtype.name}. "
            f"Use tf.debugging.assert_equal for integers."
        )
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(
            None, name, f"assert_near: x is {x.dtype.name} but y is {y.dtype.name}."
        )
    xs, ys = _host(x), _host(y)
    eps = float(np.finfo(xs.dtype).eps)
    rt = 10 * eps if rtol is None else float(np.asarray(rtol))
    at = 10 * eps if atol is None else float(np.asarray(atol))
    try:
        ok = np.abs(xs - ys) <= at + rt * np.abs(ys)
    except ValueError as err:
        raise errors.InvalidArgumentError(None, name, f"assert_near: {err}") from None
    if ok.all():
        return None
    n = 3 if summarize is None else int(summarize)
    lines = [
        *_lines(message),
        f"x and y not equal to tolerance rtol = {rt}, atol = {at}",
        f"x (shape={tuple(x.shape.as_list())} dtype={x.dtype.name}) = ",
        str(xs.reshape(-1)[:n]),
        f"y (shape={tuple(y.shape.as_list())} dtype={y.dtype.name}) = ",
        str(ys.reshape(-1)[:n]),
    ]
    raise errors.InvalidArgumentError(None, name, "\n".join(lines))


def _rank_error(message: Any, text: str, x: Any) -> ValueError:
    prefix = f"{message}.  " if message else ""
    return ValueError(
        f"{prefix}Tensor must have {text}.  Received rank {x.shape.rank}, "
        f"shape {tuple(x.shape.as_list())}"
    )


def _int(value: Any) -> int:
    return int(_host(value)) if isinstance(value, TensorLike) else int(value)


def assert_rank(x: Any, rank: Any, message: Any = None, name: str | None = None) -> None:
    """Raise ValueError unless `x` has rank `rank` (an int or a scalar int tensor)."""
    x = _tensor(x)
    if x.shape.rank != _int(rank):
        raise _rank_error(message, f"rank {_int(rank)}", x)


def assert_rank_at_least(x: Any, rank: Any, message: Any = None,
                         name: str | None = None) -> None:  # fmt: skip
    """Raise ValueError unless `x` has at least rank `rank`."""
    x = _tensor(x)
    if x.shape.rank < _int(rank):
        raise _rank_error(message, f"rank at least {_int(rank)}", x)


def assert_rank_in(x: Any, ranks: Any, message: Any = None, name: str | None = None) -> None:
    """Raise ValueError unless the rank of `x` is one of `ranks`."""
    x = _tensor(x)
    allowed = tuple(_int(r) for r in ranks)
    if x.shape.rank not in allowed:
        raise _rank_error(message, f"rank in {allowed}", x)


def assert_integer(x: Any, message: Any = None, name: str | None = None) -> None:
    """Raise TypeError unless `x` has an integer dtype."""
    x = _tensor(x)
    if not x.dtype.is_integer:
        prefix = f"{message}: " if message else ""
        raise TypeError(
            f'{prefix}Expected "x" to be integer type.  Found: tensor of dtype {x.dtype!r}'
        )


def assert_type(tensor: Any, tf_type: Any, message: Any = None, name: str | None = None) -> None:
    """Raise TypeError unless `tensor.dtype` is `tf_type`."""
    want = dtypes.as_dtype(tf_type)
    got = _tensor(tensor).dtype
    if got != want:
        prefix = f"{message} " if message else ""
        raise TypeError(f"{prefix}tensor must be of type tf.{want.name}; got tf.{got.name}")


def assert_scalar(tensor: Any, message: Any = None, name: str | None = None) -> None:
    """Raise ValueError unless `tensor` is a scalar (rank 0)."""
    t = _tensor(tensor)
    if t.shape.rank != 0:
        prefix = f"{message}  " if message else ""
        raise ValueError(f"{prefix}Expected scalar shape, saw shape: {tuple(t.shape.as_list())}.")


def assert_same_float_dtype(tensors: Any = None, dtype: Any = None) -> dtypes.DType:
    """The common floating dtype of `tensors` (and `dtype`), float32 when there is none;
    ValueError on a mismatch or a non-floating dtype."""
    want = None if dtype is None else dtypes.as_dtype(dtype)
    first = None
    for t in tensors or []:
        t = _tensor(t)
        if want is None:
            want, first = t.dtype, t
        elif t.dtype != want:
            base = first if first is not None else f"dtype {want!r}"
            raise ValueError(
                f"{t}, type={t.dtype!r}, must be of the same type ({want!r}) as {base}."
            )
    if want is None:
        return dtypes.as_dtype("float32")
    if not want.is_floating:
        raise ValueError(f"Expected floating point type, got {want!r}.")
    return want


def assert_proper_iterable(values: Any) -> None:
    """Raise TypeError unless `values` is an iterable other than a tensor, an array or a
    string (which would iterate element by element or character by character)."""
    if isinstance(values, TensorLike | np.ndarray | str | bytes):
        raise TypeError(
            f'Expected argument "values" to be a "proper" iterable.  Found: {type(values)}'
        )
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def assert_shapes(shapes: Any, data: Any = None, summarize: Any = None, message: Any = None,
                  name: str | None = None) -> None:  # fmt: skip
    """Check the shapes of several tensors against symbolic shapes: a name stands for the same
    size everywhere it appears, an int for that size, None for any size (ValueError otherwise).

    >>> import layerflow as tf
    >>> tf.debugging.assert_shapes([(tf.zeros([2, 3]), ("N", "Q")), (tf.zeros([2]), ("N",))])
    """
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes: dict[Any, tuple[int, Any, int]] = {}
    for x, spec in pairs:
        x = _tensor(x)
        spec = list(spec)
        if not spec:
            continue  # TF checks nothing for an empty symbolic shape
        rank = x.shape.rank
        if len(spec) == 1:
            if rank not in (0, 1):
                raise _rank_error(message, "rank in (0, 1)", x)
        elif rank != len(spec):
            raise _rank_error(message, f"rank {len(spec)}", x)
        dims = x.shape.as_list()
        for i, (sym, size) in enumerate(zip(spec, dims)):
            described = f"Tensor shape={tuple(dims)} dtype={x.dtype.name}"
            if sym is None:
                continue
            if isinstance(sym, int):
                if size != sym:
                    raise ValueError(
                        f"{described} dimension {i} must have size {sym}.  Received size "
                        f"{size}, shape {tuple(dims)}"
                    )
                continue
            if sym in sizes:
                want, where, j = sizes[sym]
                if size != want:
                    raise ValueError(
                        f"Specified by tensor {where} dimension {j}.  {described} dimension "
                        f"{i} must have size {want}.  Received size {size}, shape {tuple(dims)}"
                    )
            else:
                sizes[sym] = (size, f"shape={tuple(dims)} dtype={x.dtype.name}", i)


def Assert(condition: Any, data: Any, summarize: Any = None, name: str | None = None) -> None:  # noqa: N802
    """Raise InvalidArgumentError, listing `data`, unless the scalar `condition` is true."""
    if bool(condition):
        return None
    n = 3 if summarize is None else int(summarize)
    parts = []
    for d in data:
        if isinstance(d, TensorLike):
            parts.append(", ".join(str(v) for v in _host(d).reshape(-1)[:n]))
        else:
            parts.append(repr(d.encode() if isinstance(d, str) else d))
    raise errors.InvalidArgumentError(
        None, name, f"Expected '{condition}' to be true. Summarized data: " + "\n".join(parts)
    )


def is_numeric_tensor(tensor: Any) -> bool:
    """True for a tensor of an integer, floating or complex dtype."""
    if not isinstance(tensor, TensorLike):
        return False
    dt = tensor.dtype
    return bool(dt.is_integer or dt.is_floating or dt.is_complex)


@op("check_numerics", may_alias=True)
def _check_numerics(xp: Any, x: Any, message: str) -> Any:
    if x.dtype.kind != "f":
        raise errors.InvalidArgumentError(
            None, "CheckNumerics",
            f"check_numerics: the tensor must be floating point (float16, bfloat16, float32, "
            f"float64), got {dtypes.from_numpy(x.dtype).name}.",
        )  # fmt: skip
    if bool(xp.isnan(x).any()):
        raise errors.InvalidArgumentError(
            None, "CheckNumerics", f"{message} : Tensor had NaN values"
        )
    if bool(xp.isinf(x).any()):
        raise errors.InvalidArgumentError(
            None, "CheckNumerics", f"{message} : Tensor had Inf values"
        )
    return x


@_check_numerics.grad
def _(dy: Any, out: Any, x: Any, message: str) -> Any:
    # As TF: the gradient is checked too, naming the forward's message.
    return _check_numerics(
        dy,
        "Not a number (NaN) or infinity (Inf) values detected in gradient. " + str(message),
    )


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Any:
    """`tensor` itself, or InvalidArgumentError "`message` : Tensor had NaN values" (or Inf);
    its gradient is checked the same way.

    >>> import layerflow as tf
    >>> tf.debugging.check_numerics(tf.constant([1.0, 2.0]), "ok").numpy()
    array([1., 2.], dtype=float32)
    """
    return _check_numerics(tensor, str(message))


def assert_all_finite(x: Any, message: str, name: str | None = None) -> Any:
    """`check_numerics` under its v2 name: `x` itself, or InvalidArgumentError."""
    return check_numerics(x, message)
