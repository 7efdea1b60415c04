"""draw_bounding_boxes, (stateless_)sample_distorted_bounding_box and
generate_bounding_box_proposals."""

import numpy as np
import pytest
from image_b_fixtures import F, assert_close

import layerflow as tf

CANVAS, BOXES, COLORS = F["canvas"], F["dboxes"], F["dcolors"]


def test_draw_bounding_boxes_matches_tf():
    assert_close(tf.image.draw_bounding_boxes(CANVAS, BOXES, COLORS), "draw_colors", atol=0)
    out = tf.image.draw_bounding_boxes(CANVAS[..., :1], BOXES, COLORS[:1])
    assert_close(out, "draw_colors1", atol=0)
    assert_close(tf.image.draw_bounding_boxes(CANVAS, BOXES, None), "draw_default", atol=0)
    rgba = np.concatenate([CANVAS, CANVAS[..., :1]], -1)
    assert_close(tf.image.draw_bounding_boxes(rgba, BOXES, None), "draw_default4", atol=0)
    u8 = (CANVAS * 255).astype(np.uint8).astype(np.float32)
    assert_close(tf.image.draw_bounding_boxes(u8, BOXES, COLORS * 200), "draw_u8", atol=0)


def test_draw_bounding_boxes_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="channel depth"):
        tf.image.draw_bounding_boxes(np.zeros((2, 4, 4, 2), np.float32), BOXES)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 3 channels"):
        tf.image.draw_bounding_boxes(CANVAS, BOXES, [[1.0, 0.0]])


SEEDS = [(1, 2), (7, 11), (123, 0)]
OPTIONS = [{}, dict(min_object_covered=0.5, aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 0.9),
                    max_attempts=50)]  # fmt: skip


@pytest.mark.parametrize("i, seed", list(enumerate(SEEDS)))
@pytest.mark.parametrize("j, options", list(enumerate(OPTIONS)))
def test_stateless_sample_distorted_bounding_box_is_tfs(i, seed, j, options):
    begin, size, box = tf.image.stateless_sample_distorted_bounding_box(
        [40, 60, 3], F["sdb_boxes"], seed, **options
    )
    assert begin.dtype == tf.int32
    assert_close(np.concatenate([begin.numpy(), size.numpy()]), f"sdb_{i}_{j}", atol=0)
    assert_close(box, f"sdb_{i}_{j}_box", atol=1e-7)


def test_sample_distorted_bounding_box_constraints_and_seed():
    boxes = [[[0.2, 0.2, 0.6, 0.7]]]
    tf.random.set_seed(5)
    a = tf.image.sample_distorted_bounding_box([50, 80, 3], boxes, seed=4, area_range=(0.2, 0.6))
    tf.random.set_seed(5)
    b = tf.image.sample_distorted_bounding_box([50, 80, 3], boxes, seed=4, area_range=(0.2, 0.6))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    for s in range(20):
        begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
            [50, 80, 3], boxes, [s, 1], area_range=(0.2, 0.6), min_object_covered=0.3
        )
        (y, x, _), (h, w, _) = begin.numpy(), size.numpy()
        assert y + h <= 50 and x + w <= 80
        frac = h * w / 4000
        assert 0.2 <= frac <= 0.6 or (h, w) == (50, 80)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"must be in \[0.0, 1.0\]"):
        tf.image.stateless_sample_distorted_bounding_box([5, 5, 1], [[[0, 0, 2, 1]]], [1, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="use_image_if_no_bounding_boxes"):
        tf.image.stateless_sample_distorted_bounding_box([5, 5, 1], np.zeros((1, 0, 4)), [1, 1])
    whole = tf.image.stateless_sample_distorted_bounding_box(
        [5, 5, 1], np.zeros((1, 0, 4)), [1, 1], use_image_if_no_bounding_boxes=True
    )
    assert whole[1].numpy()[2] == -1


def test_generate_bounding_box_proposals():
    # 1 image, a 1x2 grid, 2 anchors per position; scores pick the order, deltas move boxes.
    scores = np.array([[[[0.9, 0.1], [0.8, 0.7]]]], np.float32)
    anchors = np.array([[0, 0, 10, 10], [0, 0, 4, 4]], np.float32)  # [A, 4], y1 x1 y2 x2
    deltas = np.zeros((1, 1, 2, 8), np.float32)
    deltas[0, 0, 1, :4] = [0.0, 1.0, 0.0, 0.0]  # position (0, 1), anchor 0: shift x by 1 width
    deltas[0, 0, 1, 4:] = [0.0, 0.0, np.log(2.0), np.log(2.0)]  # anchor 1: twice the size
    info = np.array([[30.0, 30.0, 1.0, 0.0, 0.0]], np.float32)
    rois, probs = tf.image.generate_bounding_box_proposals(
        scores, deltas, info, anchors, nms_threshold=0.5, min_size=5, post_nms_topn=4
    )
    # order by score: (0,0,a0)=0.9, (0,1,a0)=0.8, (0,1,a1)=0.7, (0,0,a1)=0.1 (side 4 < 5: gone)
    # (0,1,a1) is [-2, -2, 6, 6] clipped to [0, 0, 6, 6]: IoU 0.36 with the first box, kept.
    np.testing.assert_allclose(rois.numpy()[0], [[0, 0, 10, 10], [0, 10, 10, 20], [0, 0, 6, 6],
                                                 [0, 0, 0, 0]], atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(probs.numpy()[0], [0.9, 0.8, 0.7, 0.0])
    rois, _ = tf.image.generate_bounding_box_proposals(
        scores, deltas, info, anchors, nms_threshold=0.3, min_size=5, post_nms_topn=4
    )
    assert float(np.abs(rois.numpy()[0, 2]).sum()) == 0  # the [0, 0, 6, 6] box now suppressed
    with pytest.raises(tf.errors.InvalidArgumentError, match="nms_threshold"):
        tf.image.generate_bounding_box_proposals(scores, deltas, info, anchors, nms_threshold=2)
