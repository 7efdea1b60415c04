"""`tf.strings.unicode_*`: decode, encode, transcode, split and script of string tensors.

Encodings are TF's (ICU) names, run by Python's codecs: "UTF-8", "UTF-16-BE", "UTF-32-BE",
"US-ASCII", "ISO-8859-1", ... `errors` is TF's: "replace" (each invalid sequence becomes
`replacement_char`, U+FFFD by default), "ignore" (dropped) or "strict" (InvalidArgumentError).
Results with one row per string are RaggedTensors (a 1-D tensor for a scalar input), as in TF.

>>> import layerflow as tf
>>> tf.strings.unicode_decode(["h\\u00e9", "a"], "UTF-8")
<tf.RaggedTensor [[104, 233], [97]]>
"""

from __future__ import annotations

import codecs
import unicodedata
from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.ops.string_ops import _host, _ragged, as_tensor, strings_of

# A lone surrogate marks each invalid input sequence: no codec decodes valid input to one.
_MARK = 0xD800
codecs.register_error("layerflow.unicode_mark", lambda e: ("\ud800", e.end))

_ERRORS = ("replace", "ignore", "strict")


def _err(op: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, op, msg)


def _codec(encoding: str, op: str) -> str:
    name = encoding.lower().replace("_", "-")
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise _err(op, f"Could not create converter for input encoding: {encoding}") from None


def _check(errors_: str, replacement_char: int, op: str) -> None:
    if errors_ not in _ERRORS:
        raise ValueError(f"tf.strings.{op}: errors must be one of {_ERRORS}, got {errors_!r}.")
    if not 0 <= int(replacement_char) <= 0x10FFFF or 0xD800 <= int(replacement_char) <= 0xDFFF:
        raise _err(op, f"replacement_char {replacement_char} is not a valid code point.")


def _decode_one(s: bytes, codec: str, errors_: str, repl: int, ctrl: bool, op: str,
                offsets: bool) -> tuple[list[int], list[int]]:  # fmt: skip
    """Code points of `s` (and each one's starting byte offset)."""
    dec = codecs.getincrementaldecoder(codec)(errors="layerflow.unicode_mark")
    chars: list[int] = []
    starts: list[int] = []
    start = 0
    pieces = [(i, s[i : i + 1]) for i in range(len(s))] if offsets else [(len(s) - 1, s)]
    for i, piece in pieces + [(len(s), b"")]:
        out = dec.decode(piece, final=i == len(s))
        for k, c in enumerate(out):
            chars.append(ord(c))
            starts.append(start if k == 0 else i)
        if out:
            start = i + 1
    cps, offs = [], []
    for c, o in zip(chars, starts, strict=True):
        if c == _MARK:
            if errors_ == "strict":
                raise _err(op, "Invalid formatting on input string")
            if errors_ == "ignore":
                continue
            c = repl
        elif ctrl and c < 0x20:
            c = repl
        cps.append(c)
        offs.append(o)
    return cps, offs


def _decode_all(input: Any, input_encoding: str, errors_: str, replacement_char: int,  # noqa: A002
                ctrl: bool, op: str, offsets: bool) -> tuple[np.ndarray, list, list]:  # fmt: skip
    _check(errors_, replacement_char, op)
    codec = _codec(input_encoding, op)
    arr = strings_of(input, op)
    rows = [_decode_one(s, codec, errors_, int(replacement_char), ctrl, op, offsets)
            for s in arr.reshape(-1)]  # fmt: skip
    return arr, [r[0] for r in rows], [r[1] for r in rows]


def unicode_decode(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, replace_control_characters: bool = False,
                   name: Any = None) -> Any:  # fmt: skip
    """The code points (int32) of each string: a RaggedTensor, or a 1-D tensor for a scalar."""
    arr, cps, _ = _decode_all(input, input_encoding, errors, replacement_char,
                              replace_control_characters, "unicode_decode", False)  # fmt: skip
    return _ragged(cps, arr.shape, np.int32)


def unicode_decode_with_offsets(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                                replacement_char: int = 65533,
                                replace_control_characters: bool = False,
                                name: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """`unicode_decode` plus each character's starting byte offset (int64)."""
    arr, cps, offs = _decode_all(input, input_encoding, errors, replacement_char,
                                 replace_control_characters, "unicode_decode_with_offsets",
                                 True)  # fmt: skip
    return _ragged(cps, arr.shape, np.int32), _ragged(offs, arr.shape, np.int64)


def _encode_cps(cps: list, codec: str, errors_: str, repl: int, op: str) -> bytes:
    chars = []
    for c in cps:
        c = int(c)
        if c < 0 or c > 0x10FFFF or 0xD800 <= c <= 0xDFFF:
            if errors_ == "strict":
                raise _err(op, "Code point is out of range for Unicode, or is a surrogate.")
            if errors_ == "ignore":
                continue
            c = repl
        chars.append(chr(c))
    try:
        return "".join(chars).encode(codec)
    except UnicodeEncodeError as e:
        raise _err(op, f"Could not encode {e.object[e.start : e.end]!r} as {codec}.") from None


def unicode_encode(input: Any, output_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, name: Any = None) -> Tensor:  # fmt: skip
    """Encode code points (the last axis of an int32 tensor, or a RaggedTensor's rows)."""
    _check(errors, replacement_char, "unicode_encode")
    codec = _codec(output_encoding, "unicode_encode")
    if isinstance(input, RaggedTensor):
        rows = input.to_list()
        shape: tuple = (len(rows),)
        while input.ragged_rank > 1:
            raise NotImplementedError("unicode_encode: RaggedTensor input of ragged rank > 1.")
    else:
        arr = _host(input, "int32")
        if arr.ndim == 0:
            raise ValueError("unicode_encode: input must have rank >= 1, got a scalar.")
        shape = arr.shape[:-1]
        rows = arr.reshape(-1, arr.shape[-1]).tolist() if arr.size else [[]] * int(
            np.prod(shape))  # fmt: skip
    out = np.empty(len(rows), dtype=object)
    for i, r in enumerate(rows):
        out[i] = _encode_cps(r, codec, errors, int(replacement_char), "unicode_encode")
    return as_tensor(out.reshape(shape))


def unicode_transcode(input: Any, input_encoding: str, output_encoding: str,  # noqa: A002
                      errors: str = "replace", replacement_char: int = 65533,
                      replace_control_characters: bool = False,
                      name: Any = None) -> Tensor:  # fmt: skip
    """Re-encode each string from `input_encoding` to `output_encoding`."""
    arr, cps, _ = _decode_all(input, input_encoding, errors, replacement_char,
                              replace_control_characters, "unicode_transcode", False)  # fmt: skip
    codec = _codec(output_encoding, "unicode_transcode")
    out = np.empty(len(cps), dtype=object)
    for i, r in enumerate(cps):
        out[i] = _encode_cps(r, codec, errors, int(replacement_char), "unicode_transcode")
    return as_tensor(out.reshape(arr.shape))


def _split(input: Any, input_encoding: str, errors_: str, replacement_char: int,  # noqa: A002
           op: str) -> tuple[Any, Any]:  # fmt: skip
    arr, cps, offs = _decode_all(input, input_encoding, errors_, replacement_char, False, op,
                                 True)  # fmt: skip
    codec = _codec(input_encoding, op)
    chars = [[chr(c).encode(codec) for c in r] for r in cps]
    return _ragged(chars, arr.shape), _ragged(offs, arr.shape, np.int64)


def unicode_split(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                  replacement_char: int = 65533, name: Any = None) -> Any:  # fmt: skip
    """Each string split into its characters (each encoded in `input_encoding`)."""
    return _split(input, input_encoding, errors, replacement_char, "unicode_split")[0]


def unicode_split_with_offsets(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                               replacement_char: int = 65533,
                               name: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """`unicode_split` plus each character's starting byte offset (int64)."""
    return _split(input, input_encoding, errors, replacement_char, "unicode_split_with_offsets")


# ICU's UScriptCode of the main scripts, by the Unicode blocks they own. Python has no script
# property, so this covers the blocks below (and the Common/Inherited rule for the rest):
# a code point outside them that is a letter gives USCRIPT_UNKNOWN (103), not ICU's exact code.
_SCRIPT_BLOCKS = [
    (0x0041, 0x024F, 25), (0x0250, 0x02AF, 25), (0x1E00, 0x1EFF, 25), (0xFF21, 0xFF5A, 25),
    (0x0370, 0x03FF, 14), (0x1F00, 0x1FFF, 14), (0x0400, 0x052F, 8), (0x0530, 0x058F, 3),
    (0x0590, 0x05FF, 19), (0x0600, 0x06FF, 2), (0x0750, 0x077F, 2), (0x0700, 0x074F, 34),
    (0x0780, 0x07BF, 37), (0x0900, 0x097F, 10), (0x0980, 0x09FF, 4), (0x0A00, 0x0A7F, 16),
    (0x0A80, 0x0AFF, 15), (0x0B00, 0x0B7F, 31), (0x0B80, 0x0BFF, 35), (0x0C00, 0x0C7F, 36),
    (0x0C80, 0x0CFF, 21), (0x0D00, 0x0D7F, 26), (0x0D80, 0x0DFF, 33), (0x0E00, 0x0E7F, 38),
    (0x0E80, 0x0EFF, 24), (0x0F00, 0x0FFF, 39), (0x1000, 0x109F, 28), (0x10A0, 0x10FF, 12),
    (0x1100, 0x11FF, 18), (0x1200, 0x139F, 11), (0x13A0, 0x13FF, 6), (0x1680, 0x169F, 29),
    (0x16A0, 0x16FF, 32), (0x1780, 0x17FF, 23), (0x1800, 0x18AF, 27), (0x3040, 0x309F, 20),
    (0x30A0, 0x30FF, 22), (0x3100, 0x312F, 5), (0x3130, 0x318F, 18), (0x3400, 0x4DBF, 17),
    (0x4E00, 0x9FFF, 17), (0xAC00, 0xD7AF, 18), (0xF900, 0xFAFF, 17), (0x20000, 0x2FFFF, 17),
]  # fmt: skip


def _script(c: int) -> int:
    if c < 0 or c > 0x10FFFF:
        return -1
    cat = unicodedata.category(chr(c))
    if cat in ("Mn", "Me"):
        return 1  # Inherited
    if cat[0] not in "L" and not (cat == "Nl"):
        return 0  # Common: digits, punctuation, symbols, spaces, controls
    for lo, hi, code in _SCRIPT_BLOCKS:
        if lo <= c <= hi:
            return code
    return 103  # Unknown


def unicode_script(input: Any, name: Any = None) -> Tensor:  # noqa: A002
    """ICU's script code (int32) of each code point; -1 for an invalid one."""
    arr = _host(input if isinstance(input, Tensor) else convert_to_tensor(input, "int32"))
    out = np.vectorize(_script, otypes=[np.int32])(arr) if arr.size else arr.astype(np.int32)
    return as_tensor(out)
