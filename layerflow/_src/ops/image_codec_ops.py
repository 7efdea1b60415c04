"""`tf.io` image codecs: JPEG, PNG, GIF, BMP, WebP and JPEG XL decoding and JPEG/PNG encoding,
through Pillow (the `image` extra: `pip install 'layerflow[image]'`; JPEG XL also needs
pillow-jxl-plugin, the `jxl` extra); PNG encoding is written here.

The bytes are untrusted: every decode reads the header first and refuses an image with more
pixels (over all frames) than `PIL.Image.MAX_IMAGE_PIXELS` before allocating anything, and any
malformed, truncated or unsupported data raises `InvalidArgumentError` naming the op.

As TF, the decoders share one machinery that detects the format from the magic bytes: `decode_png`
also reads a JPEG, `decode_jpeg` a PNG, and so on, with TF's exceptions (BMP only through
`decode_bmp`/`decode_image`; animations only through `decode_gif`/`decode_webp`/`decode_image`).
JPEG pixels may differ from TF's by a grey level or two (both use libjpeg, with different DCT
defaults); PNG, GIF, BMP and JPEG XL pixels are exact. As TF, a JPEG XL image is given only with
its own number of channels (0 or that number).
"""

from __future__ import annotations

import io
import threading
import warnings
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.image_ops import convert_image_dtype
from layerflow._src.ops.string_ops import strings_of

_JPEG, _PNG, _GIF, _BMP, _WEBP, _JXL = "JPEG", "PNG", "GIF", "BMP", "WebP", "JPEG XL"
_JXL_CONTAINER = b"\x00\x00\x00\x0cJXL \r\n\x87\n"
_truncated_lock = threading.Lock()


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - the extra is installed in the test environment
        raise ImportError(
            "tf.io image codecs need Pillow: pip install 'layerflow[image]' (or pip install "
            "pillow)."
        ) from None
    return Image


def _err(op: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, op, msg)


def _strings(contents: Any, op: str) -> np.ndarray:
    if isinstance(contents, TensorLike) and backend.to_host(contents._data).dtype.kind == "S":
        return backend.to_host(contents._data)  # an element of a string tensor
    return strings_of(contents, op)


def _contents(contents: Any, op: str) -> bytes:
    if isinstance(contents, bytes | str):
        return contents.encode() if isinstance(contents, str) else contents
    arr = _strings(contents, op)
    if arr.shape != ():
        dims = ",".join(str(d) for d in arr.shape)
        raise _err(op, f"{op}: `contents` must be scalar but got shape[{dims}]; decode a batch "
                   "with tf.map_fn.")  # fmt: skip
    value = arr[()]
    return value.encode() if isinstance(value, str) else bytes(value)


def _format(data: bytes) -> str | None:
    if data[:3] == b"\xff\xd8\xff":
        return _JPEG
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return _PNG
    if data[:4] == b"GIF8":
        return _GIF
    if data[:2] == b"BM":
        return _BMP
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _WEBP
    if data[:2] == b"\xff\x0a" or data[:12] == _JXL_CONTAINER:
        return _JXL
    return None


def _jxl_plugin() -> None:
    """Register Pillow's JPEG XL plugin (imported on the first JPEG XL image only)."""
    try:
        import pillow_jxl  # noqa: F401 - registers the JXL format with Pillow
    except ImportError:
        raise ImportError(
            "Decoding JPEG XL needs pillow-jxl-plugin: pip install 'layerflow[jxl]' (or pip "
            "install pillow-jxl-plugin)."
        ) from None


def _channels(channels: Any, allowed: tuple[int, ...], op: str, what: str = "") -> int:
    c = 0 if channels is None else int(channels)
    if c not in allowed:
        names = ", ".join(str(a) for a in allowed[:-1]) + f" or {allowed[-1]}"
        raise _err(op, f"{op}: `channels` must be {names}{what}, but got {c}.")
    return c


# --- reading ------------------------------------------------------------------------------------


def _open(data: bytes, op: str, fmt: str) -> Any:
    """The Pillow image, opened lazily (header only), with the pixel limit checked."""
    Image = _pil()
    if fmt == _JXL:
        _jxl_plugin()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
            frames = int(getattr(im, "n_frames", 1) or 1)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as e:
        raise _err(op, f"{op}: the {fmt} image is too large to decode safely ({e}). Raise "
                   "PIL.Image.MAX_IMAGE_PIXELS if the file is trusted.") from None  # fmt: skip
    except Image.UnidentifiedImageError:
        raise _err(op, f"{op}: invalid {fmt} data: its header can't be read.") from None
    except Exception as e:
        raise _err(op, f"{op}: invalid {fmt} data ({type(e).__name__}: {e}).") from None
    limit = Image.MAX_IMAGE_PIXELS
    total = im.size[0] * im.size[1] * frames
    if limit is not None and total > limit:
        raise _err(op, f"{op}: the {fmt} image has {frames} frame(s) of {im.size[0]}x"
                   f"{im.size[1]} = {total} pixels, more than PIL.Image.MAX_IMAGE_PIXELS = "
                   f"{limit}. Raise that limit if the file is trusted.")  # fmt: skip
    return im


def _load(fn: Any, op: str, fmt: str, recover: bool = False) -> Any:
    """Run a Pillow decoding step; any failure becomes InvalidArgumentError."""
    from PIL import ImageFile

    try:
        if not recover:
            return fn()
        with _truncated_lock:
            old, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, True
            try:
                return fn()
            finally:
                ImageFile.LOAD_TRUNCATED_IMAGES = old
    except errors.OpError:
        raise
    except Exception as e:
        raise _err(
            op, f"{op}: invalid or truncated {fmt} data ({type(e).__name__}: {e})."
        ) from None


def _with_args(tile: Any, args: Any) -> Any:
    parts = (tile[0], tile[1], tile[2], args)
    return type(tile)(*parts) if hasattr(tile, "_fields") else parts  # Pillow 11+: a namedtuple


def _png16(im: Any) -> np.ndarray | None:
    """The 16-bit samples of a 16-bit PNG with colour (Pillow keeps only the high bytes): its
    zlib/filter decoder is run again with a raw mode that reads the low bytes."""
    tile = im.tile[0] if len(im.tile) == 1 else None
    raw = tile[3] if tile is not None else None
    raw = raw[0] if isinstance(raw, tuple) else raw
    if raw not in ("RGB;16B", "RGBA;16B", "LA;16B") or not hasattr(im.fp, "getvalue"):
        return None
    data = im.fp.getvalue()
    Image = _pil()
    hi_im = Image.open(io.BytesIO(data))
    lo_im = Image.open(io.BytesIO(data))
    if raw == "LA;16B":  # 4 bytes a pixel, as 8-bit RGBA: (G hi, G lo, A hi, A lo)
        lo_im.tile = [_with_args(tile, "RGBA")]
        b = np.asarray(lo_im).astype(np.uint16)
        return np.stack([b[..., 0] * 256 + b[..., 1], b[..., 2] * 256 + b[..., 3]], axis=-1)
    lo_im.tile = [_with_args(tile, raw.replace("16B", "16L"))]
    return np.asarray(hi_im).astype(np.uint16) * 256 + np.asarray(lo_im).astype(np.uint16)


def _bmp32(im: Any) -> np.ndarray | None:
    """A 32-bit BMP's pixels with their alpha byte (Pillow reads it as BGRX; TF keeps it)."""
    tile = im.tile[0] if len(im.tile) == 1 else None
    if tile is None or tile[0] != "raw" or not isinstance(tile[3], tuple) or tile[3][0] != "BGRX":
        return None
    _, stride, orientation = tile[3]
    w, h = im.size
    data = im.fp.getvalue()[tile[2] : tile[2] + stride * h]
    if len(data) < stride * h:
        return None  # truncated: Pillow's own decoder reports it
    rows = np.frombuffer(data, np.uint8).reshape(h, stride)[:, : 4 * w].reshape(h, w, 4)
    rows = rows[::-1] if orientation < 0 else rows
    return rows[..., [2, 1, 0, 3]].copy()


def _pixels(im: Any, fmt: str, channels: int) -> np.ndarray:
    """One frame as [H, W, C] (C = 1, 2, 3 or 4), uint8 or (16-bit PNG) uint16, with TF's
    colour rules: palettes expand to RGB(A); the tRNS chunk of a grey or RGB PNG gives alpha only
    when channels are asked for."""
    mode = im.mode
    if fmt == _PNG and mode in ("RGB", "RGBA"):
        wide = _png16(im)
        if wide is not None:
            return wide
    if fmt == _BMP and mode == "RGB" and hasattr(im.fp, "getvalue"):
        with_alpha = _bmp32(im)
        if with_alpha is not None:
            return with_alpha
    if mode in ("I;16", "I;16B", "I;16L") or (mode == "I" and fmt == _PNG):
        return np.asarray(im).astype(np.uint16)[..., None]
    trns = fmt == _PNG and "transparency" in im.info and channels in (2, 4)
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    elif mode in ("L", "1") and trns:
        gray = np.asarray(im.convert("L"))
        alpha = np.where(gray == int(im.info["transparency"]), 0, 255).astype(np.uint8)
        return np.stack([gray, alpha], axis=-1)
    elif mode == "RGB" and trns:
        im = im.convert("RGBA")
    elif mode == "1":
        im = im.convert("L")
    elif mode == "PA":
        im = im.convert("RGBA")
    elif mode not in ("L", "LA", "RGB", "RGBA"):
        im = im.convert("RGB")
    arr = np.asarray(im)
    return arr[..., None] if arr.ndim == 2 else arr


def _gray(arr: np.ndarray) -> np.ndarray:
    """libpng's RGB to grey (TF's png_set_rgb_to_gray with 0.299 and 0.587, 15-bit fixed
    point)."""
    rc, gc = 9797, 19234
    bc = 32768 - rc - gc
    a = arr.astype(np.int64)
    half = 16384 if arr.dtype == np.uint16 else 0  # libpng rounds only its 16-bit path
    g = (rc * a[..., 0] + gc * a[..., 1] + bc * a[..., 2] + half) >> 15
    same = (a[..., 0] == a[..., 1]) & (a[..., 1] == a[..., 2])
    return np.where(same, a[..., 0], g).astype(arr.dtype)


def _to_channels(arr: np.ndarray, channels: int) -> np.ndarray:
    have = arr.shape[-1]
    if channels in (0, have):
        return arr
    color = arr[..., :3] if have >= 3 else np.repeat(arr[..., :1], 3, axis=-1)
    if channels == 1:
        return (_gray(color) if have >= 3 else arr[..., 0])[..., None]
    if channels == 3:
        return color
    full = np.iinfo(arr.dtype).max
    alpha = arr[..., -1:] if have in (2, 4) else np.full(arr.shape[:-1] + (1,), full, arr.dtype)
    return np.concatenate([color, alpha], axis=-1)


def _frames(data: bytes, op: str, fmt: str, channels: int, *, all_frames: bool,
            first_ok: bool = False, ratio: int = 1,
            recover: bool = False) -> list[np.ndarray]:  # fmt: skip
    im = _open(data, op, fmt)
    if fmt == _JPEG:
        return [_jpeg(im, op, channels, ratio, recover)]
    count = int(getattr(im, "n_frames", 1) or 1)
    if not all_frames and not first_ok and count > 1 and fmt == _GIF:
        raise _err(op, f"{op}: Got {count} frames, but animated gifs can only be decoded by "
                   "tf.io.decode_gif or tf.io.decode_image.")  # fmt: skip

    def read() -> list[np.ndarray]:
        out = []
        for i in range(count if all_frames else 1):
            im.seek(i)
            if fmt == _GIF:
                frame = _gif_frame(im, out[-1] if out else None)
                im.dispose = None  # TF ignores disposal: the next frame draws over this one
            else:
                frame = _pixels(im, fmt, channels)
            out.append(_to_channels(frame, channels))
        return out

    return _load(read, op, fmt, recover)


def _gif_frame(im: Any, previous: np.ndarray | None) -> np.ndarray:
    """A GIF frame as TF composites it: Pillow's frame, and where that is transparent the
    previous frame (black for the first; TF does not restore to the background)."""
    rgba = np.asarray(im.convert("RGBA"))
    under = np.zeros_like(rgba[..., :3]) if previous is None else previous[..., :3]
    return np.where(rgba[..., 3:] == 0, under, rgba[..., :3]).astype(np.uint8)


def _jpeg(im: Any, op: str, channels: int, ratio: int, recover: bool) -> np.ndarray:
    w, h = im.size
    mode = "L" if channels == 1 else None

    def read() -> np.ndarray:
        size = (w // ratio, h // ratio) if ratio > 1 and w >= ratio and h >= ratio else None
        if mode or size:  # libjpeg's own grey output and DCT scaling, as TF asks libjpeg for
            im.draft(mode or im.mode, size)
        if ratio > 1 and size is None:
            _tiny_scale(im, ratio)
        return _pixels(im, _JPEG, channels)

    return _to_channels(_load(read, op, _JPEG, recover), channels)


def _tiny_scale(im: Any, ratio: int) -> None:
    """DCT scaling by `ratio` of an image smaller than the ratio, which Pillow's `draft` can't
    ask for: the same settings draft makes, with the scale given."""
    d, e, o, a = im.tile[0]
    e = (e[0], e[1], (e[2] - e[0] + ratio - 1) // ratio + e[0],
         (e[3] - e[1] + ratio - 1) // ratio + e[1])  # fmt: skip
    im.tile = [type(im.tile[0])(d, e, o, a) if hasattr(im.tile[0], "_fields") else (d, e, o, a)]
    im._size = (-(-im.size[0] // ratio), -(-im.size[1] // ratio))
    im.decoderconfig = (ratio, 0)


def _tensor(arr: np.ndarray) -> Tensor:
    return convert_to_tensor(np.ascontiguousarray(arr))


def _wrong_op(fmt: str, op: str) -> errors.InvalidArgumentError:
    use = {_PNG: "decode_png", _JPEG: "decode_jpeg", _GIF: "decode_gif"}.get(fmt, "decode_image")
    return _err(op, f"{op}: Trying to decode {fmt} format using {op}. Use `{use}` or "
                "`decode_image` instead.")  # fmt: skip


def _decode(contents: Any, op: str, channels: int, *, bmp: bool = False, gif: bool = False,
            webp: bool = True, ratio: int = 1, recover: bool = False,
            expand: bool = True) -> tuple[np.ndarray, str]:  # fmt: skip
    """Shared decoder: the image (3-D, or 4-D for GIF under `gif` and WebP when `expand`) and
    its format, with TF's rules for which op reads which format."""
    data = _contents(contents, op)
    fmt = _format(data)
    if fmt is None:
        raise _err(op, f"{op}: Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, "
                   f"WebP required (the data starts with {data[:8]!r}).")  # fmt: skip
    if fmt == _BMP and not bmp:
        raise _err(op, f"{op}: Trying to decode BMP format using a wrong op. Use `decode_bmp` "
                   "or `decode_image` instead.")  # fmt: skip
    if fmt == _WEBP and not webp:
        raise _wrong_op(fmt, op)
    if fmt == _GIF and channels not in (0, 3):
        raise _err(op, f"{op}: channels must be 0 or 3 for GIF, got {channels}.")
    if fmt == _WEBP and channels not in (0, 3, 4):
        raise _err(op, f"{op}: WebP only supports 3 or 4 channels, got {channels}.")
    if fmt == _BMP and channels not in (0, 3, 4):
        raise _err(op, f"{op}: `channels` must be 0, 3 or 4 for BMP, but got {channels}.")
    animated = expand and (fmt == _WEBP or (gif and fmt == _GIF))
    frames = _frames(data, op, fmt, 0 if fmt == _JXL else channels, all_frames=animated,
                     first_ok=gif, ratio=ratio, recover=recover)  # fmt: skip
    if fmt == _JXL and channels not in (0, frames[0].shape[-1]):
        raise _err(op, f"{op}: Number of channels requested ({channels}) does not match the "
                   f"JPEG XL image's {frames[0].shape[-1]}; use channels=0.")  # fmt: skip
    if fmt == _WEBP and channels and frames[0].shape[-1] != channels:
        raise _err(op, f"{op}: Number of channels requested ({channels}) does not match the "
                   f"WebP image's {frames[0].shape[-1]}; use channels=0.")  # fmt: skip
    return (np.stack(frames) if animated else frames[0]), fmt


def _check_ratio(ratio: Any, op: str) -> int:
    r = int(ratio)
    if r not in (1, 2, 4, 8):
        raise _err(op, f"{op}: ratio must be 1, 2, 4, or 8, got {r}.")
    return r


_DCT = ("", "INTEGER_FAST", "INTEGER_ACCURATE")


def _check_dct(dct_method: Any, op: str) -> None:
    if dct_method not in _DCT:
        raise _err(op, f"{op}: dct_method must be one of {list(_DCT)}, got {dct_method!r}.")


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: str | None = None) -> Tensor:  # fmt: skip
    """Decode a JPEG (or PNG/GIF/WebP, as TF) to uint8 [height, width, channels].

    `channels`: 0 (as stored), 1 (libjpeg's own greyscale) or 3; `ratio` (1, 2, 4, 8) downscales
    in the DCT domain. `dct_method` is accepted; Pillow's libjpeg always uses its default DCT.

    >>> import layerflow as tf
    >>> img = tf.zeros((4, 6, 3), tf.uint8)
    >>> tf.io.decode_jpeg(tf.io.encode_jpeg(img)).shape
    TensorShape([4, 6, 3])
    """
    op = "decode_jpeg"
    c = _channels(channels, (0, 1, 3, 4), op)
    r = _check_ratio(ratio, op)
    _check_dct(dct_method, op)
    data = _contents(contents, op)
    if c == 4 and _format(data) == _JPEG:
        raise _err(op, f"{op}: JPEG does not support 4 channels; use channels=3.")
    return _tensor(_decode(data, op, c, ratio=r, recover=bool(try_recover_truncated))[0])


def decode_and_crop_jpeg(contents: Any, crop_window: Any, channels: int = 0, ratio: int = 1,
                         fancy_upscaling: bool = True, try_recover_truncated: bool = False,
                         acceptable_fraction: float = 1, dct_method: str = "",
                         name: str | None = None) -> Tensor:  # fmt: skip
    """Decode a JPEG and return the crop `crop_window` = [y, x, height, width] of it."""
    op = "decode_and_crop_jpeg"
    c = _channels(channels, (0, 1, 3), op)
    r = _check_ratio(ratio, op)
    _check_dct(dct_method, op)
    win = np.asarray(backend.to_host(crop_window._data) if isinstance(crop_window, TensorLike)
                     else crop_window)  # fmt: skip
    if win.shape != (4,) or win.dtype.kind not in "iu":
        raise _err(op, f"{op}: crop_window must be 4 ints [y, x, height, width], got "
                   f"{win.tolist()}.")  # fmt: skip
    data = _contents(contents, op)
    fmt = _format(data)
    if fmt != _JPEG:
        raise _err(op, f"{op}: DecodeAndCropJpeg operation can run on JPEG only, but detected "
                   f"{fmt or 'an unknown format'}.")  # fmt: skip
    img, _ = _decode(data, op, c, ratio=r, recover=bool(try_recover_truncated))
    y, x, h, w = (int(v) for v in win)
    if y < 0 or x < 0 or h <= 0 or w <= 0 or y + h > img.shape[0] or x + w > img.shape[1]:
        raise _err(op, f"{op}: Invalid JPEG data or crop window: the window [{y}, {x}, {h}, {w}] "
                   f"is not inside the {img.shape[0]}x{img.shape[1]} image.")  # fmt: skip
    return _tensor(img[y : y + h, x : x + w])


def decode_png(contents: Any, channels: int = 0, dtype: Any = "uint8",
               name: str | None = None) -> Tensor:  # fmt: skip
    """Decode a PNG (or JPEG/GIF/WebP, as TF) to [height, width, channels] uint8 or uint16.

    `channels`: 0 (as stored), 1, 3 or 4 (grey and alpha are added or dropped as libpng does).
    A 16-bit PNG read as uint8 keeps the high byte; an 8-bit one read as uint16 is scaled by 257.

    >>> import layerflow as tf
    >>> img = tf.constant([[[0, 65535]]], tf.uint16)
    >>> tf.io.decode_png(tf.io.encode_png(img), dtype=tf.uint16).numpy().tolist()
    [[[0, 65535]]]
    """
    op = "decode_png"
    c = _channels(channels, (0, 1, 3, 4), op)
    dt = dtypes.as_dtype(dtype)
    if dt.name not in ("uint8", "uint16"):
        raise TypeError(f"{op}: dtype must be uint8 or uint16, got {dt.name}.")
    return _tensor(_depth(_decode(contents, op, c)[0], dt.name))


def _depth(arr: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "uint8" and arr.dtype == np.uint16:
        return (arr >> 8).astype(np.uint8)
    if dtype == "uint16" and arr.dtype == np.uint8:
        return arr.astype(np.uint16) * 257
    return arr


def decode_jxl(contents: Any, channels: int = 0, dtype: Any = "uint8",
               name: str | None = None) -> Tensor:  # fmt: skip
    """Decode a JPEG XL image (or a PNG/JPEG/GIF/WebP, as TF) to uint8 [height, width, channels].

    `channels` is 0 or the image's own number of channels (1, 3 or 4): as TF, JPEG XL images
    are not converted between grey, RGB and RGBA.
    """
    op = "decode_jxl"
    c = _channels(channels, (0, 1, 3, 4), op)
    if dtypes.as_dtype(dtype).name != "uint8":
        raise TypeError(f"{op}: dtype must be uint8, got {dtypes.as_dtype(dtype).name}.")
    return _tensor(_depth(_decode(contents, op, c)[0], "uint8"))


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """Decode every frame of a GIF to uint8 [num_frames, height, width, 3] (a PNG, JPEG or
    WebP gives one frame, as TF)."""
    img, _ = _decode(contents, "decode_gif", 0, gif=True, expand=True)
    return _tensor((img if img.ndim == 4 else img[None])[..., :3])


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """Decode a BMP to uint8 [height, width, channels] (`channels` 0, 3 or 4)."""
    op = "decode_bmp"
    c = _channels(channels, (0, 3, 4), op, " for BMP")
    data = _contents(contents, op)
    fmt = _format(data)
    if fmt in (_PNG, _JPEG, _GIF):
        raise _wrong_op(fmt, op)
    return _tensor(_decode(data, op, c, bmp=True)[0])


def decode_webp(contents: Any, channels: int = 0, dtype: Any = "uint8",
                name: str | None = None) -> Tensor:  # fmt: skip
    """Decode a WebP (every frame) to uint8 [num_frames, height, width, channels]; a PNG or
    JPEG gives a 3-D image, as TF."""
    op = "decode_webp"
    if dtypes.as_dtype(dtype).name != "uint8":
        raise TypeError(f"{op}: dtype must be uint8, got {dtypes.as_dtype(dtype).name}.")
    c = _channels(channels, (0, 3, 4), op, " for WebP")
    data = _contents(contents, op)
    if _format(data) == _GIF:
        raise _err(op, f"{op}: a GIF can't be decoded by decode_webp; use decode_gif or "
                   "decode_image.")  # fmt: skip
    return _tensor(_decode(data, op, c)[0])


def decode_image(contents: Any, channels: Any = None, dtype: Any = "uint8",
                 name: str | None = None, expand_animations: bool = True) -> Tensor:  # fmt: skip
    """Decode a BMP, GIF, JPEG, PNG or WebP, detected from its bytes.

    GIF and WebP give [num_frames, height, width, channels] unless `expand_animations=False`
    (then the first frame, 3-D); `dtype` other than uint8 converts as
    `tf.image.convert_image_dtype` (floats in [0, 1]).

    >>> import layerflow as tf
    >>> png = tf.io.encode_png(tf.fill((2, 2, 3), tf.constant(255, tf.uint8)))
    >>> tf.io.decode_image(png, dtype=tf.float32)[0, 0].numpy()
    array([1., 1., 1.], dtype=float32)
    """
    op = "decode_image"
    c = _channels(channels, (0, 1, 3, 4), op)
    dt = dtypes.as_dtype(dtype)
    img, _ = _decode(contents, op, c, bmp=True, gif=True, expand=bool(expand_animations))
    if dt.name in ("uint8", "uint16"):
        return _tensor(_depth(img, dt.name))
    if dt.name == "float32":
        return convert_image_dtype(_tensor(img), dt)
    return convert_image_dtype(_tensor(_depth(img, "uint16")), dt)


def extract_jpeg_shape(contents: Any, output_type: Any = "int32",
                       name: str | None = None) -> Tensor:  # fmt: skip
    """[height, width, channels] of a JPEG, read from its header without decoding it."""
    op = "extract_jpeg_shape"
    data = _contents(contents, op)
    dt = dtypes.as_dtype(output_type)
    if dt.name not in ("int32", "int64"):
        raise TypeError(f"{op}: output_type must be int32 or int64, got {dt.name}.")
    if _format(data) != _JPEG:
        raise _err(op, f"{op}: Invalid JPEG data, size {len(data)}.")
    im = _open(data, op, _JPEG)
    comps = {"L": 1, "RGB": 3, "YCbCr": 3, "CMYK": 4}.get(im.mode, len(im.getbands()))
    return convert_to_tensor(np.asarray([im.size[1], im.size[0], comps], dtype=dt.np))


def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """Whether each string starts like a JPEG (FF D8 FF); false positives are possible.

    >>> import layerflow as tf
    >>> bool(tf.io.is_jpeg(tf.io.encode_jpeg(tf.zeros((1, 1, 1), tf.uint8))))
    True
    """
    arr = _strings(contents, "is_jpeg")
    out = np.vectorize(lambda s: bytes(s)[:3] == b"\xff\xd8\xff", otypes=[bool])(arr) if arr.size \
        else np.zeros(arr.shape, bool)  # fmt: skip
    return convert_to_tensor(np.asarray(out, dtype=bool))
