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
