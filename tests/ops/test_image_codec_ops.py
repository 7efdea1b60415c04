"""tf.io image codecs against real TensorFlow's decodings (fixtures/image.npz; the encoded inputs
in fixtures/image_inputs.npz were made with Pillow): PNG, GIF, BMP and WebP pixels exact, JPEG
within libjpeg's differences; untrusted bytes give InvalidArgumentError."""

import pathlib

import numpy as np
import pytest

import layerflow as tf

PIL = pytest.importorskip("PIL.Image")

HERE = pathlib.Path(__file__).parent / "fixtures"
F = np.load(HERE / "image.npz")
INPUTS = np.load(HERE / "image_inputs.npz")


def same(got, key):
    ref, got = F[key], np.asarray(got)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (key, got.shape, got.dtype)
    np.testing.assert_array_equal(got, ref, err_msg=key)


def near(got, key, max_diff=4, mean_diff=1.5):
    ref, got = F[key].astype(np.int64), np.asarray(got)
    assert got.shape == ref.shape and got.dtype == F[key].dtype, (key, got.shape, got.dtype)
    diff = np.abs(got.astype(np.int64) - ref)
    assert diff.max() <= max_diff and diff.mean() <= mean_diff, (key, diff.max(), diff.mean())


@pytest.mark.parametrize("key", [k for k in INPUTS.files if k.startswith("png")])
def test_png_decoding_matches_tf_exactly(key):
    data = INPUTS[key].tobytes()
    for c in (0, 1, 3, 4):
        got = tf.io.decode_png(data, channels=c).numpy()
        if c == 4 and key in ("png_1bit", "png_pal"):
            # TF fills the added alpha at the file's bit depth (1 or 15): layerflow gives 255.
            np.testing.assert_array_equal(got[..., :3], F[f"dec_{key}_c4"][..., :3])
            assert (got[..., 3] == 255).all()
            continue
        same(got, f"dec_{key}_c{c}")
    same(tf.io.decode_png(data, dtype=tf.uint16), f"dec_{key}_u16")
    same(tf.io.decode_image(data, channels=3), f"dec_{key}_c3")


@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_sixteen_bit_png_of_tf_decodes_exactly(c):
    data = F[f"png16_bytes_{c}"].tobytes()
    np.testing.assert_array_equal(tf.io.decode_png(data, dtype=tf.uint16), F["png16"][..., :c])
    same(tf.io.decode_png(data), f"png16_dec8_{c}")
    same(tf.io.decode_png(data, channels=1, dtype=tf.uint16), f"png16_dec_c1_{c}")


@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_encode_png_round_trips_and_batches(dtype, c):
    img = np.random.default_rng(c).integers(0, np.iinfo(dtype).max + 1, (2, 5, 7, c)).astype(dtype)
    for level in (-1, 0, 9):
        enc = tf.io.encode_png(img, compression=level)
        assert enc.shape == (2,) and enc.dtype == tf.string
        for i in range(2):
            np.testing.assert_array_equal(tf.io.decode_png(enc[i], dtype=dtype), img[i])
            with PIL.open(__import__("io").BytesIO(enc[i].numpy())) as im:  # a valid PNG for others
                assert im.size == (7, 5)
    smooth = F["smooth"]
    np.testing.assert_array_equal(tf.io.decode_png(F["png_bytes_smooth"].tobytes()), smooth)


def test_gif_bmp_webp_match_tf_exactly():
    for key in ("gif_still", "gif_anim", "gif_anim_dispose", "gif_trns_keep", "gif_trns_bg",
                "gif_trns_still"):  # fmt: skip
        data = INPUTS[key].tobytes()
        same(tf.io.decode_gif(data), f"dec_{key}")
        same(tf.io.decode_image(data), f"dec_{key}")
        same(tf.io.decode_image(data, expand_animations=False), f"dec_{key}_first")
    assert tf.io.decode_gif(INPUTS["gif_anim"].tobytes()).shape[0] == 4
    for key in ("bmp_rgb", "bmp_rgba", "bmp_l"):
        data = INPUTS[key].tobytes()
        for c in (0, 3, 4):
            same(tf.io.decode_bmp(data, channels=c), f"dec_{key}_c{c}")
    for key in ("webp_lossless", "webp_rgba"):
        same(tf.io.decode_webp(INPUTS[key].tobytes()), f"dec_{key}")
        assert tf.io.decode_image(INPUTS[key].tobytes(), expand_animations=False).shape.rank == 3


def test_jpeg_decoding_within_libjpeg_differences():
    jpg = F["jpeg_bytes"].tobytes()
    for c in (0, 1, 3):
        near(tf.io.decode_jpeg(jpg, channels=c), f"jpeg_dec_c{c}")
    for r in (2, 4, 8):
        near(tf.io.decode_jpeg(jpg, ratio=r, dct_method="INTEGER_ACCURATE"), f"jpeg_dec_r{r}")
    near(tf.io.decode_jpeg(F["jpeg_gray_bytes"].tobytes()), "jpeg_dec_gray")
    for r in (4, 8):  # an image smaller than the ratio scales in the DCT domain too
        near(tf.io.decode_jpeg(F["jpeg_tiny_bytes"].tobytes(), ratio=r), f"jpeg_tiny_r{r}", 2, 1)
    near(tf.io.decode_and_crop_jpeg(jpg, [3, 5, 10, 20]), "jpeg_crop")
    same(tf.io.extract_jpeg_shape(jpg), "jpeg_shape")
    assert tf.io.extract_jpeg_shape(jpg, tf.int64).dtype == tf.int64
    assert tf.io.decode_png(jpg).shape == (24, 40, 3)  # the decoders share formats, as TF's


def test_jpeg_encoding_options_decode_like_tf():
    smooth = F["smooth"]
    near(tf.io.decode_jpeg(tf.io.encode_jpeg(smooth, quality=50)), "jpeg_q50_dec")
    near(tf.io.decode_jpeg(tf.io.encode_jpeg(smooth, quality=90, chroma_downsampling=False)),
         "jpeg_444_dec")  # fmt: skip
    small = len(tf.io.encode_jpeg(smooth, quality=10).numpy())
    assert small < len(tf.io.encode_jpeg(smooth, quality=95).numpy())
    prog = tf.io.encode_jpeg(smooth, progressive=True, optimize_size=True).numpy()
    with PIL.open(__import__("io").BytesIO(prog)) as im:
        assert im.info.get("progressive") or im.info.get("progression")
    cm = tf.io.encode_jpeg(smooth, density_unit="cm", x_density=40, y_density=50).numpy()
    i = cm.find(b"JFIF\x00")
    assert cm[i + 7 : i + 12] == bytes([2, 0, 40, 0, 50])
    xmp = tf.io.encode_jpeg(smooth, xmp_metadata="<x:xmpmeta/>").numpy()
    with PIL.open(__import__("io").BytesIO(xmp)) as im:
        assert im.info["xmp"] == b"<x:xmpmeta/>"
    near(tf.io.decode_jpeg(xmp), "jpeg_dec_c0", 40, 10)
    gray = tf.io.encode_jpeg(smooth[..., :1], format="grayscale")
    assert tf.io.decode_jpeg(gray).shape == (24, 40, 1)
    near(tf.image.adjust_jpeg_quality(smooth, 60), "adjust_jpeg_quality")
    as_float = tf.image.adjust_jpeg_quality(smooth / np.float32(255), 60).numpy()
    np.testing.assert_allclose(as_float, F["adjust_jpeg_quality_f"], atol=4 / 255)


def test_decode_image_dtypes_and_is_jpeg():
    png = F["png_bytes_smooth"].tobytes()
    got = tf.io.decode_image(png, dtype=tf.float32)
    np.testing.assert_allclose(got, F["decode_image_f32"], atol=1e-7)
    same(tf.io.decode_image(png, dtype=tf.int32), "decode_image_i32")
    wide = tf.io.decode_image(png, dtype=tf.uint16).numpy()
    np.testing.assert_array_equal(wide, F["smooth"].astype(np.uint16) * 257)
    assert tf.io.is_jpeg(F["jpeg_bytes"].tobytes()).numpy()
    assert tf.io.is_jpeg([png, F["jpeg_bytes"].tobytes()]).numpy().tolist() == [False, True]
    assert tf.image.decode_png is tf.io.decode_png and tf.image.encode_jpeg is tf.io.encode_jpeg


BAD = {
    "unknown format": (b"hello world", "Unknown image file format"),
    "png header only": (b"\x89PNG\r\n\x1a\nxxxxxxxx", "invalid PNG data"),
    "jpeg header only": (b"\xff\xd8\xffxxxx", "invalid JPEG data"),
    "gif header only": (b"GIF89a\x01", "invalid GIF data"),
    "empty": (b"", "Unknown image file format"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_bytes_raise_invalid_argument(name):
    data, message = BAD[name]
    for fn in (tf.io.decode_image, tf.io.decode_png, tf.io.decode_jpeg):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            fn(data)


def test_truncated_and_corrupt_files_raise_and_never_crash():
    rng = np.random.default_rng(0)
    sources = [F["png_bytes_smooth"].tobytes(), F["jpeg_bytes"].tobytes(),
               INPUTS["gif_anim"].tobytes(), INPUTS["bmp_rgba"].tobytes(),
               INPUTS["webp_lossless"].tobytes()]  # fmt: skip
    for data in sources:
        for cut in (len(data) // 3, 2 * len(data) // 3):
            with pytest.raises(tf.errors.InvalidArgumentError):
                tf.io.decode_image(data[:cut])
        for _ in range(15):  # flipped bytes: an error or an image, never another exception
            buf = bytearray(data)
            for i in rng.integers(0, len(buf), 4):
                buf[i] ^= 0xFF
            try:
                tf.io.decode_image(bytes(buf))
            except tf.errors.InvalidArgumentError:
                pass
    partial = tf.io.decode_jpeg(F["jpeg_bytes"].tobytes()[:-200], try_recover_truncated=True)
    assert partial.shape == (24, 40, 3)


def test_pixel_limit_refuses_decompression_bombs(monkeypatch):
    big = tf.io.encode_png(np.zeros((300, 400, 1), np.uint8))  # 120000 pixels, a tiny file
    monkeypatch.setattr(PIL, "MAX_IMAGE_PIXELS", 100000)
    with pytest.raises(tf.errors.InvalidArgumentError, match="too large|MAX_IMAGE_PIXELS"):
        tf.io.decode_png(big)
    anim = INPUTS["gif_anim"].tobytes()  # 4 frames of 8x10: 320 pixels in all
    monkeypatch.setattr(PIL, "MAX_IMAGE_PIXELS", 200)
    with pytest.raises(tf.errors.InvalidArgumentError, match="4 frame"):
        tf.io.decode_gif(anim)
    monkeypatch.setattr(PIL, "MAX_IMAGE_PIXELS", 400)
    assert tf.io.decode_gif(anim).shape == (4, 8, 10, 3)


def test_argument_errors_as_tf():
    png = F["png_bytes_smooth"].tobytes()
    jpg = F["jpeg_bytes"].tobytes()
    cases = [
        (lambda: tf.io.decode_png(png, channels=2), "`channels` must be 0, 1, 3 or 4"),
        (lambda: tf.io.decode_jpeg(jpg, channels=4), "JPEG does not support 4 channels"),
        (lambda: tf.io.decode_jpeg(jpg, ratio=3), "ratio must be 1, 2, 4, or 8"),
        (lambda: tf.io.decode_bmp(png), "Trying to decode PNG format using decode_bmp"),
        (lambda: tf.io.decode_png(INPUTS["bmp_rgb"].tobytes()), "BMP format using a wrong op"),
        (lambda: tf.io.decode_png(INPUTS["gif_anim"].tobytes()), "Got 4 frames"),
        (
            lambda: tf.io.decode_image(INPUTS["gif_still"].tobytes(), channels=1),
            "channels must be 0 or 3 for GIF",
        ),
        (lambda: tf.io.decode_bmp(INPUTS["bmp_rgb"].tobytes(), channels=1), "0, 3 or 4 for BMP"),
        (lambda: tf.io.decode_png([png, png]), "must be scalar but got shape\\[2\\]"),
        (lambda: tf.io.decode_and_crop_jpeg(jpg, [20, 0, 10, 10]), "crop window"),
        (lambda: tf.io.decode_and_crop_jpeg(png, [0, 0, 1, 1]), "JPEG only, but detected PNG"),
        (lambda: tf.io.extract_jpeg_shape(png), "Invalid JPEG data"),
        (lambda: tf.io.encode_jpeg(np.zeros((2, 2, 4), np.uint8)), "1 or 3 channels"),
        (lambda: tf.io.encode_jpeg(np.zeros((2, 2, 2, 3), np.uint8)), "3-dimensional"),
        (
            lambda: tf.io.encode_jpeg(np.zeros((2, 2, 3), np.uint8), format="grayscale"),
            "format grayscale expects 1 channels",
        ),
        (
            lambda: tf.io.encode_jpeg(np.zeros((2, 2, 3), np.uint8), quality=101),
            "quality must be in \\[0,100\\]",
        ),
        (lambda: tf.io.encode_png(np.zeros((2, 2, 5), np.uint8)), "1, 2, 3, or 4 channels"),
        (
            lambda: tf.io.encode_png(np.zeros((2, 2, 3), np.uint8), compression=10),
            "compression should be in \\[-1,9\\]",
        ),
        (lambda: tf.io.encode_png(np.zeros((0, 2, 3), np.uint8)), "at least 1"),
        (
            lambda: tf.image.adjust_jpeg_quality(np.zeros((2, 4, 4, 3), np.uint8), 50),
            "3-dimensional",
        ),
    ]
    for fn, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            fn()
    with pytest.raises(TypeError, match="uint8 or uint16"):
        tf.io.encode_png(tf.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="must be less than `max_jpeg_quality`"):
        tf.image.random_jpeg_quality(np.zeros((2, 2, 3), np.uint8), 50, 50)
    with pytest.raises(ValueError, match="between 0 and 100"):
        tf.image.stateless_random_jpeg_quality(np.zeros((2, 2, 3), np.uint8), 0, 101, [1, 2])


def test_random_jpeg_quality_draws_and_stateless_repeats():
    smooth = F["smooth"]
    outs = {tf.image.random_jpeg_quality(smooth, 5, 95).numpy().tobytes() for _ in range(4)}
    assert len(outs) > 1
    a = tf.image.stateless_random_jpeg_quality(smooth, 5, 95, seed=[3, 4]).numpy()
    np.testing.assert_array_equal(a, tf.image.stateless_random_jpeg_quality(smooth, 5, 95, [3, 4]))


JXL = np.load(HERE / "jxl.npz")
JXL_FILES = [k for k in JXL.files if k.endswith(("_lossless", "_lossy"))]


@pytest.mark.parametrize("key", JXL_FILES)
def test_decode_jxl_matches_tf(key):
    pytest.importorskip("pillow_jxl")
    data = JXL[key].tobytes()
    # Lossless files decode exactly; lossy ones within a grey level of TF's (its libjxl differs).
    tol = 0 if key.endswith("_lossless") else 1
    for got, ref in ((tf.io.decode_jxl(data), JXL[f"{key}_tf"]),
                     (tf.image.decode_jxl(data), JXL[f"{key}_tf"]),
                     (tf.io.decode_image(data), JXL[f"{key}_tf_image"])):  # fmt: skip
        assert got.dtype == tf.uint8 and got.shape == ref.shape
        assert np.abs(got.numpy().astype(int) - ref).max() <= tol
    if key.endswith("_lossless"):  # lossless: the pixels that were encoded
        pixels = JXL[key.replace("_lossless", "_pixels")]
        np.testing.assert_array_equal(tf.io.decode_png(data).numpy().reshape(pixels.shape), pixels)


def test_decode_jxl_channels_and_errors_as_tf():
    pytest.importorskip("pillow_jxl")
    gray, rgb = JXL["L_lossless"].tobytes(), JXL["RGB_lossless"].tobytes()
    assert tf.io.decode_jxl(gray, channels=1).shape == (5, 7, 1)
    assert tf.io.decode_jxl(rgb, channels=3).shape == (6, 4, 3)
    for data, c in ((gray, 3), (rgb, 1), (rgb, 4)):  # TF converts no JPEG XL channels either
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not match"):
            tf.io.decode_jxl(data, channels=c)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be 0, 1, 3 or 4"):
        tf.io.decode_jxl(rgb, channels=2)
    with pytest.raises(TypeError, match="dtype must be uint8"):
        tf.io.decode_jxl(rgb, dtype=tf.uint16)
    for bad in (rgb[:10], b"\xff\x0a" + b"\x00" * 30):  # truncated, and a header of zeros
        with pytest.raises(tf.errors.InvalidArgumentError, match="decode_jxl"):
            tf.io.decode_jxl(bad)
    png = tf.io.encode_png(tf.zeros((2, 2, 3), tf.uint8))  # as TF, decode_jxl reads a PNG too
    assert tf.io.decode_jxl(png).shape == (2, 2, 3)


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="decode_nothing"):
        tf.io.decode_nothing  # noqa: B018
