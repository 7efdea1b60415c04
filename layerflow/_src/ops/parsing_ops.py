"""`tf.io.decode_csv`, `decode_base64`/`encode_base64` (web-safe alphabet) and `decode_raw`.

All read untrusted bytes: they only parse, never evaluate, and allocate no more than the input's
size (decode_raw's `fixed_length` is checked against it).

>>> import layerflow as tf
>>> [t.numpy().tolist() for t in tf.io.decode_csv(["1,a"], [[0], [""]])]
[[1], [b'a']]
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.string_ops import _FLOAT, _INT, _bytes, _map, as_tensor, strings_of


def _err(op: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, op, msg)


# --- CSV ----------------------------------------------------------------------------------------


def _fields(rec: bytes, delim: int, quote: bool, r: int) -> list[bytes]:
    """RFC 4180 fields of one record (quoted fields may hold the delimiter and `""`)."""
    out: list[bytes] = []
    i, n = 0, len(rec)
    while True:
        if quote and i < n and rec[i] == 0x22:
            buf = bytearray()
            i += 1
            while True:
                if i >= n:
                    raise _err("decode_csv", f"Quoted field has to end with quote followed by "
                               f"delim or end, in record {r}")  # fmt: skip
                if rec[i] == 0x22:
                    if i + 1 < n and rec[i + 1] == 0x22:
                        buf.append(0x22)
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(rec[i])
                i += 1
            if i < n and rec[i] != delim:
                raise _err("decode_csv", f"Quote inside a string has to be escaped by another "
                           f"quote in record {r}")  # fmt: skip
            out.append(bytes(buf))
        else:
            j = rec.find(bytes([delim]), i)
            j = n if j < 0 else j
            out.append(rec[i:j])
            i = j
        if i >= n:
            return out
        i += 1  # the delimiter
        if i == n:
            out.append(b"")
            return out


def decode_csv(records: Any, record_defaults: Any, field_delim: str = ",",
               use_quote_delim: bool = True, name: Any = None, na_value: str = "",
               select_cols: Any = None) -> list[Tensor]:  # fmt: skip
    """Parse CSV records into one tensor per column, typed by `record_defaults`.

    Each default is a one-value list (used for empty or `na_value` fields) or an empty tensor
    (the column is required); its dtype (int32, int64, float32, float64, string) is the column's.
    """
    recs = strings_of(records, "decode_csv")
    delim = _bytes(field_delim)
    if len(delim) != 1:
        raise ValueError(f"decode_csv: field_delim must be one character, got {field_delim!r}.")
    na = _bytes(na_value)
    cols = []
    for d in record_defaults:
        if isinstance(d, list | tuple) and len(d) == 1 and isinstance(d[0], Tensor):
            d = d[0]  # [tf.constant(0, tf.int64)] keeps the tensor's dtype
        t = d if isinstance(d, Tensor) else convert_to_tensor(d)
        arr = backend.to_host(t._data).reshape(-1)
        if arr.size > 1:
            raise ValueError("decode_csv: each record default must have at most one value.")
        if t.dtype.name not in ("int32", "int64", "float32", "float64", "string"):
            raise TypeError(f"decode_csv: record default of dtype {t.dtype.name} is not "
                            "supported; use int32, int64, float32, float64 or string.")  # fmt: skip
        cols.append((t.dtype, arr[0] if arr.size else None))
    if select_cols is not None:
        sel = [int(c) for c in select_cols]
        if sorted(set(sel)) != sel or (sel and sel[0] < 0):
            raise ValueError(
                "decode_csv: select_cols must be non-negative and strictly increasing."
            )
        if len(sel) != len(cols):
            raise ValueError(f"decode_csv: {len(sel)} select_cols but {len(cols)} record_defaults.")
    else:
        sel = None
    outs = [np.empty(recs.shape, dtype=dt.np) for dt, _ in cols]
    flat = recs.reshape(-1)
    for r, rec in enumerate(flat):
        fields = _fields(rec, delim[0], use_quote_delim, r)
        if sel is None and len(fields) != len(cols):
            raise _err("decode_csv", f"Expect {len(cols)} fields but have {len(fields)} in "
                       f"record {r}")  # fmt: skip
        if sel is not None and (not sel or len(fields) <= sel[-1]):
            raise _err("decode_csv", f"Expect {sel[-1] + 1 if sel else 0} fields or more but "
                       f"have {len(fields)} in record {r}")  # fmt: skip
        picked = fields if sel is None else [fields[c] for c in sel]
        for c, ((dt, default), f) in enumerate(zip(cols, picked, strict=True)):
            out = outs[c].reshape(-1)
            if f == b"" or (na and f == na):
                if default is None:
                    raise _err("decode_csv", f"Field {c} is required but missing in record {r}!")
                out[r] = default
                continue
            if dt.name == "string":
                out[r] = f
                continue
            pattern = _INT if dt.name.startswith("int") else _FLOAT
            ok = pattern.fullmatch(f) is not None
            if ok:
                v = int(f) if dt.name.startswith("int") else float(f)
                if dt.name.startswith("int"):
                    info = np.iinfo(dt.np)
                    ok = info.min <= v <= info.max
            if not ok:
                raise _err("decode_csv", f"Field {c} in record {r} is not a valid {dt.name}: "
                           f"{f.decode('utf-8', 'backslashreplace')}")  # fmt: skip
            out[r] = v
    return [as_tensor(o) for o in outs]


# --- base64 and raw bytes -----------------------------------------------------------------------


def encode_base64(input: Any, pad: bool = False, name: Any = None) -> Tensor:  # noqa: A002
    """Web-safe base64 (`-` and `_` for `+` and `/`), without `=` padding unless `pad`."""

    def one(s: bytes) -> bytes:
        out = base64.urlsafe_b64encode(s)
        return out if pad else out.rstrip(b"=")

    return as_tensor(_map(one, strings_of(input, "encode_base64")))


def decode_base64(input: Any, name: Any = None) -> Tensor:  # noqa: A002
    """Decode web-safe base64 (padding optional); any other character is an error."""

    def one(s: bytes) -> bytes:
        body = s.rstrip(b"=")
        if body.translate(None, _B64) or len(body) % 4 == 1:
            raise _err("decode_base64", "Invalid character found in base64.")
        try:
            return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
        except binascii.Error:
            raise _err("decode_base64", "Invalid character found in base64.") from None

    return as_tensor(_map(one, strings_of(input, "decode_base64")))


_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def decode_raw(input_bytes: Any, out_type: Any, little_endian: bool = True,
               fixed_length: Any = None, name: Any = None) -> Tensor:  # fmt: skip
    """Reinterpret each string's bytes as numbers of `out_type`: shape `input.shape + [n]`."""
    arr = strings_of(input_bytes, "decode_raw")
    dt = np.dtype(dtypes.as_dtype(out_type).np)
    if dt.kind not in "iufcb":
        raise TypeError(f"decode_raw: out_type {dt} is not a numeric type.")
    dt = dt.newbyteorder("<" if little_endian else ">")
    size = dt.itemsize
    flat = arr.reshape(-1)
    if fixed_length is not None:
        width = int(fixed_length)
        if width < 0 or width % size:
            raise _err("decode_raw", f"fixed_length {width} must be a non-negative multiple of "
                       f"{size}, the size of {dtypes.as_dtype(out_type).name}.")  # fmt: skip
        rows = [s[:width].ljust(width, b"\0") for s in flat]
    else:
        rows = list(flat)
        if rows:
            width = len(rows[0])
            if width % size:
                raise _err("decode_raw", f"Input to DecodeRaw has length {width} that is not a "
                           f"multiple of {size}, the size of "
                           f"{dtypes.as_dtype(out_type).name}")  # fmt: skip
            for i, s in enumerate(rows):
                if len(s) != width:
                    raise _err("decode_raw", "DecodeRaw requires input strings to all be the same "
                               f"size, but element {i} has size {width} != {len(s)}")  # fmt: skip
        else:
            width = 0
    data = np.frombuffer(b"".join(rows), dtype=dt).astype(dt.newbyteorder("="))
    return as_tensor(data.reshape(arr.shape + (width // size,)))
