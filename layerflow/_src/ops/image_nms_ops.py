"""`tf.image` non-maximum suppression: `non_max_suppression` (+ `_with_scores`, soft-NMS),
`non_max_suppression_overlaps`, `non_max_suppression_padded` and
`combined_non_max_suppression`, each following TF's CPU kernel (or, for the padded variant,
TF's tiled Python algorithm) step for step, so the selected indices and scores are TF's.

Selection is a host-side loop over candidates in score order (ties: lower index first); the
per-candidate similarities are computed vectorized against the boxes selected so far. None of
these ops has a gradient in TF, and none has one here.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import constant

__all__ = [
    "combined_non_max_suppression",
    "non_max_suppression",
    "non_max_suppression_overlaps",
    "non_max_suppression_padded",
    "non_max_suppression_with_scores",
]

F32 = np.float32


def _host(value: Any, dtype: Any = None) -> np.ndarray:
    arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    return arr if dtype is None else arr.astype(dtype)


def _scalar(value: Any, what: str, opname: str) -> float:
    arr = _host(value)
    if arr.ndim != 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what} must be 0-D, got shape {list(arr.shape)}."
        )
    return float(arr)


def _max_output(value: Any, opname: str) -> int:
    size = _scalar(value, "max_output_size", opname)
    if size < 0 or not float(size).is_integer():
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: max_output_size must be a non-negative int, got {size}."
        )
    return int(size)


def _boxes_scores(boxes: Any, scores: Any, opname: str) -> tuple:
    b, s = _host(boxes), _host(scores)
    if b.ndim != 2 or b.shape[1] != 4:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: boxes must be [num_boxes, 4], got shape {list(b.shape)}."
        )
    if s.ndim != 1 or s.shape[0] != b.shape[0]:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: scores must be [num_boxes] = [{b.shape[0]}], got shape "
            f"{list(s.shape)}.",
        )  # fmt: skip
    return b.astype(F32), s


def _iou_threshold(value: Any, opname: str) -> float:
    thr = _scalar(value, "iou_threshold", opname)
    if not 0.0 <= thr <= 1.0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: iou_threshold must be in [0, 1], got {thr}."
        )
    return thr


def _canonical(b: np.ndarray) -> tuple:
    y0, x0 = np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3])
    y1, x1 = np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3])
    return y0, x0, y1, x1, (y1 - y0) * (x1 - x0)


def _iou_rows(b: np.ndarray, i: int, js: Any) -> np.ndarray:
    """TF's IOU of box i against boxes js (corners in either order; empty boxes give 0)."""
    y0, x0, y1, x1, area = _canonical(b[np.r_[[i], js]])
    iy = np.maximum(np.minimum(y1[0], y1[1:]) - np.maximum(y0[0], y0[1:]), F32(0))
    ix = np.maximum(np.minimum(x1[0], x1[1:]) - np.maximum(x0[0], x0[1:]), F32(0))
    inter = (iy * ix).astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[0] + area[1:] - inter)
    return np.where((area[0] <= 0) | (area[1:] <= 0), F32(0), iou).astype(F32)


def _greedy(sim: Any, scores: np.ndarray, max_out: int, thr: float, score_thr: float,
            sigma: float) -> tuple:  # fmt: skip
    """TF's `DoNonMaxSuppressionOp`: (selected indices, their possibly soft-suppressed scores)."""
    dt = scores.dtype.type
    thr_t, score_thr_t = dt(thr), dt(score_thr)
    soft = sigma > 0
    scale = dt(-0.5 / sigma) if soft else dt(0)
    heap = [(-float(scores[i]), i, 0) for i in range(len(scores)) if scores[i] > score_thr_t]
    heapq.heapify(heap)
    selected: list[int] = []
    sel_scores: list[Any] = []
    while len(selected) < max_out and heap:
        neg, i, begin = heapq.heappop(heap)
        original = score = dt(-neg)
        hard = False
        if begin < len(selected):
            sims = sim(i, selected[begin:])[::-1].astype(dt)  # newest first
            for s_ in sims:
                weight = dt(math.exp(float(scale * s_ * s_))) if soft or s_ <= thr_t else dt(0)
                score = dt(score * weight)
                if not soft and s_ > thr_t:
                    hard = True
                    break
                if score <= score_thr_t:
                    break
        if hard:
            continue
        if score == original:
            selected.append(i)
            sel_scores.append(score)
        elif score > score_thr_t:
            heapq.heappush(heap, (-float(score), i, len(selected)))
    return np.asarray(selected, np.int32), np.asarray(sel_scores, scores.dtype)


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: float = 0.5,
                        score_threshold: float = float("-inf"),
                        name: str | None = None) -> Any:  # fmt: skip
    """Greedily select up to `max_output_size` boxes ([y1, x1, y2, x2], corners in either
    order) by descending score, dropping any box whose IoU with a selected one exceeds
    `iou_threshold` and any box scoring at most `score_threshold`. Returns int32 indices.

    >>> import layerflow as tf
    >>> boxes = [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]
    >>> tf.image.non_max_suppression(boxes, [0.9, 0.8, 0.7], 3).numpy()
    array([0, 2], dtype=int32)
    """
    op = "non_max_suppression"
    b, s = _boxes_scores(boxes, scores, op)
    max_out = _max_output(max_output_size, op)
    thr = _iou_threshold(iou_threshold, op)
    score_thr = _scalar(score_threshold, "score_threshold", op)
    idx, _ = _greedy(lambda i, js: _iou_rows(b, i, js), s.astype(F32), max_out, thr, score_thr, 0.0)
    return constant(idx)


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any,
                                    iou_threshold: float = 0.5,
                                    score_threshold: float = float("-inf"),
                                    soft_nms_sigma: float = 0.0,
                                    name: str | None = None) -> tuple:  # fmt: skip
    """`non_max_suppression` returning `(indices, scores)`; with `soft_nms_sigma` > 0 it is
    Soft-NMS (Bodla et al.): overlapping boxes are down-weighted by exp(-IoU^2 / (2 sigma))
    instead of removed, and the returned scores are the down-weighted ones.

    >>> import layerflow as tf
    >>> boxes = [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]
    >>> i, s = tf.image.non_max_suppression_with_scores(boxes, [0.9, 0.8, 0.7], 3,
    ...                                                 soft_nms_sigma=0.5)
    >>> i.numpy()
    array([0, 2, 1], dtype=int32)
    """
    op = "non_max_suppression_with_scores"
    b, s = _boxes_scores(boxes, scores, op)
    if s.dtype not in (np.float16, np.float32):
        s = s.astype(F32)
    sigma = _scalar(soft_nms_sigma, "soft_nms_sigma", op)
    if sigma < 0:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: soft_nms_sigma must be non-negative, got {sigma}."
        )
    idx, sc = _greedy(lambda i, js: _iou_rows(b, i, js), s, _max_output(max_output_size, op),
                      _iou_threshold(iou_threshold, op),
                      _scalar(score_threshold, "score_threshold", op), sigma)  # fmt: skip
    return constant(idx), constant(sc)


def non_max_suppression_overlaps(overlaps: Any, scores: Any, max_output_size: Any,
                                 overlap_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"),
                                 name: str | None = None) -> Any:  # fmt: skip
    """`non_max_suppression` with a precomputed [num_boxes, num_boxes] `overlaps` matrix in
    place of IoU: box i is dropped when overlaps[i, j] > `overlap_threshold` for a selected j.

    >>> import layerflow as tf
    >>> ov = [[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]]
    >>> tf.image.non_max_suppression_overlaps(ov, [0.9, 0.8, 0.7], 3).numpy()
    array([0, 2], dtype=int32)
    """
    op = "non_max_suppression_overlaps"
    ov = _host(overlaps, F32)
    if ov.ndim != 2 or ov.shape[0] != ov.shape[1]:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: overlaps must be a square matrix, got shape {list(ov.shape)}."
        )
    s = _host(scores, F32)
    if s.shape != (ov.shape[0],):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: scores must be [{ov.shape[0]}], got shape {list(s.shape)}."
        )
    idx, _ = _greedy(lambda i, js: ov[i, js], s, _max_output(max_output_size, op),
                     _scalar(overlap_threshold, "overlap_threshold", op),
                     _scalar(score_threshold, "score_threshold", op), 0.0)  # fmt: skip
    return constant(idx)


# --- non_max_suppression_padded: TF's tiled algorithm --------------------------------------


def _bbox_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of `a` [B, Ta, 4] with every box of `b` [B, Tb, 4] (canonical corners,
    TF's 1e-8 in the union): [B, Ta, Tb]."""
    ay0, ax0, ay1, ax1 = (a[..., k : k + 1] for k in range(4))
    by0, bx0, by1, bx1 = (np.swapaxes(b[..., k : k + 1], 1, 2) for k in range(4))
    inter = np.maximum(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), F32(0)) * np.maximum(
        np.minimum(ay1, by1) - np.maximum(ay0, by0), F32(0)
    )
    a_area = (ay1 - ay0) * (ax1 - ax0)
    b_area = (by1 - by0) * (bx1 - bx0)
    return (inter / (a_area + b_area - inter + F32(1e-8))).astype(F32)


def _suppress_tile(boxes: np.ndarray, thr: F32, idx: int, tile: int) -> np.ndarray:
    box_slice = boxes[:, idx * tile : (idx + 1) * tile].copy()
    for inner in range(idx):
        iou = _bbox_overlap(boxes[:, inner * tile : (inner + 1) * tile], box_slice)
        box_slice *= np.all(iou < thr, axis=1)[..., None].astype(F32)
    iou = _bbox_overlap(box_slice, box_slice)
    upper = np.arange(tile)[None, :] > np.arange(tile)[:, None]
    iou = iou * (upper[None] & (iou >= thr)).astype(F32)
    iou_sum = iou.sum(axis=(1, 2), dtype=F32)
    while True:
        can_suppress = (iou.max(axis=1) < thr).astype(F32)[:, :, None]
        iou = ((can_suppress * iou).max(axis=1) < thr).astype(F32)[:, :, None] * iou
        new_sum = iou.sum(axis=(1, 2), dtype=F32)
        if not np.any(iou_sum - new_sum > thr):
            break
        iou_sum = new_sum
    suppressed = iou.sum(axis=1) > 0
    return box_slice * (F32(1) - suppressed.astype(F32))[..., None]


def non_max_suppression_padded(boxes: Any, scores: Any, max_output_size: Any,
                               iou_threshold: float = 0.5,
                               score_threshold: float = float("-inf"),
                               pad_to_max_output_size: bool = False, name: str | None = None,
                               sorted_input: bool = False, canonicalized_coordinates: bool = False,
                               tile_size: int = 512) -> tuple:  # fmt: skip
    """Batched greedy NMS with a fixed-size result, as TF's tiled algorithm (boxes [..., N, 4],
    scores [..., N]): `(indices, num_valid)`. Boxes with an IoU >= `iou_threshold` suppress
    each other; boxes scoring at most `score_threshold` and boxes with no positive coordinate
    are never selected. With `pad_to_max_output_size` the indices are [..., max_output_size]
    (zeros after `num_valid`); without it (unbatched input only) the first `num_valid`.

    >>> import layerflow as tf
    >>> boxes = tf.constant([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]])
    >>> i, n = tf.image.non_max_suppression_padded(boxes, tf.constant([0.9, 0.8, 0.7]), 3,
    ...                                            pad_to_max_output_size=True)
    >>> i.numpy(), int(n)
    (array([0, 2, 0], dtype=int32), 2)
    """
    op = "non_max_suppression_padded"
    b, s = _host(boxes, F32), _host(scores, F32)
    if b.ndim < 2 or b.shape[-1] != 4 or s.shape != b.shape[:-1]:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: boxes must be [..., num_boxes, 4] and scores [..., num_boxes]; "
            f"got {list(b.shape)} and {list(s.shape)}.",
        )  # fmt: skip
    if not pad_to_max_output_size and b.ndim > 2:
        raise ValueError(
            f"{op}: 'pad_to_max_output_size' (value {pad_to_max_output_size}) must be True for "
            "batched input."
        )
    max_out = _max_output(max_output_size, op)
    thr = F32(_scalar(iou_threshold, "iou_threshold", op))
    score_thr = _scalar(score_threshold, "score_threshold", op)
    tile = int(tile_size)
    batch_dims, n = b.shape[:-2], b.shape[-2]
    b, s = b.reshape(-1, n, 4).copy(), s.reshape(-1, n).copy()
    bs = b.shape[0]
    if score_thr != float("-inf"):
        keep = (s > F32(score_thr)).astype(F32)
        s, b = s * keep, b * keep[..., None]
    if not canonicalized_coordinates and n and bs:
        # TF decides the corner order from the very first box and applies it to all.
        if not b[0, 0, 0] <= b[0, 0, 2]:
            b[..., [0, 2]] = b[..., [2, 0]]
        if not b[0, 0, 1] <= b[0, 0, 3]:
            b[..., [1, 3]] = b[..., [3, 1]]
    if not sorted_input:
        order = np.argsort(-s, axis=1, kind="stable")
        s = np.take_along_axis(s, order, 1)
        b = np.take_along_axis(b, order[..., None], 1)
    else:
        order = np.zeros_like(s, dtype=np.int64)
    padded_n = math.ceil(max(n, max_out) / tile) * tile
    b = np.pad(b, [[0, 0], [0, padded_n - n], [0, 0]])
    out_size = np.zeros(bs, np.int32)
    idx = 0
    while bs and out_size.min() < max_out and idx < padded_n // tile:
        b[:, idx * tile : (idx + 1) * tile] = _suppress_tile(b, thr, idx, tile)
        out_size += np.any(b[:, idx * tile : (idx + 1) * tile] > 0, axis=2).sum(axis=1)
        idx += 1
    num_valid = np.minimum(out_size, max_out).astype(np.int32)
    chosen = np.any(b > 0, axis=2) * np.arange(padded_n, 0, -1)[None]
    top = -np.sort(-chosen, axis=1, kind="stable")[:, :max_out]
    sel = np.minimum(padded_n - top, n - 1)
    if not sorted_input:
        sel = np.take_along_axis(order, np.maximum(sel, 0), 1)
    sel = np.where(np.arange(max_out)[None] < num_valid[:, None], sel, 0).astype(np.int32)
    num_valid = num_valid.reshape(batch_dims)
    if not pad_to_max_output_size:
        return constant(sel[0, : int(num_valid)]), constant(num_valid)
    return constant(sel.reshape(*batch_dims, max_out)), constant(num_valid)


# --- combined_non_max_suppression ---------------------------------------------------------


def combined_non_max_suppression(boxes: Any, scores: Any, max_output_size_per_class: int,
                                 max_total_size: int, iou_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"),
                                 pad_per_class: bool = False, clip_boxes: bool = True,
                                 name: str | None = None) -> tuple:  # fmt: skip
    """Per-class greedy NMS over a batch, then the best `max_total_size` detections of all
    classes: boxes [B, N, q, 4] (q = 1 shares boxes across classes, or q = num_classes),
    scores [B, N, num_classes]. Returns `(nmsed_boxes [B, K, 4], nmsed_scores [B, K],
    nmsed_classes [B, K] (float), valid_detections [B] (int32))`, K = `max_total_size` (or,
    with `pad_per_class`, min(max_total_size, max_output_size_per_class * num_classes)); boxes
    are clipped to [0, 1] with `clip_boxes`.

    >>> import layerflow as tf
    >>> boxes = tf.constant([[[[0, 0, 1, 1]], [[0, 0.1, 1, 1.1]]]])
    >>> scores = tf.constant([[[0.9, 0.1], [0.8, 0.7]]])
    >>> b, s, c, n = tf.image.combined_non_max_suppression(boxes, scores, 2, 3)
    >>> s.numpy(), c.numpy()
    (array([[0.9, 0.7, 0. ]], dtype=float32), array([[0., 1., 0.]], dtype=float32))
    >>> n.numpy()
    array([2], dtype=int32)
    """
    op = "combined_non_max_suppression"
    b, s = _host(boxes, F32), _host(scores, F32)
    if b.ndim != 4 or b.shape[-1] != 4 or s.ndim != 3 or s.shape[:2] != b.shape[:2]:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: boxes must be [batch, num_boxes, q, 4] and scores [batch, "
            f"num_boxes, num_classes]; got {list(b.shape)} and {list(s.shape)}.",
        )  # fmt: skip
    nbatch, n, q = b.shape[:3]
    ncls = s.shape[2]
    if q not in (1, ncls):
        raise errors.InvalidArgumentError(
            None, op, f"{op}: third dimension of boxes must be either 1 or num_classes "
            f"({ncls}), got {q}.",
        )  # fmt: skip
    per_class = int(_scalar(max_output_size_per_class, "max_output_size_per_class", op))
    total = int(_scalar(max_total_size, "max_total_size", op))
    if per_class <= 0 or total <= 0:
        raise errors.InvalidArgumentError(
            None, op, f"{op}: max_output_size_per_class and max_total_size must be > 0, got "
            f"{per_class} and {total}.",
        )  # fmt: skip
    thr = F32(_iou_threshold(iou_threshold, op))
    score_thr = F32(_scalar(score_threshold, "score_threshold", op))
    size_per_class = min(per_class, n)
    k = min(total, per_class * ncls) if pad_per_class else total
    out_b = np.zeros((nbatch, k, 4), F32)
    out_s = np.zeros((nbatch, k), F32)
    out_c = np.zeros((nbatch, k), F32)
    valid = np.zeros(nbatch, np.int32)
    for bi in range(nbatch):
        found = []  # (score, class, box) in class-major, selection order
        for c in range(ncls):
            cb = b[bi, :, c if q > 1 else 0]
            sc = s[bi, :, c]
            idx, _ = _greedy(lambda i, js, cb=cb: _iou_rows(cb, i, js), sc, size_per_class,
                             float(thr), float(score_thr), 0.0)  # fmt: skip
            found += [(sc[i], c, cb[i]) for i in idx]
        found.sort(key=lambda t: -t[0])
        found = found[: min(len(found), k)]
        valid[bi] = len(found)
        for j, (sc, c, box) in enumerate(found):
            out_b[bi, j] = np.clip(box, 0, 1) if clip_boxes else box
            out_s[bi, j], out_c[bi, j] = sc, c
    return constant(out_b), constant(out_s), constant(out_c), constant(valid)
