"""tf.image non-max suppression variants against real TF 2.21."""

import numpy as np
import pytest
from image_b_fixtures import F, assert_close

import layerflow as tf

B, S = F["nms_boxes"], F["nms_scores"]
NINF = float("-inf")


@pytest.mark.parametrize("thr, st", [(0.5, NINF), (0.2, 0.3), (0.0, NINF), (0.7, 0.5)])
def test_non_max_suppression(thr, st):
    key = f"nms_{thr}_{st}"
    out = tf.image.non_max_suppression(B, S, 12, thr, st)
    assert out.dtype == tf.int32
    assert_close(out, key, atol=0)
    i, s = tf.image.non_max_suppression_with_scores(B, S, 12, thr, st)
    assert_close(i, key + "_ws_i", atol=0)
    assert_close(s, key + "_ws_s", atol=0)


@pytest.mark.parametrize("sigma, st", [(0.5, 0.0), (0.2, 0.1)])
def test_soft_nms(sigma, st):
    i, s = tf.image.non_max_suppression_with_scores(B, S, 20, 1.0, st, sigma)
    assert_close(i, f"soft_{sigma}_{st}_i", atol=0)
    assert_close(s, f"soft_{sigma}_{st}_s", rtol=1e-6, atol=1e-7)


def test_nms_overlaps_and_ties():
    assert_close(tf.image.non_max_suppression_overlaps(F["ov"], S, 10, 0.6, 0.2), "nms_ov", atol=0)
    # equal scores: the lower index first (TF's order)
    boxes = [[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5]]
    np.testing.assert_array_equal(tf.image.non_max_suppression(boxes, [0.5] * 3, 3), [0, 1, 2])


def test_nms_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"iou_threshold must be in \[0, 1\]"):
        tf.image.non_max_suppression(B, S, 3, 1.5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="boxes must be"):
        tf.image.non_max_suppression(B[:, :3], S, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="scores must be"):
        tf.image.non_max_suppression(B, S[:-1], 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_output_size"):
        tf.image.non_max_suppression(B, S, -1)


@pytest.mark.parametrize("pad", [False, True])
def test_nms_padded(pad):
    i, n = tf.image.non_max_suppression_padded(tf.constant(B), tf.constant(S), 12, 0.4, 0.1, pad)
    assert_close(i, f"nms_padded_{pad}_i", atol=0)
    assert_close(n, f"nms_padded_{pad}_n", atol=0)


def test_nms_padded_batched_tiles_and_canonical():
    i, n = tf.image.non_max_suppression_padded(
        F["nmsp_batch_boxes"], F["nmsp_batch_scores"], 7, 0.5, NINF, True, tile_size=8
    )
    assert i.shape == (1, 2, 7)
    assert_close(i, "nmsp_batch_i", atol=0)
    assert_close(n, "nmsp_batch_n", atol=0)
    i, n = tf.image.non_max_suppression_padded(
        B, S, 12, 0.4, canonicalized_coordinates=True, pad_to_max_output_size=True
    )
    assert_close(i, "nmsp_canon_i", atol=0)
    assert_close(n, "nmsp_canon_n", atol=0)
    with pytest.raises(ValueError, match="must be True for batched input"):
        tf.image.non_max_suppression_padded(F["nmsp_batch_boxes"], F["nmsp_batch_scores"], 7)


@pytest.mark.parametrize("q", [3, 1])
@pytest.mark.parametrize("pad, clip", [(False, True), (True, False), (True, True)])
def test_combined_nms(q, pad, clip):
    boxes, scores = F["cnms_boxes"][:, :, :q], F["cnms_scores"]
    out = tf.image.combined_non_max_suppression(boxes, scores, 4, 7, 0.3, 0.1, pad, clip)
    for name, value in zip("bscn", out):
        assert_close(value, f"cnms_{q}_{pad}_{clip}_{name}", atol=0)
    assert out[3].dtype == tf.int32 and out[2].dtype == tf.float32
