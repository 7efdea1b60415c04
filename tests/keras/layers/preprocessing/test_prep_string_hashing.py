"""Hashing / HashedCrossing of string tensors against tf_keras 2.21 (fixtures/) and farmhash."""

import json
import os

import numpy as np

import layerflow as tf
from layerflow._src.ops import fingerprint

L = tf.keras.layers
with open(os.path.join(os.path.dirname(__file__), "fixtures", "string_hashing_tf_keras.json")) as f:
    FIX = json.load(f)
X = [["a", "b", "héllo"], ["", "dog", "a"]]


def test_string_hashing_matches_tf_keras():
    np.testing.assert_array_equal(L.Hashing(7)(X).numpy(), FIX["fast"])
    np.testing.assert_array_equal(L.Hashing(7, salt=[133, 137])(X).numpy(), FIX["salt"])
    np.testing.assert_array_equal(L.Hashing(7, mask_value="")(X).numpy(), FIX["mask"])
    multi = L.Hashing(5, output_mode="multi_hot")(tf.constant(["a", "b", "c"]))
    np.testing.assert_array_equal(multi.numpy(), FIX["multi"])
    cross = L.HashedCrossing(11)((tf.constant(["a", "b", "c"]), tf.constant([1, 2, 3])))
    np.testing.assert_array_equal(cross.numpy(), FIX["cross"])


def test_string_hashing_is_fingerprint64_of_the_bytes():
    out = L.Hashing(1000)(tf.constant(["héllo"])).numpy()[0]
    assert out == fingerprint.fingerprint64("héllo".encode()) % 1000
