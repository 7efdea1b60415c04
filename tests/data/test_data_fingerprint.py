"""Dataset.fingerprint: a uint64 scalar; equal for pipelines built the same way (also in a new
process), different when a source value, argument, seed or function changes; iterating never
changes it."""

import os
import subprocess
import sys

import numpy as np

import layerflow as tf

D = tf.data.Dataset
SCALE = 3.0


def _pipeline(data, scale=2.0, seed=1, batch=2):
    return (
        D.from_tensor_slices(({"x": np.asarray(data, np.float32)}, ["a", "b", "c", "d"]))
        .map(lambda f, s: (f["x"] * scale, s))
        .shuffle(4, seed=seed)
        .batch(batch)
    )


def test_fingerprint_is_a_uint64_scalar_equal_for_equal_pipelines():
    fp = _pipeline([1, 2, 3, 4]).fingerprint()
    assert fp.dtype == tf.uint64 and fp.shape == ()
    assert int(fp) == int(_pipeline([1, 2, 3, 4]).fingerprint())
    assert int(D.range(5).fingerprint()) == int(D.range(5).fingerprint())


def test_fingerprint_changes_with_what_determines_the_elements():
    base = int(_pipeline([1, 2, 3, 4]).fingerprint())
    others = [
        _pipeline([1, 2, 3, 5]),  # a source value
        _pipeline([1, 2, 3, 4], scale=3.0),  # a closure value
        _pipeline([1, 2, 3, 4], seed=2),  # the shuffle seed
        _pipeline([1, 2, 3, 4], batch=3),  # an argument
        _pipeline([1, 2, 3, 4]).prefetch(1).take(1),  # another node
    ]
    got = [int(o.fingerprint()) for o in others]
    assert base not in got and len(set(got)) == len(got)
    assert int(D.range(5).fingerprint()) != int(D.range(6).fingerprint())
    assert int(D.range(5, output_type=tf.int32).fingerprint()) != int(D.range(5).fingerprint())


def test_function_code_and_globals_count():
    ds = D.range(3)
    plus = int(ds.map(lambda x: x + 1).fingerprint())
    assert plus == int(ds.map(lambda x: x + 1).fingerprint())
    assert plus != int(ds.map(lambda x: x - 1).fingerprint())
    assert plus != int(ds.map(lambda x: x + 2).fingerprint())
    global SCALE
    before = int(ds.map(lambda x: tf.cast(x, tf.float32) * SCALE).fingerprint())
    SCALE = 4.0
    try:
        after = int(ds.map(lambda x: tf.cast(x, tf.float32) * SCALE).fingerprint())
    finally:
        SCALE = 3.0
    assert before != after


def test_iterating_does_not_change_the_fingerprint():
    ds = _pipeline([1, 2, 3, 4]).cache()
    fp = int(ds.fingerprint())
    for _ in range(2):  # reshuffles each pass and fills the cache
        list(ds)
    assert int(ds.fingerprint()) == fp


def test_generator_sources_hash_their_function():
    def gen():
        yield 1

    def other():
        yield 2

    spec = tf.TensorSpec([], tf.int32)
    a = D.from_generator(gen, output_signature=spec)
    assert int(a.fingerprint()) == int(D.from_generator(gen, output_signature=spec).fingerprint())
    assert int(a.fingerprint()) != int(D.from_generator(other, output_signature=spec).fingerprint())


def test_fingerprint_is_stable_across_processes():
    code = (
        "import layerflow as tf\n"
        "ds = tf.data.Dataset.from_tensor_slices([1.0, 2.0]).map(lambda x: x * 2.0).batch(2)\n"
        "print(int(ds.fingerprint()))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="random")
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       check=True).stdout.strip()
        for _ in range(2)
    ]  # fmt: skip
    assert runs[0] == runs[1] and runs[0].isdigit()
