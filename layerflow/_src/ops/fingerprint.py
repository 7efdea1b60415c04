"""TF's string hashes, bit for bit: farmhash `Fingerprint64`, SipHash-2-4 and TF's `Hash64`.

- `fingerprint64(b)`: farmhash's `Fingerprint64` (= `farmhashna::Hash64`), what
  `tf.strings.to_hash_bucket_fast` and `tf.fingerprint` use; stable across platforms.
- `siphash24(key, b)`: SipHash-2-4 with the 128-bit key `(k0, k1)`, what
  `tf.strings.to_hash_bucket_strong` uses (`highwayhash::SipHash`).
- `fingerprint_cat64(fp1, fp2)`: farmhash's `FingerprintCat64`, how `tf.sparse.cross_hashed`
  (and Keras's `HashedCrossing`) chain the hashes of the crossed values.
- `tf_hash64(b)`: TF's legacy `Hash64` (`tensorflow/core/lib/hash/hash.cc`, MurmurHash64A with
  seed 0xDECAFCAFFE), what `tf.strings.to_hash_bucket` uses.

All are pure Python on unsigned 64-bit ints (masked with `M` after each step), fast enough for
vocabularies; tests check them against values computed by TF (tests/ops/fixtures/). The hashes
of strings take `bytes`, or `str` (encoded UTF-8, as TF stores it). This module is the one
implementation; Keras's Hashing and HashedCrossing layers import it.

>>> fingerprint64(b"hello") % 1000
296
"""

from __future__ import annotations

M = 0xFFFFFFFFFFFFFFFF  # 2**64 - 1: unsigned 64-bit wraparound (Keras masks salts with it)
_M = M
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _f64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 8], "little")


def _f32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 4], "little")


def _rot(v: int, k: int) -> int:
    return v if k == 0 else ((v >> k) | (v << (64 - k))) & _M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = _K2 + n * 2
        a = (_f64(s, 0) + _K2) & _M
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _f32(s, 0)
        return _len16((n + (a << 3)) & _M, _f32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _len17to32(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_f64(s, 0) * _K1) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * _K2) & _M
    return _len16(
        (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M,
        (a + _rot((b + _K2) & _M, 18) + c) & _M,
        mul,
    )


def _len33to64(s: bytes, n: int) -> int:
    mul = _K2 + n * 2
    a = (_f64(s, 0) * _K2) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * _K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _len16(y, (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)
    e = (_f64(s, 16) * mul) & _M
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & _M
    h = ((z + _f64(s, n - 24)) * mul) & _M
    return _len16(
        (_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M,
        (e + _rot((f + a) & _M, 18) + g) & _M,
        mul,
    )


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def _bytes(s: bytes | str) -> bytes:
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


def fingerprint64(s: bytes | str) -> int:
    """farmhash `Fingerprint64(s)` as an unsigned 64-bit int.

    >>> fingerprint64(b"")
    11160318154034397263
    """
    s = _bytes(s)
    n = len(s)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _f64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * _K1) & _M
        y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * _K1) & _M
        x ^= w1
        y = (y + v0 + _f64(s, i + 40)) & _M
        z = (_rot((z + w0) & _M, 33) * _K1) & _M
        v0, v1 = _weak32(s, i, (v1 * _K1) & _M, (x + w0) & _M)
        w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M
    y = (y + v0 * 9 + _f64(s, i + 40)) & _M
    z = (_rot((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak32(s, i, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
    z, x = x, z
    return _len16(
        (_len16(v0, w0, mul) + (_shift_mix(y) * _K0) + z) & _M,
        (_len16(v1, w1, mul) + x) & _M,
        mul,
    )


def siphash24(key: tuple[int, int], s: bytes | str) -> int:
    """SipHash-2-4 of `s` with the key words `(k0, k1)` (highwayhash's `SipHash`)."""
    s = _bytes(s)
    k0, k1 = key[0] & _M, key[1] & _M
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(v0: int, v1: int, v2: int, v3: int, k: int) -> tuple[int, int, int, int]:
        for _ in range(k):
            v0 = (v0 + v1) & _M
            v1 = _rot(v1, 51) ^ v0  # rotl(v1, 13)
            v0 = _rot(v0, 32)
            v2 = (v2 + v3) & _M
            v3 = _rot(v3, 48) ^ v2  # rotl(v3, 16)
            v0 = (v0 + v3) & _M
            v3 = _rot(v3, 43) ^ v0  # rotl(v3, 21)
            v2 = (v2 + v1) & _M
            v1 = _rot(v1, 47) ^ v2  # rotl(v1, 17)
            v2 = _rot(v2, 32)
        return v0, v1, v2, v3

    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _f64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(s[full:], "little")
    v3 ^= last
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """farmhash's `FingerprintCat64`: combine two 64-bit fingerprints (order matters)."""
    mul = 0xC6A4A7935BD1E995
    result = fp1 ^ mul
    result ^= (_shift_mix((fp2 * mul) & _M) * mul) & _M
    result = (result * mul) & _M
    result = (_shift_mix(result) * mul) & _M
    return _shift_mix(result)


def tf_hash64(s: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TF's `Hash64(s)` (MurmurHash64A, seed 0xDECAFCAFFE), behind `to_hash_bucket`."""
    m = 0xC6A4A7935BD1E995
    n = len(s)
    h = (seed ^ (n * m)) & _M
    full = n - n % 8
    for i in range(0, full, 8):
        k = (_f64(s, i) * m) & _M
        k ^= k >> 47
        k = (k * m) & _M
        h ^= k
        h = (h * m) & _M
    tail = s[full:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & _M
    h ^= h >> 47
    h = (h * m) & _M
    h ^= h >> 47
    return h
