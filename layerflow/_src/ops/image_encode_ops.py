"""`tf.io.encode_png` (written here: 8- and 16-bit, 1 to 4 channels), `tf.io.encode_jpeg`
(Pillow) and `tf.image.adjust_jpeg_quality` with its random and stateless variants.

Encoding runs on the host: these functions take eager tensors (as TF's codecs, they are not
differentiable).
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.image_codec_ops import _err, _pil, decode_jpeg
from layerflow._src.ops.image_ops import convert_image_dtype
from layerflow._src.ops.random_ops import uniform
from layerflow._src.ops.stateless_random_ops import stateless_uniform


def _image_array(image: Any, op: str, allowed: tuple[str, ...]) -> np.ndarray:
    if isinstance(image, TensorLike):
        arr = backend.to_host(image._data)
        if arr.dtype.name not in allowed:
            raise TypeError(
                f"{op}: image must be a {' or '.join(allowed)} tensor, got "
                f"{arr.dtype.name}; convert it with tf.image.convert_image_dtype."
            )
        return arr
    # Python and NumPy values convert to the op's dtype, as TF converts them.
    arr = np.asarray(image)
    return arr if arr.dtype.name in allowed else arr.astype(allowed[0])


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png_bytes(img: np.ndarray, level: int) -> bytes:
    h, w, c = img.shape
    depth = 16 if img.dtype == np.uint16 else 8
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = img.astype(">u2" if depth == 16 else np.uint8).reshape(h, -1).view(np.uint8)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1)  # filter type 0 per row
    head = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0)
    body = _chunk(b"IDAT", zlib.compress(raw.tobytes(), level))
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", head) + body + _chunk(b"IEND", b"")


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """PNG-encode uint8 or uint16 images [..., height, width, channels] (1: grey, 2: grey and
    alpha, 3: RGB, 4: RGBA); leading batch dimensions give a string tensor of that shape.
    `compression` is the zlib level, -1 (default) or 0 to 9.

    >>> import layerflow as tf
    >>> tf.io.encode_png(tf.zeros((2, 2, 1), tf.uint8)).numpy()[:4]
    b'\\x89PNG'
    """
    op = "encode_png"
    img = _image_array(image, op, ("uint8", "uint16"))
    level = int(compression)
    if not -1 <= level <= 9:
        raise _err(op, f"{op}: compression should be in [-1,9], got {level}.")
    if img.ndim < 3:
        raise _err(op, f"{op}: image must be at least 3-dimensional [height, width, channels], "
                   f"got shape {list(img.shape)}.")  # fmt: skip
    h, w, c = img.shape[-3:]
    if c not in (1, 2, 3, 4):
        raise _err(op, f"{op}: image must have 1, 2, 3, or 4 channels, got {c}.")
    if h == 0 or w == 0 or h > 2**31 - 1 or w > 2**31 - 1:
        raise _err(op, f"{op}: a PNG needs a height and width of at least 1, got {h}x{w}.")
    batch = img.shape[:-3]
    flat = img.reshape((-1, h, w, c))
    out = np.empty(len(flat), dtype=object)
    for i, one in enumerate(flat):
        out[i] = _png_bytes(one, level)
    return convert_to_tensor(out.reshape(batch) if batch else out[0])


_UNITS = {"in": 1, "cm": 2}


def encode_jpeg(image: Any, format: str = "", quality: int = 95, progressive: bool = False,  # noqa: A002
                optimize_size: bool = False, chroma_downsampling: bool = True,
                density_unit: str = "in", x_density: int = 300, y_density: int = 300,
                xmp_metadata: str = "", name: str | None = None) -> Tensor:  # fmt: skip
    """JPEG-encode a uint8 image [height, width, channels] (1 or 3 channels).

    `format` '' (by the channels), 'grayscale' or 'rgb'; `quality` 0 to 100;
    `chroma_downsampling` False keeps full-resolution colour (4:4:4).

    >>> import layerflow as tf
    >>> tf.io.encode_jpeg(tf.zeros((2, 2, 3), tf.uint8), quality=80).numpy()[:3]
    b'\\xff\\xd8\\xff'
    """
    op = "encode_jpeg"
    img = _image_array(image, op, ("uint8",))
    if img.ndim != 3:
        raise _err(op, f"{op}: image must be 3-dimensional [height, width, channels], got shape "
                   f"{list(img.shape)}; encode a batch with tf.map_fn.")  # fmt: skip
    c = img.shape[-1]
    want = {"": None, "grayscale": 1, "rgb": 3}
    if format not in want:
        raise _err(op, f"{op}: format must be '', 'grayscale' or 'rgb', got {format!r}.")
    if want[format] is not None and c != want[format]:
        raise _err(op, f"{op}: format {format} expects {want[format]} channels, got "
                   f"{list(img.shape)}.")  # fmt: skip
    if c not in (1, 3):
        raise _err(op, f"{op}: image must have 1 or 3 channels, got {list(img.shape)}.")
    q = int(quality)
    if not 0 <= q <= 100:
        raise _err(op, f"{op}: quality must be in [0,100], got {q}.")
    if density_unit not in _UNITS:
        raise _err(op, f"{op}: density_unit must be 'in' or 'cm', got {density_unit!r}.")
    if 0 in img.shape[:2] or max(img.shape[:2]) > 65535:
        raise _err(op, f"{op}: a JPEG's height and width must be in [1, 65535], got "
                   f"{img.shape[0]}x{img.shape[1]}.")  # fmt: skip
    Image = _pil()
    pil = Image.fromarray(np.ascontiguousarray(img[..., 0] if c == 1 else img),
                          "L" if c == 1 else "RGB")  # fmt: skip
    kw: dict[str, Any] = {"quality": q, "progressive": bool(progressive),
                          "optimize": bool(optimize_size),
                          "subsampling": 2 if chroma_downsampling else 0}  # fmt: skip
    if density_unit == "in":
        kw["dpi"] = (int(x_density), int(y_density))
    buf = io.BytesIO()
    pil.save(buf, "JPEG", **kw)
    data = buf.getvalue()
    if density_unit == "cm":  # the JFIF APP0 segment: units byte, then x and y densities
        app0 = data.find(b"JFIF\x00")
        if app0 > 0:
            patch = struct.pack(">BHH", 2, int(x_density), int(y_density))
            data = data[: app0 + 7] + patch + data[app0 + 12 :]
    if xmp_metadata:
        data = _with_xmp(data, xmp_metadata)
    return convert_to_tensor(np.asarray(data, dtype=object))


_XMP_NS = b"http://ns.adobe.com/xap/1.0/\x00"


def _with_xmp(data: bytes, xmp: Any) -> bytes:
    """An APP1 XMP segment (as libjpeg-based encoders write it) after SOI and the JFIF APP0."""
    body = _XMP_NS + (xmp.encode() if isinstance(xmp, str) else bytes(xmp))
    if len(body) + 2 > 0xFFFF:
        raise _err("encode_jpeg", f"encode_jpeg: xmp_metadata of {len(body)} bytes does not fit "
                   "one JPEG segment (65533 bytes at most).")  # fmt: skip
    at = 2
    if data[2:4] == b"\xff\xe0":
        at = 4 + struct.unpack(">H", data[4:6])[0]
    return data[:at] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + data[at:]


def adjust_jpeg_quality(image: Any, jpeg_quality: Any, dct_method: str = "",
                        name: str | None = None) -> Tensor:  # fmt: skip
    """Encode a 3-D image as JPEG at `jpeg_quality` (0 to 100) and decode it again, in the
    image's dtype (floats are taken as [0, 1] and clipped).

    >>> import layerflow as tf
    >>> tf.image.adjust_jpeg_quality(tf.zeros((4, 4, 3)), 75).shape
    TensorShape([4, 4, 3])
    """
    op = "adjust_jpeg_quality"
    x = convert_to_tensor(image)
    if x.shape.rank != 3:
        raise _err(op, f"{op}: image must be 3-dimensional [height, width, channels], got "
                   f"shape {x.shape}; adjust a batch with tf.map_fn.")  # fmt: skip
    if x.shape[-1] not in (1, 3):
        raise _err(op, f"{op}: image must have 1 or 3 channels, got {x.shape}.")
    q = jpeg_quality
    if isinstance(q, TensorLike):
        q = backend.to_host(q._data)
    q = int(np.asarray(q))
    if not 0 <= q <= 100:
        raise _err(op, f"{op}: quality must be in [0,100], got {q}.")
    as_u8 = convert_image_dtype(x, "uint8", saturate=True)
    decoded = decode_jpeg(encode_jpeg(as_u8, quality=q), channels=x.shape[-1],
                          dct_method=dct_method)  # fmt: skip
    return convert_image_dtype(decoded, x.dtype, saturate=True)


def _check_quality_range(lo: Any, hi: Any) -> None:
    if lo < 0 or hi < 0 or lo > 100 or hi > 100:
        raise ValueError(f"jpeg encoding range must be between 0 and 100, got [{lo}, {hi}).")
    if lo >= hi:
        raise ValueError(
            f"`min_jpeg_quality` must be less than `max_jpeg_quality`, got {lo} and {hi}."
        )


def random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                        seed: int | None = None) -> Tensor:  # fmt: skip
    """`adjust_jpeg_quality` at a quality drawn uniformly from [min, max)."""
    _check_quality_range(min_jpeg_quality, max_jpeg_quality)
    q = uniform([], min_jpeg_quality, max_jpeg_quality, "int32", seed=seed)
    return adjust_jpeg_quality(image, q)


def stateless_random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                                  seed: Any) -> Tensor:  # fmt: skip
    """`random_jpeg_quality` whose quality depends only on `seed` (shape [2])."""
    _check_quality_range(min_jpeg_quality, max_jpeg_quality)
    q = stateless_uniform([], seed, min_jpeg_quality, max_jpeg_quality, "int32")
    return adjust_jpeg_quality(image, q)
