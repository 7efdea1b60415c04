"""TF's string hashes bit for bit, against TF 2.21's values (fixtures/fingerprint.json)."""

import json
import os

import numpy as np

import layerflow as tf
from layerflow._src.ops import fingerprint

with open(os.path.join(os.path.dirname(__file__), "fixtures", "fingerprint.json")) as f:
    FX = json.load(f)
INPUTS = [bytes.fromhex(h) for h in FX["inputs_hex"]]
N = FX["num_buckets"]


def test_fingerprint64_matches_tf_for_every_length_class():
    # lengths 0..259 cover the 0-16, 17-32, 33-64 and multi-block (> 64) paths
    got = [fingerprint.fingerprint64(s) % N for s in INPUTS]
    assert got == FX["fast"]
    raw = [fingerprint.fingerprint64(s).to_bytes(8, "little").hex() for s in INPUTS]
    assert raw == FX["fingerprint_hex"]


def test_siphash_and_legacy_hash64_match_tf():
    key = tuple(FX["strong_key"])
    assert [fingerprint.siphash24(key, s) % N for s in INPUTS] == FX["strong"]
    assert [fingerprint.tf_hash64(s) % N for s in INPUTS] == FX["legacy"]


def test_public_hash_bucket_ops_and_fingerprint():
    t = tf.constant(np.array(INPUTS[:70], dtype=object))
    assert tf.strings.to_hash_bucket_fast(t, N).numpy().tolist() == FX["fast"][:70]
    got = tf.strings.to_hash_bucket_strong(t, N, FX["strong_key"]).numpy().tolist()
    assert got == FX["strong"][:70]
    assert tf.strings.to_hash_bucket(t, N).numpy().tolist() == FX["legacy"][:70]
    fp = tf.fingerprint(t).numpy()
    assert fp.dtype == np.uint8 and fp.shape == (70, 8)
    assert [bytes(r).hex() for r in fp] == FX["fingerprint_hex"][:70]


def test_fingerprint_cat64_chains_like_tf_sparse_cross_hashed():
    # tf.sparse.cross_hashed(num_buckets=0) in TF 2.21: hash_key 0xDECAFCAFFE chained with
    # FingerprintCat64 over the int64 values (strings: their Fingerprint64), mod INT64_MAX.
    key, big = 0xDECAFCAFFE, 2**63 - 1
    cat = fingerprint.fingerprint_cat64
    ints = [cat(cat(key, a & fingerprint.M), b & fingerprint.M) % big
            for a, b in [(1, 2), (7, -3), (123456789, 42)]]  # fmt: skip
    assert ints == [5036120653031601357, 4092990287231621682, 6989962619736730880]
    strs = [cat(cat(key, fingerprint.fingerprint64(s)), b & fingerprint.M) % big
            for s, b in [(b"x", 2), (b"hello", -3), (b"", 42)]]  # fmt: skip
    assert strs == [3987325992395097374, 210247054459064887, 419575989620662891]


def test_str_input_hashes_its_utf8_bytes():
    for text in ["", "hello", "héllo wörld " * 9]:
        data = text.encode("utf-8")
        assert fingerprint.fingerprint64(text) == fingerprint.fingerprint64(data)
        assert fingerprint.siphash24((3, 5), text) == fingerprint.siphash24((3, 5), data)
