"""`tf.image` bounding-box utilities: `draw_bounding_boxes`, `sample_distorted_bounding_box`
(and its stateless form, which draws TF's exact Philox stream, so a seed gives TF's crop), and
`generate_bounding_box_proposals` (Faster R-CNN's region proposals; in TF a GPU-only kernel,
followed here step for step on any device).

All of these run on the host (their outputs are integer crops, drawn pixels or selected boxes);
none has a gradient in TF, and none has one here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import philox, random_ops
from layerflow._src.ops.array_ops import constant
from layerflow._src.ops.image_nms_ops import _greedy, _host, _iou_rows
from layerflow._src.ops.math_ops import _as_tensor

__all__ = [
    "draw_bounding_boxes",
    "generate_bounding_box_proposals",
    "sample_distorted_bounding_box",
    "stateless_sample_distorted_bounding_box",
]

F32 = np.float32
_DEFAULT_COLORS = np.array(
    [[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1],
     [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]],
    F32,
)  # fmt: skip


def draw_bounding_boxes(
    images: Any, boxes: Any, colors: Any = None, name: str | None = None
) -> Any:
    """Draw the outlines of `boxes` ([batch, num_boxes, 4], normalized [y_min, x_min, y_max,
    x_max]) on `images` [batch, height, width, depth] (depth 1, 3 or 4), cycling through
    `colors` ([num_colors, >= depth]; TF's default table when None or empty).

    >>> import layerflow as tf
    >>> img = tf.zeros((1, 4, 4, 1))
    >>> out = tf.image.draw_bounding_boxes(img, [[[0.0, 0.0, 1.0, 1.0]]], [[1.0]])
    >>> out[0, :, :, 0].numpy()
    array([[1., 1., 1., 1.],
           [1., 0., 0., 1.],
           [1., 0., 0., 1.],
           [1., 1., 1., 1.]], dtype=float32)
    """
    op = "draw_bounding_boxes"
    x = _as_tensor(images)
    if x._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: the rank of the images should be 4, got shape {list(x.shape)}."
        )
    n, h, w, depth = (int(d) for d in x._data.shape)
    b = _host(boxes, F32)
    if b.ndim != 3 or b.shape[0] != n or b.shape[2] != 4:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: boxes must be [batch, num_boxes, 4] with batch {n}, got shape "
            f"{list(b.shape)}.",
        )  # fmt: skip
    if depth not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA); got "
            f"{depth}.",
        )  # fmt: skip
    table = None
    if colors is not None:
        table = _host(colors, F32)
        if table.ndim != 2 or table.shape[1] < depth:
            raise errors.InvalidArgumentError(
                None, op, f"{op}: colors must be a 2-D matrix with at least {depth} channels "
                f"(the image's depth), got shape {list(table.shape)}.",
            )  # fmt: skip
        table = table[:, :depth] if table.size else None
    if table is None:
        table = _DEFAULT_COLORS[:, :depth].copy()
        if depth == 1:
            table[:, 0] = 1
    canvas = np.array(x.numpy())
    for bi in range(n):
        for k in range(b.shape[1]):
            color = table[k % len(table)].astype(canvas.dtype)
            # int64(float * (size - 1)): truncation toward zero, as TF.
            r0, r1 = int(b[bi, k, 0] * F32(h - 1)), int(b[bi, k, 2] * F32(h - 1))
            c0, c1 = int(b[bi, k, 1] * F32(w - 1)), int(b[bi, k, 3] * F32(w - 1))
            if r0 > r1 or c0 > c1 or r0 >= h or r1 < 0 or c0 >= w or c1 < 0:
                continue  # inverted or entirely outside: not drawn
            rr0, rr1, cc0, cc1 = max(r0, 0), min(r1, h - 1), max(c0, 0), min(c1, w - 1)
            if r0 >= 0:
                canvas[bi, r0, cc0 : cc1 + 1] = color
            if r1 < h:
                canvas[bi, r1, cc0 : cc1 + 1] = color
            if c0 >= 0:
                canvas[bi, rr0 : rr1 + 1, c0] = color
            if c1 < w:
                canvas[bi, rr0 : rr1 + 1, c1] = color
    return Tensor(x._device.xp.asarray(canvas), x._device)


# --- sample_distorted_bounding_box ----------------------------------------------------------


class _SimplePhilox:
    """TF's `random::SimplePhilox` over a `PhiloxRandom(counter, key)`: 32-bit draws taken
    four at a time from consecutive Philox blocks."""

    def __init__(self, counter: int, key: int) -> None:
        self.counter, self.key = counter, key
        self.buffer: list[int] = []

    def rand32(self) -> int:
        if not self.buffer:
            self.buffer = [int(v) for v in philox.blocks(self.counter, self.key, 1)[0]]
            self.counter += 1
        return self.buffer.pop(0)

    def rand_float(self) -> F32:
        return F32(philox.uint32_to_float(np.array([self.rand32()], np.uint32))[0])

    def uniform(self, n: int) -> int:
        """An exactly uniform int in [0, n) (rejection of the low remainder, as TF)."""
        rem = ((2**32 - 1) % n + 1) % n
        while True:
            r = self.rand32()
            if r >= rem:
                return r % n


def _stateless_key(seed: np.ndarray) -> tuple:
    """TF's `GenerateKey` for stateless ops: (counter, key) of the Philox stream of `seed`."""
    s0, s1 = int(seed[0]) & (2**64 - 1), int(seed[1]) & (2**64 - 1)
    mix = philox.blocks(s0 | (s1 << 64), 0x02461E29 << 32 | 0x3EC8F720, 1)[0]
    key = int(mix[0]) | int(mix[1]) << 32
    counter = (int(mix[2]) | int(mix[3]) << 32) << 64
    return counter, key


def _lrint(v: float) -> int:
    return int(np.rint(F32(v)))


def _random_crop(width: int, height: int, min_area_frac: F32, max_area_frac: F32,
                 aspect: F32, rng: _SimplePhilox) -> tuple | None:  # fmt: skip
    """TF's `GenerateRandomCrop`: (x, y, w, h) or None when the constraints cannot be met."""
    if max_area_frac <= 0 or aspect <= 0 or min_area_frac > max_area_frac:
        return None
    min_area = F32(min_area_frac * F32(width) * F32(height))
    max_area = F32(max_area_frac * F32(width) * F32(height))
    crop_h = _lrint(np.sqrt(F32(min_area / aspect)))
    max_h = _lrint(np.sqrt(F32(max_area / aspect)))
    if _lrint(F32(max_h) * aspect) > width:
        max_h = int((width + 0.5 - 0.0000001) / float(aspect))
        if _lrint(F32(max_h) * aspect) > width:
            max_h -= 1
    max_h = min(max_h, height)
    crop_h = min(crop_h, max_h)
    if crop_h < max_h:
        crop_h += rng.uniform(max_h - crop_h + 1)
    crop_w = _lrint(F32(crop_h) * aspect)
    area = F32(crop_w * crop_h)
    if area < min_area:
        crop_h += 1
        crop_w = _lrint(F32(crop_h) * aspect)
        area = F32(crop_w * crop_h)
    if area > max_area:
        crop_h -= 1
        crop_w = _lrint(F32(crop_h) * aspect)
        area = F32(crop_w * crop_h)
    if (area < min_area or area > max_area or crop_w > width or crop_h > height or crop_w <= 0
            or crop_h <= 0):  # fmt: skip
        return None
    y = rng.uniform(height - crop_h) if crop_h < height else 0
    x = rng.uniform(width - crop_w) if crop_w < width else 0
    return x, y, crop_w, crop_h


def _covers(crop: tuple, boxes: list, min_covered: F32) -> bool:
    x, y, cw, ch = crop
    if cw * ch < 1:
        return False
    for bx0, by0, bx1, by1 in boxes:
        area = (by1 - by0) * (bx1 - bx0)
        if area < 1:
            continue
        ix0, iy0, ix1, iy1 = max(x, bx0), max(y, by0), min(x + cw, bx1), min(y + ch, by1)
        inter = 0 if ix0 > ix1 or iy0 > iy1 else (iy1 - iy0) * (ix1 - ix0)
        if F32(inter) / F32(area) >= min_covered:
            return True
    return False


def _pair(value: Any, default: tuple, what: str, opname: str) -> tuple:
    v = default if value is None else tuple(float(t) for t in _host(value).reshape(-1))
    if len(v) != 2:
        raise ValueError(f"{opname}: {what} must be two floats, got {value!r}.")
    return F32(v[0]), F32(v[1])


def _sample_box(opname: str, image_size: Any, bounding_boxes: Any, rng: _SimplePhilox,
                min_object_covered: Any, aspect_ratio_range: Any, area_range: Any,
                max_attempts: Any, use_image_if_no_bounding_boxes: Any) -> tuple:  # fmt: skip
    size = _host(image_size)
    if size.shape != (3,) or size.dtype.kind not in "iu":
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: image_size must be 1-D [height, width, channels] ints, "
            f"got {image_size!r}.",
        )  # fmt: skip
    height, width = int(size[0]), int(size[1])
    if height <= 0 or width <= 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: image height and width must be positive, got {size}."
        )
    b = _host(bounding_boxes, F32)
    if b.ndim != 3 or b.shape[-1] != 4:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: bounding_boxes must be [batch, N, 4], got shape "
            f"{list(b.shape)}.",
        )  # fmt: skip
    b = b.reshape(-1, 4)
    if ((b < 0) | (b > 1)).any():
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: all bounding box coordinates must be in [0.0, 1.0]."
        )
    rects = [(int(F32(r[1]) * F32(width)), int(F32(r[0]) * F32(height)),
              int(F32(r[3]) * F32(width)), int(F32(r[2]) * F32(height))) for r in b]  # fmt: skip
    if not rects:
        if not use_image_if_no_bounding_boxes:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: no bounding boxes provided as input. One must enable "
                "use_image_if_no_bounding_boxes if you wish to not provide any bounding boxes.",
            )  # fmt: skip
        rects = [(0, 0, width, height)]
    covered = F32(float(_host(min_object_covered)))
    if covered < 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: min_object_covered must be non-negative, got {covered}."
        )
    lo_ar, hi_ar = _pair(aspect_ratio_range, (0.75, 1.33), "aspect_ratio_range", opname)
    lo_area, hi_area = _pair(area_range, (0.05, 1.0), "area_range", opname)
    attempts = 100 if max_attempts is None else int(max_attempts)
    if attempts <= 0:
        raise ValueError(f"{opname}: max_attempts must be positive, got {attempts}.")
    crop = None
    for _ in range(attempts):
        aspect = F32(rng.rand_float() * (hi_ar - lo_ar) + lo_ar)
        cand = _random_crop(width, height, lo_area, hi_area, aspect, rng)
        if cand is not None and _covers(cand, rects, covered):
            crop = cand
            break
    x, y, cw, ch = crop if crop is not None else (0, 0, width, height)
    dt = size.dtype if isinstance(image_size, Tensor) else np.int32  # Python ints are int32
    begin = np.array([y, x, 0], dt)
    out_size = np.array([ch, cw, -1], dt)
    box = np.array([[[y / height, x / width, (y + ch) / height, (x + cw) / width]]], F32)
    return constant(begin), constant(out_size), constant(box)


def stateless_sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: Any,
                                            min_object_covered: float = 0.1,
                                            aspect_ratio_range: Any = None,
                                            area_range: Any = None, max_attempts: Any = None,
                                            use_image_if_no_bounding_boxes: Any = None,
                                            name: str | None = None) -> tuple:  # fmt: skip
    """A random crop of an image of `image_size` [height, width, channels] that covers at
    least `min_object_covered` of one of `bounding_boxes` ([batch, N, 4], normalized), with an
    aspect ratio in `aspect_ratio_range` and an area fraction in `area_range`
    (`max_attempts` tries, then the whole image). Returns `(begin, size, bboxes)` for
    `tf.slice` and `draw_bounding_boxes`. The same `seed` (shape [2]) gives the same crop as
    TF (its Philox stream is reproduced exactly).

    >>> import layerflow as tf
    >>> begin, size, box = tf.image.stateless_sample_distorted_bounding_box(
    ...     [40, 60, 3], [[[0.1, 0.2, 0.5, 0.6]]], seed=[1, 2])
    >>> begin.numpy(), size.numpy()
    (array([0, 3, 0], dtype=int32), array([39, 48, -1], dtype=int32))
    """
    op = "stateless_sample_distorted_bounding_box"
    s = _host(seed)
    if s.shape != (2,) or s.dtype.kind not in "iu":
        raise errors.InvalidArgumentError(
            None, op, f"{op}: seed must be an int tensor of shape [2], got {seed!r}."
        )
    rng = _SimplePhilox(*_stateless_key(s))
    return _sample_box(op, image_size, bounding_boxes, rng, min_object_covered,
                       aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes)  # fmt: skip


def sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: int = 0,
                                  min_object_covered: float = 0.1, aspect_ratio_range: Any = None,
                                  area_range: Any = None, max_attempts: Any = None,
                                  use_image_if_no_bounding_boxes: Any = None,
                                  name: str | None = None) -> tuple:  # fmt: skip
    """`stateless_sample_distorted_bounding_box` with a seed drawn from layerflow's random
    state (`tf.random.set_seed` and the op `seed` make it repeatable; the draws are
    layerflow's own, not TF's).

    >>> import layerflow as tf
    >>> begin, size, box = tf.image.sample_distorted_bounding_box(
    ...     [40, 60, 3], [[[0.1, 0.2, 0.5, 0.6]]], seed=3)
    >>> box.shape
    TensorShape([1, 1, 4])
    """
    gen = random_ops.generator(int(seed) if seed else None)
    pair = gen.integers(0, 2**31 - 1, size=2, dtype=np.int64)
    rng = _SimplePhilox(*_stateless_key(pair))
    return _sample_box("sample_distorted_bounding_box", image_size, bounding_boxes, rng,
                       min_object_covered, aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes)  # fmt: skip


# --- generate_bounding_box_proposals ---------------------------------------------------------


def generate_bounding_box_proposals(scores: Any, bbox_deltas: Any, image_info: Any, anchors: Any,
                                    nms_threshold: float = 0.7, pre_nms_topn: int = 6000,
                                    min_size: float = 16, post_nms_topn: int = 300,
                                    name: str | None = None) -> tuple:  # fmt: skip
    """Region proposals (Faster R-CNN, eq. 2 of arXiv:1506.01497), as TF's kernel: per image,
    the `pre_nms_topn` best-scoring anchors of `scores` [N, H, W, A] are decoded with
    `bbox_deltas` [N, H, W, 4A] ([dy, dx, dh, dw] per anchor; dh, dw clipped at
    log(1000 / 16)) against `anchors` ([H, W, 4A] per position, or [A, 4] shared by all
    positions; [y1, x1, y2, x2]), clipped to the image (`image_info` [N, 5]: height, width,
    scale, ...), boxes with a side below `min_size * scale` dropped, then greedy NMS at
    `nms_threshold`. Returns `(rois [N, post_nms_topn, 4], roi_probabilities [N,
    post_nms_topn])`, zero-padded.

    >>> import layerflow as tf
    >>> rois, probs = tf.image.generate_bounding_box_proposals(
    ...     tf.ones((1, 1, 1, 1)), tf.zeros((1, 1, 1, 4)), [[10.0, 10.0, 1.0, 0.0, 0.0]],
    ...     [[0.0, 0.0, 8.0, 8.0]], min_size=1, post_nms_topn=2)
    >>> rois.numpy()[0]
    array([[0., 0., 8., 8.],
           [0., 0., 0., 0.]], dtype=float32)
    """
    op = "generate_bounding_box_proposals"
    s, d = _host(scores, F32), _host(bbox_deltas, F32)
    info, anc = _host(image_info, F32), _host(anchors, F32)
    if s.ndim != 4 or d.ndim != 4:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: scores and bbox_deltas must be rank 4, got shapes "
            f"{list(s.shape)} and {list(d.shape)}.",
        )  # fmt: skip
    n, h, w, a = s.shape
    if d.shape != (n, h, w, 4 * a) or info.shape != (n, 5):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: expected bbox_deltas [{n}, {h}, {w}, {4 * a}] and image_info "
            f"[{n}, 5], got {list(d.shape)} and {list(info.shape)}.",
        )  # fmt: skip
    if anc.shape == (a, 4):
        anc = np.broadcast_to(anc, (h, w, a, 4))
    elif anc.size == h * w * a * 4 and anc.ndim == 3:
        anc = anc.reshape(h, w, a, 4)
    else:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: anchors must be [{h}, {w}, {4 * a}] or [{a}, 4], got "
            f"{list(anc.shape)}.",
        )  # fmt: skip
    thr = float(_host(nms_threshold))
    if not 0 <= thr <= 1:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: nms_threshold should be between 0 and 1, got {thr}."
        )
    pre, post = int(_host(pre_nms_topn)), int(post_nms_topn)
    if pre <= 0 or post <= 0:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: pre_nms_topn and post_nms_topn must be > 0, got {pre}, {post}."
        )
    clip = F32(math.log(1000.0 / 16.0))
    anc, d = anc.reshape(-1, 4), d.reshape(n, -1, 4)
    rois = np.zeros((n, post, 4), F32)
    probs = np.zeros((n, post), F32)
    for i in range(n):
        flat = s[i].reshape(-1)
        order = np.argsort(-flat, kind="stable")[: min(flat.size, pre)]
        y1, x1, y2, x2 = (anc[order, k] for k in range(4))
        dy, dx, dh, dw = (d[i, order, k] for k in range(4))
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
        bw, bh = x2 - x1, y2 - y1
        cx, cy = x1 + F32(0.5) * bw + bw * dx, y1 + F32(0.5) * bh + bh * dy
        pw, ph = bw * np.exp(dw), bh * np.exp(dh)
        img_h, img_w = info[i, 0], info[i, 1]
        x1 = np.clip(cx - F32(0.5) * pw, 0, img_w)
        x2 = np.clip(cx + F32(0.5) * pw, 0, img_w)
        y1 = np.clip(cy - F32(0.5) * ph, 0, img_h)
        y2 = np.clip(cy + F32(0.5) * ph, 0, img_h)
        keep = np.minimum(x2 - x1, y2 - y1) >= F32(min_size) * info[i, 2]
        boxes = np.stack([y1, x1, y2, x2], 1)[keep].astype(F32)
        sc = flat[order][keep]
        rank = np.arange(len(sc), 0, -1).astype(F32)  # already in score order
        idx, _ = _greedy(lambda j, js, bx=boxes: _iou_rows(bx, j, js), rank, post, thr, -np.inf, 0)
        rois[i, : len(idx)] = boxes[idx]
        probs[i, : len(idx)] = sc[idx]
    return constant(rois), constant(probs)
