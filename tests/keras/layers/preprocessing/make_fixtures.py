"""Make `fixtures/preprocessing_tf.npz` with real TensorFlow (run with /work/peers/bin/python,
never from the test suite): tf.image.resize outputs, farmhash/SipHash buckets, tf_keras
preprocessing-layer outputs, compared against by the tests in this folder."""

import os
import sys

import numpy as np
import tensorflow as tf
import tf_keras as keras

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "preprocessing_tf.npz"
)
rng = np.random.default_rng(0)
out = {}
img = rng.standard_normal((2, 5, 7, 2)).astype("float32")
out["resize_input"] = img
SIZES = [(3, 4), (8, 11), (5, 3), (2, 9), (5, 7), (1, 1)]
METHODS = [
    "bilinear",
    "nearest",
    "bicubic",
    "area",
    "lanczos3",
    "lanczos5",
    "gaussian",
    "mitchellcubic",
]
for m in METHODS:
    for h, w in SIZES:
        out[f"resize_{m}_{h}x{w}"] = tf.image.resize(img, (h, w), method=m).numpy()
for m in ("bilinear", "nearest", "bicubic", "area"):
    for h, w in [(3, 4), (8, 5)]:
        out[f"resizing_crop_{m}_{h}x{w}"] = keras.layers.Resizing(
            h, w, interpolation=m, crop_to_aspect_ratio=True
        )(img).numpy()
for h, w in [(3, 4), (6, 9), (5, 3)]:
    out[f"center_crop_{h}x{w}"] = keras.layers.CenterCrop(h, w)(img).numpy()

# Hashing: decimal strings of ints (tf_keras's integer path) and strings of every length
# branch of farmhash's Hash64 (0-16, 17-32, 33-64, > 64 bytes).
ints = np.array(
    [0, 1, -1, 7, 42, 123456789, -987654321, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1],
    dtype=np.int64,
)
out["hash_ints"] = ints
strs = [
    ("abcdefghijklmnopqrstuvwxyz0123456789" * 5)[:n]
    for n in [
        0,
        1,
        2,
        3,
        4,
        5,
        7,
        8,
        9,
        15,
        16,
        17,
        24,
        31,
        32,
        33,
        48,
        63,
        64,
        65,
        100,
        128,
        129,
        180,
    ]
]
out["hash_strings"] = np.array(strs, dtype=object).astype("U")
big = 2**63 - 1
out["fast_strings"] = tf.strings.to_hash_bucket_fast(strs, big).numpy()
out["fast_ints"] = tf.strings.to_hash_bucket_fast(tf.as_string(ints), big).numpy()
out["strong_strings"] = tf.strings.to_hash_bucket_strong(strs, big, key=[133, 137]).numpy()
out["strong_ints"] = tf.strings.to_hash_bucket_strong(tf.as_string(ints), big, key=[7, 7]).numpy()
hx = np.array([[1, 2, 3], [42, -5, 0]], dtype=np.int64)
out["hashing_x"] = hx
out["hashing_int_7"] = keras.layers.Hashing(7)(hx).numpy()
out["hashing_mask_7"] = keras.layers.Hashing(7, mask_value=0)(hx).numpy()
out["hashing_salt_5"] = keras.layers.Hashing(5, salt=[133, 137])(hx).numpy()
out["hashing_multi_hot_4"] = keras.layers.Hashing(4, output_mode="multi_hot")(hx).numpy()
out["hashing_count_4"] = keras.layers.Hashing(4, output_mode="count")(hx).numpy()
a = np.array([1, 2, 3, 42, -7], dtype=np.int64)
b = np.array([4, 5, 6, 42, 100], dtype=np.int64)
out["cross_a"], out["cross_b"] = a, b
out["cross_int_5"] = keras.layers.HashedCrossing(5)((a, b)).numpy()
out["cross_one_hot_5"] = keras.layers.HashedCrossing(5, output_mode="one_hot")((a, b)).numpy()
out["cross_int_big"] = keras.layers.HashedCrossing(2**62)((a, b)).numpy()

# Discretization adapt (approximate quantiles).
d = rng.standard_normal(300).astype("float32")
out["disc_data"] = d
for nb in (2, 4, 7):
    layer = keras.layers.Discretization(num_bins=nb, epsilon=0.01)
    layer.adapt(d)
    out[f"disc_bins_{nb}"] = np.array(layer.bin_boundaries, np.float32)
layer = keras.layers.Discretization(num_bins=5, epsilon=0.01)
layer.adapt(tf.data.Dataset.from_tensor_slices(d.reshape(-1, 1)).batch(37))
out["disc_bins_ds_5"] = np.array(layer.bin_boundaries, np.float32)

# IntegerLookup tf_idf after adapt.
voc = np.array([[12, 1138, 42], [42, 1000, 36], [36, 12, 42]], dtype=np.int64)
il = keras.layers.IntegerLookup(output_mode="tf_idf")
il.adapt(voc)
out["il_data"] = voc
out["il_vocab"] = np.array(il.get_vocabulary(), np.int64)
out["il_idf"] = il(np.array([[12, 42, 42, 7]], np.int64)).numpy()

# ImageProjectiveTransformV3 (the kernel of RandomRotation/Zoom/Translation).
timg = rng.standard_normal((2, 5, 6, 2)).astype("float32")
ts = (
    rng.standard_normal((2, 8)) * [1, 0.3, 2, 0.3, 1, 2, 0.01, 0.01] + [1, 0, 0, 0, 1, 0, 0, 0]
).astype("float32")
out["transform_images"], out["transform_matrices"] = timg, ts
for fm in ("reflect", "wrap", "constant", "nearest"):
    for it in ("nearest", "bilinear"):
        out[f"transform_{fm}_{it}"] = tf.raw_ops.ImageProjectiveTransformV3(
            images=timg,
            transforms=ts,
            output_shape=[5, 6],
            fill_value=0.5,
            interpolation=it.upper(),
            fill_mode=fm.upper(),
        ).numpy()

np.savez_compressed(OUT, **out)
print("wrote", OUT, len(out), "arrays;", tf.__version__, keras.__version__, file=sys.stderr)
