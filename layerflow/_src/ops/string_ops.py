"""`tf.strings`: ops on string tensors (NumPy object arrays of `bytes`), without gradients.

Every op takes tensors or Python values, works on the host bytes elementwise with TF's
broadcasting, and returns a new tensor; results that have rows of different lengths (`split`,
`bytes_split`, `ngrams` of ragged input) are `tf.RaggedTensor`s as in TF. Regular expressions
use TF's RE2 syntax, run by Python's `re` where the two agree; the RE2-only or Python-only
constructs (lookaround, backreferences in the pattern, `\\p{..}`) are rejected with TF's error.

>>> import layerflow as tf
>>> tf.strings.join(["a", "b"], separator="-").numpy()
b'a-b'
>>> tf.strings.split(["a b", "c"])
<tf.RaggedTensor [[b'a', b'b'], [b'c']]>
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import fingerprint
from layerflow._src.ops.logging_ops import format_array
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor


def _err(op: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, op, msg)


def strings_of(value: Any, op: str) -> np.ndarray:
    """`value` as a host object array of bytes (a string tensor, or str/bytes values)."""
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint="string")
    arr = backend.to_host(t._data)
    if arr.dtype != object:
        raise TypeError(
            f"tf.strings.{op}: expected a string tensor, got dtype "
            f"{dtypes.from_numpy(arr.dtype).name}. Convert numbers with tf.strings.as_string."
        )
    return arr


def _host(value: Any, dtype: Any = None) -> np.ndarray:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint=dtype)
    return backend.to_host(t._data)


def as_tensor(arr: np.ndarray) -> Tensor:
    """A host result as a tensor (object arrays keep their bytes elements)."""
    return convert_to_tensor(np.asarray(arr) if arr.dtype != object else arr)


def _map(fn: Any, *arrays: np.ndarray, out: Any = object) -> np.ndarray:
    """`fn` applied elementwise with broadcasting, into an array of dtype `out`."""
    vec = np.vectorize(fn, otypes=[out])
    return vec(*arrays) if all(a.size for a in arrays) else np.empty(
        np.broadcast_shapes(*(a.shape for a in arrays)), dtype=out)  # fmt: skip


def _ragged(rows: list, shape: tuple, dtype: Any = object) -> Any:
    """Ragged result: `rows` (flat list of per-element lists) for elements of `shape`."""
    lengths = np.asarray([len(r) for r in rows], dtype=np.int64)
    flat = np.empty(int(lengths.sum()), dtype=dtype)
    flat[:] = [x for r in rows for x in r] if np.dtype(dtype).kind == "O" else np.asarray(
        [x for r in rows for x in r], dtype=dtype)  # fmt: skip
    if not shape:
        return as_tensor(flat)
    result: Any = RaggedTensor.from_row_lengths(as_tensor(flat), lengths, validate=False)
    for d in reversed(shape[1:]):
        n = result.nrows_int() // d
        result = RaggedTensor.from_row_lengths(result, np.full(n, d, np.int64), validate=False)
    return result


# --- join, length, substr -----------------------------------------------------------------------


def join(inputs: Any, separator: str = "", name: Any = None) -> Tensor:
    """Elementwise concatenation of a list of string tensors (same shapes or scalars)."""
    arrays = [strings_of(x, "join") for x in inputs]
    sep = _bytes(separator)
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        a, b = sorted(shapes, key=len, reverse=True)[:2]
        raise _err("join", f"Input shapes do not match: {list(a)} vs. {list(b)}")
    if not arrays:
        return as_tensor(np.asarray(b"", dtype=object))
    return as_tensor(_map(lambda *xs: sep.join(xs), *arrays))


def reduce_join(inputs: Any, axis: Any = None, keepdims: bool = False, separator: str = "",
                name: Any = None) -> Tensor:  # fmt: skip
    """Join the strings along `axis` (all axes when None) with `separator` between them."""
    arr = strings_of(inputs, "reduce_join")
    sep = _bytes(separator)
    axes = list(range(arr.ndim)) if axis is None else [int(a) for a in np.atleast_1d(_host(axis))]
    for a in axes:
        if not -arr.ndim <= a < max(arr.ndim, 1):
            raise _err("reduce_join", f"axis {a} is out of range for a tensor of rank {arr.ndim}.")
    axes = sorted({a % arr.ndim for a in axes}) if arr.ndim else []
    keep = [d for d in range(arr.ndim) if d not in axes]
    moved = np.transpose(arr, keep + axes).reshape([arr.shape[d] for d in keep] + [-1])
    out = np.empty(moved.shape[:-1], dtype=object)
    for idx in np.ndindex(*out.shape):
        out[idx] = sep.join(moved[idx])
    if keepdims:
        out = out.reshape([1 if d in axes else arr.shape[d] for d in range(arr.ndim)])
    return as_tensor(out)


def _bytes(s: Any) -> bytes:
    if isinstance(s, Tensor):
        s = backend.to_host(s._data)[()]
    return s.encode() if isinstance(s, str) else bytes(s)


_UNITS = ("BYTE", "UTF8_CHAR")


def _check_unit(unit: str, op: str) -> None:
    if unit not in _UNITS:
        raise _err(
            op,
            f"Value for attr 'unit' of \"{unit}\" is not in the list of allowed values: "
            '"BYTE", "UTF8_CHAR"',
        )


def _utf8_len(b: bytes) -> int:
    # TF counts the bytes that do not continue a character (so invalid bytes count one each).
    return sum(1 for c in b if c & 0xC0 != 0x80)


def length(input: Any, unit: str = "BYTE", name: Any = None) -> Tensor:  # noqa: A002
    """The length of each string in bytes, or in UTF-8 characters with `unit="UTF8_CHAR"`."""
    _check_unit(unit, "length")
    arr = strings_of(input, "length")
    fn = len if unit == "BYTE" else _utf8_len
    return as_tensor(_map(fn, arr, out=np.int32))


def _char_starts(b: bytes) -> list[int]:
    return [i for i, c in enumerate(b) if c & 0xC0 != 0x80]


def substr(input: Any, pos: Any, len: Any, unit: str = "BYTE", name: Any = None) -> Tensor:  # noqa: A002
    """Substrings starting at `pos` (negative: from the end) of `len` units, as TF's `Substr`.

    A `pos` past the string's end raises InvalidArgumentError (as TF); `len` is clipped.
    """
    _check_unit(unit, "substr")
    arr = strings_of(input, "substr")
    p, n = _host(pos, "int32"), _host(len, "int32")
    flat_index = iter(range(10**12))

    def one(s: bytes, p: int, n: int) -> bytes:
        i = next(flat_index)
        starts = list(range(s.__len__())) if unit == "BYTE" else _char_starts(s)
        total = starts.__len__()
        q = p + total if p < 0 else p
        if not 0 <= q <= total:
            raise _err("substr", f"pos {p} out of range for string {s!r} at index {i}")
        end = total if n < 0 else min(total, q + n)
        lo = starts[q] if q < total else s.__len__()
        hi = starts[end] if end < total else s.__len__()
        return s[lo:hi]

    return as_tensor(_map(one, arr, p, n))


# --- regular expressions ------------------------------------------------------------------------

# RE2 rejects these; Python's `re` would accept them with another meaning or none at all.
_RE2_REJECTS = [
    (re.compile(r"\(\?<?[=!]"), "invalid perl operator: (?="),
    (re.compile(r"(?<!\\)\\[1-9]"), "invalid escape sequence: \\1"),
    (re.compile(r"\(\?P=|\(\?\(|\(\?>"), "invalid perl operator"),
]
_UNSUPPORTED = re.compile(r"(?<!\\)\\[pPCQE]|\[\[:")


def _regex(pattern: Any, op: str) -> re.Pattern:
    text = _bytes(pattern).decode("utf-8", "surrogateescape")
    for rx, why in _RE2_REJECTS:
        if rx.search(text):
            raise _err(op, f"Invalid pattern: {text}, error: {why}")
    if _UNSUPPORTED.search(text):
        raise _err(
            op,
            f"Invalid pattern: {text}: layerflow runs RE2 patterns with Python's `re`, which "
            "has no Unicode classes (\\p{..}), \\C, \\Q..\\E or [[:class:]]; write the class "
            "out explicitly (e.g. [a-zA-Z]).",
        )
    try:
        return re.compile(text)
    except re.error as e:
        raise _err(op, f"Invalid pattern: {text}, error: {e}") from None


def _text(b: bytes) -> str:
    # surrogateescape keeps invalid bytes round-trip while `.` matches whole UTF-8 characters.
    return b.decode("utf-8", "surrogateescape")


def _back(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def regex_full_match(input: Any, pattern: Any, name: Any = None) -> Tensor:  # noqa: A002
    """Whether each whole string matches the RE2 `pattern`."""
    arr = strings_of(input, "regex_full_match")
    rx = _regex(pattern, "regex_full_match")
    return as_tensor(_map(lambda s: rx.fullmatch(_text(s)) is not None, arr, out=np.bool_))


def _rewrite(rewrite: bytes, op: str) -> Any:
    """An RE2 rewrite (`\\0`..`\\9`, `\\\\`) as a function of a Python match."""
    text = _text(rewrite)
    parts: list[Any] = []
    i = 0
    while i < text.__len__():
        c = text[i]
        if c == "\\" and i + 1 < text.__len__():
            nxt = text[i + 1]
            if nxt.isdigit():
                parts.append(int(nxt))
            elif nxt == "\\":
                parts.append("\\")
            else:
                raise _err(op, f"Invalid rewrite pattern: {text}: bad escape \\{nxt}")
            i += 2
            continue
        parts.append(c)
        i += 1

    def fn(m: re.Match) -> str:
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)

    return fn


def regex_replace(input: Any, pattern: Any, rewrite: Any, replace_global: bool = True,
                  name: Any = None) -> Tensor:  # noqa: A002  # fmt: skip
    """Replace the matches of `pattern` with `rewrite` (RE2 syntax: `\\1` groups, `\\0` match)."""
    arr = strings_of(input, "regex_replace")
    rx = _regex(pattern, "regex_replace")
    fn = _rewrite(_bytes(rewrite), "regex_replace")
    count = 0 if replace_global else 1
    return as_tensor(_map(lambda s: _back(rx.sub(fn, _text(s), count=count)), arr))


# --- numbers <-> strings ------------------------------------------------------------------------

_INT = re.compile(rb"\s*[+-]?\d+\s*")
_FLOAT = re.compile(rb"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity|nan)\s*",
                    re.IGNORECASE)  # fmt: skip


def to_number(string_tensor: Any, out_type: Any = "float32", name: Any = None) -> Tensor:
    """Parse each string as a number of `out_type` (float32, float64, int32 or int64)."""
    arr = strings_of(string_tensor, "to_number")
    dt = dtypes.as_dtype(out_type)
    if dt.name not in ("float32", "float64", "int32", "int64"):
        raise TypeError(
            f"tf.strings.to_number: out_type must be float32, float64, int32 or int64, got "
            f"{dt.name}."
        )
    is_int = dt.name.startswith("int")
    info = np.iinfo(dt.np) if is_int else None

    def one(s: bytes) -> Any:
        ok = (_INT if is_int else _FLOAT).fullmatch(s)
        if ok is not None:
            v = int(s) if is_int else float(s)
            if not is_int or info.min <= v <= info.max:
                return v
        raise _err(
            "to_number",
            f"StringToNumberOp could not correctly convert string: "
            f"{s.decode('utf-8', 'backslashreplace')}",
        )

    out = np.empty(arr.shape, dtype=dt.np)
    for idx in np.ndindex(*arr.shape):
        out[idx] = one(arr[idx])
    return as_tensor(out)


_FILLS = " +-0#"


def as_string(input: Any, precision: int = -1, scientific: bool = False,  # noqa: A002
              shortest: bool = False, width: int = -1, fill: str = "",
              name: Any = None) -> Tensor:  # fmt: skip
    """Format numbers or bools as strings with C's printf rules, as TF's `AsString`."""
    t = input if isinstance(input, Tensor) else convert_to_tensor(input)
    arr = backend.to_host(t._data)
    kind = arr.dtype.kind
    if kind == "O":
        return t
    fmt = "%"
    if fill:
        if fill.__len__() > 1 or fill[0] not in _FILLS:
            raise _err("as_string", f'Fill argument not supported: "{fill}"')
        fmt += fill
    if width > -1:
        fmt += str(width)
    if scientific and shortest:
        raise _err("as_string", "Cannot select both scientific and shortest notation")
    if precision > -1:
        if kind not in "fc":
            raise _err("as_string", f"precision not supported for datatype {t.dtype.name}")
        fmt += f".{precision}"
    if kind in "iu":
        conv, fmt = (lambda v: int(v)), fmt + "d"
    elif kind == "b":
        return as_tensor(_map(lambda v: b"true" if v else b"false", arr))
    else:
        conv, fmt = float, fmt + ("g" if shortest else "e" if scientific else "f")

    def one(v: Any) -> bytes:
        if kind == "c":
            return ("(" + fmt % float(v.real) + "," + fmt % float(v.imag) + ")").encode()
        return (fmt % conv(v)).encode()

    return as_tensor(_map(one, arr))


# --- format, case, strip ------------------------------------------------------------------------


def format(template: str, inputs: Any, placeholder: str = "{}", summarize: int = 3,  # noqa: A001
           name: Any = None) -> Tensor:  # fmt: skip
    """`template` with each `placeholder` replaced by the next tensor, printed as `tf.print`."""
    if isinstance(inputs, list | tuple):
        values = list(inputs)
    else:
        values = [inputs]
    pieces = template.split(placeholder)
    if pieces.__len__() - 1 != values.__len__():
        raise ValueError(
            f"The template expects {pieces.__len__() - 1} tensors, but the inputs only has "
            f"{values.__len__()}. Please ensure the number of placeholders in template matches "
            "inputs length."
        )
    out = pieces[0]
    for v, piece in zip(values, pieces[1:], strict=True):
        t = v if isinstance(v, Tensor) else convert_to_tensor(v)
        out += format_array(np.asarray(backend.to_host(t._data)), summarize) + piece
    return as_tensor(np.asarray(out.encode(), dtype=object))


def _case(input: Any, encoding: str, op: str, ascii_fn: Any, text_fn: Any) -> Tensor:  # noqa: A002
    arr = strings_of(input, op)
    if encoding not in ("", "utf-8", "UTF-8"):
        raise _err(op, f"encoding must be '' (ASCII) or 'utf-8', got {encoding!r}.")
    if encoding:
        return as_tensor(_map(lambda s: _back(text_fn(_text(s))), arr))
    return as_tensor(_map(ascii_fn, arr))


_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_UPPER = bytes.maketrans(b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def lower(input: Any, encoding: str = "", name: Any = None) -> Tensor:  # noqa: A002
    """Lowercase: ASCII letters only by default, all of Unicode with `encoding="utf-8"`."""
    return _case(input, encoding, "lower", lambda s: s.translate(_LOWER), str.lower)


def upper(input: Any, encoding: str = "", name: Any = None) -> Tensor:  # noqa: A002
    """Uppercase: ASCII letters only by default, all of Unicode with `encoding="utf-8"`."""
    return _case(input, encoding, "upper", lambda s: s.translate(_UPPER), str.upper)


def strip(input: Any, name: Any = None) -> Tensor:  # noqa: A002
    """Remove leading and trailing ASCII whitespace."""
    return as_tensor(_map(lambda s: s.strip(b" \t\n\v\f\r"), strings_of(input, "strip")))


# --- split, bytes_split, ngrams, segment join ---------------------------------------------------


def split(input: Any, sep: Any = None, maxsplit: int = -1, name: Any = None) -> Any:  # noqa: A002
    """Split each string on `sep` (runs of whitespace when None or empty): a RaggedTensor with
    one more dimension (a 1-D tensor for a scalar input)."""
    arr = strings_of(input, "split")
    sep_b = _bytes(sep) if sep is not None else b""
    n = -1 if maxsplit is None else int(maxsplit)

    def one(s: bytes) -> list:
        if not sep_b:
            return s.split(None, n)
        return s.split(sep_b, n)

    return _ragged([one(s) for s in arr.reshape(-1)], arr.shape)


def bytes_split(input: Any, name: Any = None) -> Any:  # noqa: A002
    """Each string as its single bytes (a RaggedTensor; a 1-D tensor for a scalar)."""
    arr = strings_of(input, "bytes_split")
    return _ragged([[bytes([c]) for c in s] for s in arr.reshape(-1)], arr.shape)


def ngrams(data: Any, ngram_width: Any, separator: str = " ", pad_values: Any = None,
           padding_width: Any = None, preserve_short_sequences: bool = False,
           name: Any = None) -> Any:  # fmt: skip
    """The n-grams of the last axis of `data` (a string tensor or RaggedTensor), as TF."""
    widths = [int(ngram_width)] if np.ndim(ngram_width) == 0 else [int(w) for w in ngram_width]
    sep = _bytes(separator)
    if pad_values is None:
        left = right = None
    elif isinstance(pad_values, tuple | list):
        left, right = _bytes(pad_values[0]), _bytes(pad_values[1])
    else:
        left = right = _bytes(pad_values)
    if padding_width is not None and int(padding_width) < 1:
        raise ValueError("ngrams: padding_width must be greater than 0.")

    def grams(row: list) -> list:
        out: list[bytes] = []
        for w in widths:
            pw = (w - 1) if padding_width is None else min(int(padding_width), w - 1)
            padded = row if left is None else [left] * pw + row + [right] * pw
            out += [sep.join(padded[i : i + w]) for i in range(padded.__len__() - w + 1)]
        if not out and preserve_short_sequences and row:
            pw = 0 if padding_width is None or left is None else int(padding_width)
            padded = row if left is None else [left] * pw + row + [right] * pw
            out = [sep.join(padded)]
        return out

    if isinstance(data, RaggedTensor):
        rows = [grams(list(r)) for r in data.to_list()]
        lengths = np.asarray([r.__len__() for r in rows], dtype=np.int64)
        flat = np.empty(int(lengths.sum()), dtype=object)
        flat[:] = [x for r in rows for x in r]
        return RaggedTensor.from_row_lengths(as_tensor(flat), lengths)
    arr = strings_of(data, "ngrams")
    if arr.ndim == 0:
        raise ValueError("ngrams: data must have rank >= 1, got a scalar.")
    lead = arr.shape[:-1]
    rows = [grams(list(r)) for r in arr.reshape(-1, arr.shape[-1])]
    k = rows[0].__len__() if rows else 0
    out = np.empty((len(rows), k), dtype=object)
    for i, r in enumerate(rows):
        out[i, :] = r
    return as_tensor(out.reshape(lead + (k,)))


def unsorted_segment_join(inputs: Any, segment_ids: Any, num_segments: Any, separator: str = "",
                          name: Any = None) -> Tensor:  # fmt: skip
    """Join the strings of each segment (in input order); empty segments give b""."""
    arr = strings_of(inputs, "unsorted_segment_join")
    ids = _host(segment_ids, "int32")
    n = int(_host(num_segments))
    if ids.shape != arr.shape[: ids.ndim]:
        raise _err("unsorted_segment_join", f"segment_ids shape {ids.shape} must be a prefix "
                   f"of the inputs' shape {arr.shape}.")  # fmt: skip
    groups: list[list] = [[] for _ in range(n)]
    rest = arr.shape[ids.ndim :]
    flat = arr.reshape((-1,) + rest)
    for i, s in zip(ids.reshape(-1), flat, strict=True):
        if not 0 <= i < n:
            raise _err("unsorted_segment_join", f"segment_id {i} is outside [0, {n}).")
        groups[i].append(s)
    out = np.empty((n,) + rest, dtype=object)
    sep = _bytes(separator)
    for g, items in enumerate(groups):
        for idx in np.ndindex(*rest):
            out[(g,) + idx] = sep.join(x[idx] if rest else x for x in items)
    return as_tensor(out)


# --- hashing (TF's fingerprints, bit for bit: `ops/fingerprint.py`) -----------------------------


def _buckets(input: Any, num_buckets: Any, fn: Any, op: str) -> Tensor:  # noqa: A002
    arr = strings_of(input, op)
    n = int(_host(num_buckets))
    if n < 1:
        raise _err(op, f"num_buckets must be >= 1, got {n}.")
    out = np.empty(arr.shape, dtype=np.int64)
    for idx in np.ndindex(*arr.shape):
        out[idx] = fn(arr[idx]) % n
    return as_tensor(out)


def to_hash_bucket_fast(input: Any, num_buckets: Any, name: Any = None) -> Tensor:  # noqa: A002
    """farmhash `Fingerprint64(s) % num_buckets` (int64), the same buckets as TF's."""
    return _buckets(input, num_buckets, fingerprint.fingerprint64, "to_hash_bucket_fast")


def to_hash_bucket_strong(input: Any, num_buckets: Any, key: Any, name: Any = None) -> Tensor:  # noqa: A002
    """SipHash-2-4 with the two-integer `key`, modulo `num_buckets` (TF's buckets)."""
    k = [int(v) for v in np.asarray(key).reshape(-1)]
    if len(k) != 2:
        raise _err("to_hash_bucket_strong", f"key must have 2 elements, got {len(k)}.")
    return _buckets(input, num_buckets, lambda s: fingerprint.siphash24((k[0], k[1]), s),
                    "to_hash_bucket_strong")  # fmt: skip


def to_hash_bucket(string_tensor: Any, num_buckets: Any, name: Any = None) -> Tensor:
    """TF's legacy `Hash64(s) % num_buckets` (int64); prefer `to_hash_bucket_fast`."""
    return _buckets(string_tensor, num_buckets, fingerprint.tf_hash64, "to_hash_bucket")


def fingerprint_op(data: Any, method: str = "farmhash64", name: Any = None) -> Tensor:
    """`tf.fingerprint`: the 8 little-endian bytes of `Fingerprint64` per row, as uint8."""
    if method != "farmhash64":
        raise _err("fingerprint", f"method must be 'farmhash64', got {method!r}.")
    arr = strings_of(data, "fingerprint")
    if arr.ndim == 0:
        raise _err("fingerprint", "data must have rank >= 1, got a scalar.")
    rows = arr.reshape(arr.shape[0], -1)
    out = np.zeros((arr.shape[0], 8), dtype=np.uint8)
    for i, row in enumerate(rows):
        if row.size == 1:
            fp = fingerprint.fingerprint64(row[0])
        else:  # TF fingerprints a row of several strings by combining their fingerprints
            raise _err("fingerprint", "string data must be 1-D (one string per row).")
        out[i] = np.frombuffer(fp.to_bytes(8, "little"), dtype=np.uint8)
    return as_tensor(out)
