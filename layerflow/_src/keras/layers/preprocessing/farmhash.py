"""Bit-exact TensorFlow string hashes in pure Python: farmhash's `Fingerprint64`
(`farmhashna::Hash64`, used by `tf.strings.to_hash_bucket_fast`), SipHash-2-4 (used by
`to_hash_bucket_strong` with a two-word key) and `FingerprintCat64` (used by
`tf.sparse.cross_hashed`). All arithmetic is modulo 2**64."""

from __future__ import annotations

import struct

M = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F
K_MUL = 0x9DDFEA08EB382D69


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int = K_MUL) -> int:
    a = ((u ^ v) * mul) & M
    a ^= a >> 47
    b = ((v ^ a) * mul) & M
    b ^= b >> 47
    return (b * mul) & M


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = (K2 + n * 2) & M
        a = (_fetch64(s, 0) + K2) & M
        b = _fetch64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & M
        d = ((_rot(a, 25) + b) * mul) & M
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = (K2 + n * 2) & M
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & M, _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * K2) ^ (z * K0)) & M) * K2) & M
    return K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = (K2 + n * 2) & M
    a = (_fetch64(s, 0) * K1) & M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & M
    d = (_fetch64(s, n - 16) * K2) & M
    return _hash_len16(
        (_rot((a + b) & M, 43) + _rot(c, 30) + d) & M, (a + _rot((b + K2) & M, 18) + c) & M, mul
    )


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = (K2 + n * 2) & M
    a = (_fetch64(s, 0) * K2) & M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & M
    d = (_fetch64(s, n - 16) * K2) & M
    y = (_rot((a + b) & M, 43) + _rot(c, 30) + d) & M
    z = _hash_len16(y, (a + _rot((b + K2) & M, 18) + c) & M, mul)
    e = (_fetch64(s, 16) * mul) & M
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & M
    h = ((z + _fetch64(s, n - 24)) * mul) & M
    return _hash_len16(
        (_rot((e + f) & M, 43) + _rot(g, 30) + h) & M, (e + _rot((f + a) & M, 18) + g) & M, mul
    )


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & M
    b = _rot((b + a + z) & M, 21)
    c = a
    a = (a + x + y) & M
    b = (b + _rot(a, 44)) & M
    return (a + z) & M, (b + c) & M


def fingerprint64(data: bytes | str) -> int:
    """farmhash `Fingerprint64` of `data` (str is UTF-8 encoded), as an unsigned int.

    >>> fingerprint64(b"")
    11160318154034397263
    """
    s = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = seed
    y = (seed * K1 + 113) & M
    z = (_shift_mix((y * K2 + 113) & M) * K2) & M
    v = (0, 0)
    w = (0, 0)
    x = (x * K2 + _fetch64(s, 0)) & M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & M, 37) * K1) & M
        y = (_rot((y + v[1] + _fetch64(s, i + 48)) & M, 42) * K1) & M
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & M
        z = (_rot((z + w[0]) & M, 33) * K1) & M
        v = _weak32(s, i, (v[1] * K1) & M, (x + w[0]) & M)
        w = _weak32(s, i + 32, (z + w[1]) & M, (y + _fetch64(s, i + 16)) & M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = (K1 + ((z & 0xFF) << 1)) & M
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & M, w[1])
    v = ((v[0] + w[0]) & M, v[1])
    w = ((w[0] + v[0]) & M, w[1])
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & M, 37) * mul) & M
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & M, 42) * mul) & M
    x ^= (w[1] * 9) & M
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & M
    z = (_rot((z + w[0]) & M, 33) * mul) & M
    v = _weak32(s, i, (v[1] * mul) & M, (x + w[0]) & M)
    w = _weak32(s, i + 32, (z + w[1]) & M, (y + _fetch64(s, i + 16)) & M)
    z, x = x, z
    return _hash_len16(
        (_hash_len16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & M,
        (_hash_len16(v[1], w[1], mul) + x) & M,
        mul,
    )


def siphash24(key: tuple[int, int], data: bytes | str) -> int:
    """SipHash-2-4 of `data` with the 128-bit key given as two little-endian 64-bit words."""
    s = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    k0, k1 = key[0] & M, key[1] & M
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(v0: int, v1: int, v2: int, v3: int, n: int) -> tuple[int, int, int, int]:
        for _ in range(n):
            v0 = (v0 + v1) & M
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & M
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & M
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & M
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(s)
    tail = s[n - n % 8 :] + bytes(7 - n % 8) + bytes([n & 0xFF])
    for block in [s[i : i + 8] for i in range(0, n - n % 8, 8)] + [tail]:
        m = struct.unpack("<Q", block)[0]
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def _rotl(v: int, b: int) -> int:
    return ((v << b) | (v >> (64 - b))) & M


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's `FingerprintCat64`: combine two fingerprints (order matters)."""
    mul = 0xC6A4A7935BD1E995
    result = fp1 ^ mul
    result ^= (_shift_mix((fp2 * mul) & M) * mul) & M
    result = (result * mul) & M
    result = (_shift_mix(result) * mul) & M
    return _shift_mix(result)
