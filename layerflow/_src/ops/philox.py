"""TF's Philox-4x32-10 counter-based generator and its sample-to-number conversions, bit for bit.

`blocks(counter, key, n)` returns the n 128-bit outputs (4 uint32 each) for counters
`counter, counter + 1, ...`, vectorized in NumPy. The conversions (`uint32_to_float`,
`box_muller_float`, ...) follow `tensorflow/core/lib/random/random_distributions.h`. TF's float32
Box-Muller calls glibc's `logf` and `sincosf`, which are not correctly rounded; NumPy's float32
versions differ from them too. So each is evaluated in float64 and rounded, and the few values
whose exact result lies near a rounding boundary (where glibc may round the other way) are
recomputed by glibc itself when it is there: `tf.random.Generator` draws exactly TF's numbers on
Linux, and within one float32 ulp of them elsewhere.

>>> blocks(1, 0, 1).dtype, blocks(1, 0, 3).shape
(dtype('uint32'), (3, 4))
"""

from __future__ import annotations

from typing import Any

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LOW32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)
MASK64 = (1 << 64) - 1


def blocks(counter: int, key: int, n: int, offsets: np.ndarray | None = None) -> np.ndarray:
    """Philox-4x32-10 of the 128-bit `counter + i` under the 64-bit `key`, for i < n (or for
    each i in `offsets`, a uint64 array): shape [n, 4] (or offsets.shape + [4])."""
    counter &= (1 << 128) - 1
    lo0, hi0 = counter & MASK64, counter >> 64
    i = np.arange(n, dtype=np.uint64) if offsets is None else offsets.astype(np.uint64)
    lo = np.uint64(lo0) + i  # wraps modulo 2**64
    hi = np.uint64(hi0) + (lo < np.uint64(lo0)).astype(np.uint64)
    c0, c1 = (lo & _LOW32).astype(np.uint32), (lo >> _32).astype(np.uint32)
    c2, c3 = (hi & _LOW32).astype(np.uint32), (hi >> _32).astype(np.uint32)
    k0, k1 = key & 0xFFFFFFFF, (key >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0 = _M0 * c0.astype(np.uint64)
        p1 = _M1 * c2.astype(np.uint64)
        c0, c1, c2, c3 = (
            (p1 >> _32).astype(np.uint32) ^ c1 ^ np.uint32(k0),
            (p1 & _LOW32).astype(np.uint32),
            (p0 >> _32).astype(np.uint32) ^ c3 ^ np.uint32(k1),
            (p0 & _LOW32).astype(np.uint32),
        )
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=-1)


def uint32_to_float(x: np.ndarray) -> np.ndarray:
    """[0, 1) from the low 23 bits: TF's Uint32ToFloat."""
    bits = (x & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)
    return bits.view(np.float32) - np.float32(1.0)


def uint16_to_half(x: np.ndarray) -> np.ndarray:
    """[0, 1) from the low 10 bits of each sample (the upper 16 bits are dropped)."""
    bits = ((x & np.uint32(0x3FF)) | np.uint32(15 << 10)).astype(np.uint16)
    return bits.view(np.float16) - np.float16(1.0)


def uint64_to_double(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """[0, 1) from 52 bits of two samples: TF's Uint64ToDouble."""
    man = ((x0 & np.uint32(0xFFFFF)).astype(np.uint64) << _32) | x1.astype(np.uint64)
    return ((np.uint64(1023) << np.uint64(52)) | man).view(np.float64) - 1.0


def _load_libm() -> dict[str, Any]:
    """glibc's logf/sinf/cosf/log/sin/cos (what TF calls), or {} where there is no glibc."""
    import ctypes
    import ctypes.util

    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    except OSError:
        return {}
    out = {}
    for name, ctype in (("logf", ctypes.c_float), ("sinf", ctypes.c_float),
                        ("cosf", ctypes.c_float), ("log", ctypes.c_double),
                        ("sin", ctypes.c_double), ("cos", ctypes.c_double)):  # fmt: skip
        fn = getattr(libm, name, None)
        if fn is None:
            return {}
        fn.restype, fn.argtypes = ctype, [ctype]
        out[name] = fn
    return out


_LIBM: dict[str, Any] = {}  # filled on first use (`_libm`), so importing costs nothing


def _libm() -> dict[str, Any]:
    if not _LIBM:
        _LIBM.update(_load_libm() or {"none": None})
    return _LIBM


# A value counts as "near a rounding boundary" when its exact result lies this many ulps or less
# from the midpoint between two representable values (glibc's logf errs by up to 0.82 ulp; its
# double functions by a hair over 0.5).
_HARD = {np.dtype(np.float32): 0.35, np.dtype(np.float64): 0.05}


def _libm_round(name: str, x: np.ndarray, exact: np.ndarray, dtype: type) -> np.ndarray:
    """`name(x)` in `dtype`: the correctly rounded `exact` (computed in higher precision), with
    glibc's own answer where the rounding is close."""
    out = exact.astype(dtype)
    fn = _libm().get(name)
    if fn is None or not out.size:
        return out
    wide = exact.dtype
    err = (exact - out.astype(wide)) / np.spacing(np.abs(out)).astype(wide)
    for i in np.flatnonzero(np.abs(err) > 0.5 - _HARD[out.dtype]):
        out.flat[i] = fn(float(x.flat[i]))  # type: ignore[operator]
    return out


def box_muller_float(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normals per sample pair, as TF's BoxMullerFloat computes them in float32."""
    f32 = np.float32
    u1 = np.maximum(uint32_to_float(x0), f32(1.0e-7))
    # `2.0f * M_PI * u` is a double product in C++, rounded to float once.
    v1 = (2.0 * np.pi * uint32_to_float(x1).astype(np.float64)).astype(f32)
    log_u1 = _libm_round("logf", u1, np.log(u1.astype(np.float64)), f32)
    u2 = np.sqrt((f32(-2.0) * log_u1).astype(np.float64)).astype(f32)
    v = v1.astype(np.float64)
    return _libm_round("sinf", v1, np.sin(v), f32) * u2, _libm_round(
        "cosf", v1, np.cos(v), f32
    ) * u2


def box_muller_double(x0: np.ndarray, x1: np.ndarray, x2: np.ndarray,
                      x3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    f64, wide = np.float64, np.longdouble
    u1 = np.maximum(uint64_to_double(x0, x1), 1.0e-34)
    v1 = 2.0 * np.pi * uint64_to_double(x2, x3)
    u2 = np.sqrt(-2.0 * _libm_round("log", u1, np.log(u1.astype(wide)), f64))
    v = v1.astype(wide)
    return _libm_round("sin", v1, np.sin(v), f64) * u2, _libm_round("cos", v1, np.cos(v), f64) * u2


def samples(counter: int, key: int, n: int) -> np.ndarray:
    """The first n uint32 samples of the stream starting at `counter` (4 per block)."""
    return blocks(counter, key, -(-n // 4)).reshape(-1)[:n]
