"""Connectionist temporal classification: `ctc_loss` (dense labels) with its gradient, the
greedy and beam-search decoders, `collapse_repeated` and `ctc_unique_labels`.

The loss is the negative log of the probability, under per-frame softmaxes, of all alignments
that collapse to the label sequence: a forward-backward recursion in log space over the label
sequence with blanks interleaved. The same pass gives the gradient with respect to the logits,
softmax(logits) - posterior label occupancy, saved for the backward pass (a memo, recomputed
when a tape did not keep it). The decoders are host searches without gradients.

layerflow has no `SparseTensor` yet: the decoders return their sparse results as
`SparseTensorValue(indices, values, dense_shape)` (TF's field names and dtypes), and `ctc_loss`
takes dense labels only.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op, recording
from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import constant, transpose
from layerflow._src.ops.math_ops import _as_tensor

__all__ = [
    "SparseTensorValue",
    "collapse_repeated",
    "ctc_beam_search_decoder",
    "ctc_greedy_decoder",
    "ctc_loss",
    "ctc_unique_labels",
]

SparseTensorValue = collections.namedtuple(
    "SparseTensorValue", ["indices", "values", "dense_shape"]
)


def _host_ints(value: Any, what: str, opname: str) -> np.ndarray:
    if value is None:
        raise ValueError(f"{opname}: {what} is required for dense labels.")
    arr = np.asarray(backend.to_host(_as_tensor(value)._data))
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be integers, got {arr.dtype}.")
    return arr.astype(np.int64)


def _ctc_pass(xp: Any, logits: Any, labels: np.ndarray, lab_len: np.ndarray, log_len: np.ndarray,
              blank: int, need_grad: bool) -> tuple:  # fmt: skip
    """(loss [B], gradient [B, T, C] or None) for batch-major logits [B, T, C]."""
    b_, t_, c_ = logits.shape
    z = logits.astype(np.float64)
    logp = z - z.max(-1, keepdims=True)
    logp = logp - xp.log(xp.exp(logp).sum(-1, keepdims=True))
    s_ = 2 * labels.shape[1] + 1
    ext = np.full((b_, s_), blank, np.int64)
    ext[:, 1::2] = labels
    s_b = 2 * lab_len + 1
    valid = xp.asarray(np.arange(s_)[None] < s_b[:, None])
    allow2 = np.zeros((b_, s_), bool)
    allow2[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    allow2 = xp.asarray(allow2)
    lpe = xp.take_along_axis(logp, xp.asarray(np.broadcast_to(ext[:, None, :], (b_, t_, s_))), 2)
    neg = -np.inf
    col = xp.full((b_, 1), neg)
    alpha = xp.full((t_, b_, s_), neg)
    a = xp.full((b_, s_), neg)
    a[:, 0] = lpe[:, 0, 0]
    if s_ > 1:
        a[:, 1] = xp.where(xp.asarray(lab_len > 0), lpe[:, 0, 1], neg)
    alpha[0] = xp.where(valid, a, neg)
    active = xp.asarray(np.arange(t_)[:, None] < log_len[None, :])  # [T, B]
    for t in range(1, t_):
        prev = alpha[t - 1]
        s1 = xp.concatenate([col, prev[:, :-1]], 1)
        s2 = xp.where(allow2, xp.concatenate([col, col, prev[:, :-2]], 1)[:, :s_], neg)
        a = xp.logaddexp(xp.logaddexp(prev, s1), s2) + lpe[:, t]
        alpha[t] = xp.where(active[t][:, None], xp.where(valid, a, neg), prev)
    last = alpha[t_ - 1]
    rows = np.arange(b_)
    end1 = last[rows, s_b - 1]
    end2 = xp.where(xp.asarray(s_b >= 2), last[rows, np.maximum(s_b - 2, 0)], neg)
    log_prob = xp.logaddexp(end1, end2)
    loss = -log_prob
    if not need_grad:
        return loss, None
    beta = xp.full((t_, b_, s_), neg)
    init = np.full((b_, s_), neg)
    init[rows, s_b - 1] = 0.0
    init[rows[s_b >= 2], (s_b - 2)[s_b >= 2]] = 0.0
    init = xp.asarray(init)
    ends = xp.asarray(log_len - 1)
    for t in range(t_ - 1, -1, -1):
        cand = xp.full((b_, s_), neg)
        if t < t_ - 1:
            nxt = beta[t + 1] + lpe[:, t + 1]
            n1 = xp.concatenate([nxt[:, 1:], col], 1)
            n2 = xp.where(xp.concatenate([allow2[:, 2:], xp.zeros((b_, 2), bool)], 1)[:, :s_],
                          xp.concatenate([nxt[:, 2:], col, col], 1)[:, :s_], neg)  # fmt: skip
            cand = xp.logaddexp(xp.logaddexp(nxt, n1), n2)
        here = xp.where((ends == t)[:, None], init, xp.where((ends > t)[:, None], cand, neg))
        beta[t] = xp.where(valid, here, neg)
    finite = xp.isfinite(log_prob)
    gamma = xp.exp(alpha + beta - xp.where(finite, log_prob, 0.0)[None, :, None])  # [T, B, S]
    onehot = xp.asarray((ext[:, :, None] == np.arange(c_)[None, None, :]).astype(np.float64))
    occupancy = xp.einsum("tbs,bsc->btc", gamma, onehot)
    grad = xp.exp(logp) - occupancy
    keep = xp.transpose(active, (1, 0))[:, :, None] & finite[:, None, None]
    return loss, xp.where(keep, grad, 0.0)


@op("ctc_loss", 1, saves=True, grad_uses_out=False)
def _ctc(xp: Any, logits: Any, labels: Any, lab_len: Any, log_len: Any, blank: int) -> Any:
    loss, grad = _ctc_pass(xp, logits, labels, lab_len, log_len, blank, recording())
    dt = logits.dtype
    return loss.astype(dt), (None if grad is None else grad.astype(dt))


@_ctc.grad
def _(dy: Any, out: Any, logits: Any, labels: Any, lab_len: Any, log_len: Any, blank: int,
      saved: Any = None) -> Any:  # fmt: skip
    return (_ctc_grad(dy, logits, labels, lab_len, log_len, blank, saved),)


@op("ctc_loss_grad", 2, grad_uses_out=False)
def _ctc_grad(xp: Any, dy: Any, logits: Any, labels: Any, lab_len: Any, log_len: Any,
              blank: int, memo: Any = None) -> Any:  # fmt: skip
    """dy * d loss / d logits; `memo` is the forward's gradient, or None to recompute it.
    (No second derivative: this op has no gradient of its own, as in TF's CTC kernel.)"""
    if memo is None:
        memo = _ctc_pass(xp, logits, labels, lab_len, log_len, blank, True)[1].astype(logits.dtype)
    return dy[:, None, None] * memo


def ctc_loss(labels: Any, logits: Any, label_length: Any, logit_length: Any,
             logits_time_major: bool = True, unique: Any = None, blank_index: Any = None,
             name: str | None = None) -> Any:  # fmt: skip
    """The CTC loss of each batch element: -log p(labels | logits), summing over every
    alignment of the (dense, [batch, max_label_length]) labels to the logits ([frames, batch,
    classes], or [batch, frames, classes] with `logits_time_major=False`).

    `label_length` and `logit_length` ([batch]) give the real lengths; `blank_index` (default
    0, negative counts from the end) is the blank class. `unique` (from `ctc_unique_labels`) is
    an optimisation in TF and is accepted and ignored. An impossible alignment gives inf.

    >>> import layerflow as tf
    >>> logits = tf.zeros((3, 1, 2))    # 3 frames, uniform over {blank, 1}
    >>> float(tf.nn.ctc_loss([[1]], logits, [1], [3]))  # 6 of the 8 paths give "1"
    0.2876...
    """
    if hasattr(labels, "indices") and hasattr(labels, "dense_shape"):
        raise TypeError(
            "ctc_loss: SparseTensor labels are not supported yet; pass dense labels [batch, "
            "max_label_length] with label_length."
        )
    x = _as_tensor(logits)
    if x._data.ndim != 3 or x._data.dtype.kind != "f":
        raise errors.InvalidArgumentError(
            None, "ctc_loss", f"ctc_loss: logits must be a float tensor of rank 3, got "
            f"{x.dtype.name} of shape {tuple(x._data.shape)}.",
        )  # fmt: skip
    if logits_time_major:
        x = transpose(x, (1, 0, 2))
    b_, t_, c_ = (int(v) for v in x._data.shape)
    lab = _host_ints(labels, "labels", "ctc_loss")
    lab_len = _host_ints(label_length, "label_length", "ctc_loss").reshape(-1)
    log_len = _host_ints(logit_length, "logit_length", "ctc_loss").reshape(-1)
    if lab.ndim != 2 or lab.shape[0] != b_ or lab_len.shape != (b_,) or log_len.shape != (b_,):
        raise errors.InvalidArgumentError(
            None, "ctc_loss", f"ctc_loss: labels must be [batch={b_}, max_label_length] with "
            f"label_length and logit_length of shape [{b_}]; got {lab.shape}, {lab_len.shape} "
            f"and {log_len.shape}.",
        )  # fmt: skip
    if (lab_len < 0).any() or (lab_len > lab.shape[1]).any():
        raise errors.InvalidArgumentError(
            None, "ctc_loss", f"ctc_loss: label_length {lab_len.tolist()} must lie in "
            f"[0, {lab.shape[1]}].",
        )  # fmt: skip
    if (log_len < 1).any() or (log_len > t_).any():
        raise errors.InvalidArgumentError(
            None, "ctc_loss", f"ctc_loss: logit_length {log_len.tolist()} must lie in "
            f"[1, {t_}] (the number of frames).",
        )  # fmt: skip
    blank = 0 if blank_index is None else int(blank_index)
    blank = blank + c_ if blank < 0 else blank
    if not 0 <= blank < c_:
        raise ValueError(f"ctc_loss: blank_index {blank_index} is out of range for {c_} classes.")
    lab = np.where(np.arange(lab.shape[1])[None] < lab_len[:, None], lab, 0)
    used = lab[np.arange(lab.shape[1])[None] < lab_len[:, None]]
    if used.size and ((used < 0).any() or (used >= c_).any() or (used == blank).any()):
        raise errors.InvalidArgumentError(
            None, "ctc_loss", f"ctc_loss: labels must be classes in [0, {c_}) other than the "
            f"blank {blank}; got {sorted(set(used.tolist()))}.",
        )  # fmt: skip
    return _ctc(x, lab, lab_len, log_len, blank)


def _sparse(seqs: list[list[int]], batch: int) -> SparseTensorValue:
    idx = [[b, i] for b, s in enumerate(seqs) for i in range(len(s))]
    vals = [v for s in seqs for v in s]
    width = max((len(s) for s in seqs), default=0)
    return SparseTensorValue(
        constant(np.array(idx, np.int64).reshape(-1, 2)),
        constant(np.array(vals, np.int64)),
        constant(np.array([batch, width], np.int64)),
    )


def _decoder_inputs(inputs: Any, sequence_length: Any, opname: str) -> tuple:
    x = np.asarray(backend.to_host(_as_tensor(inputs)._data), np.float64)
    if x.ndim != 3:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: inputs must be [max_time, batch, classes], got {x.shape}."
        )
    lens = _host_ints(sequence_length, "sequence_length", opname).reshape(-1)
    if lens.shape != (x.shape[1],) or (lens < 0).any() or (lens > x.shape[0]).any():
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: sequence_length must be [{x.shape[1]}] values in "
            f"[0, {x.shape[0]}], got {lens.tolist()}.",
        )  # fmt: skip
    return x, lens


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True,
                       blank_index: Any = None) -> tuple:  # fmt: skip
    """Best-path decoding: the most likely class of each frame, repeats merged (unless a blank
    separates them, or `merge_repeated=False`), blanks removed. Returns `([decoded],
    neg_sum_logits)`: `decoded` a `SparseTensorValue` [batch, max_decoded_length] (int64) and
    `neg_sum_logits` [batch, 1], minus the sum of each frame's largest logit. `blank_index`
    defaults to the last class, as in TF.

    >>> import layerflow as tf
    >>> x = tf.constant([[[0., 5, 0]], [[0, 5, 0]], [[0, 0, 5]], [[5, 0, 0]]])
    >>> decoded, _ = tf.nn.ctc_greedy_decoder(x, [4])
    >>> decoded[0].values.numpy()
    array([1, 0])
    """
    x, lens = _decoder_inputs(inputs, sequence_length, "ctc_greedy_decoder")
    c_ = x.shape[2]
    blank = c_ - 1 if blank_index is None else int(blank_index)
    blank = blank + c_ if blank < 0 else blank
    best = x.argmax(-1)
    seqs, neg = [], []
    for b in range(x.shape[1]):
        out, prev = [], -1
        for t in range(lens[b]):
            k = int(best[t, b])
            if k != blank and not (merge_repeated and k == prev):
                out.append(k)
            prev = k
        seqs.append(out)
        neg.append(-x[: lens[b], b].max(-1).sum())
    dtype = _as_tensor(inputs)._data.dtype
    return [_sparse(seqs, x.shape[1])], constant(np.array(neg, dtype).reshape(-1, 1))


def _beam_search(lp: np.ndarray, blank: int, beam_width: int, top_paths: int) -> list:
    """CTC prefix beam search over log-probabilities [T, C]: the `top_paths` best labelings
    and their log-probabilities (summed over alignments, within the beam)."""
    beams: dict[tuple, tuple[float, float]] = {(): (0.0, -np.inf)}  # prefix -> (blank, label)
    for row in lp:
        new: dict[tuple, list[float]] = collections.defaultdict(lambda: [-np.inf, -np.inf])
        for prefix, (pb, pn) in beams.items():
            total = np.logaddexp(pb, pn)
            entry = new[prefix]
            entry[0] = np.logaddexp(entry[0], total + row[blank])
            for c in range(len(row)):
                if c == blank:
                    continue
                ext = new[prefix + (c,)]
                if prefix and prefix[-1] == c:
                    entry[1] = np.logaddexp(entry[1], pn + row[c])  # a repeat stays merged
                    ext[1] = np.logaddexp(ext[1], pb + row[c])  # a new label after a blank
                else:
                    ext[1] = np.logaddexp(ext[1], total + row[c])
        ranked = sorted(new.items(), key=lambda kv: -np.logaddexp(*kv[1]))
        beams = {k: (v[0], v[1]) for k, v in ranked[:beam_width]}
    ranked = sorted(beams.items(), key=lambda kv: -np.logaddexp(*kv[1]))[:top_paths]
    return [(list(k), float(np.logaddexp(*v))) for k, v in ranked]


def ctc_beam_search_decoder(inputs: Any, sequence_length: Any, beam_width: int = 100,
                            top_paths: int = 1) -> tuple:  # fmt: skip
    """Beam-search decoding of the logits [max_time, batch, classes] (the blank is the last
    class): `(decoded, log_probabilities)`, `decoded` a list of `top_paths`
    `SparseTensorValue`s (path j of every batch element), `log_probabilities` [batch,
    top_paths] the log-probability of each path under per-frame softmaxes.

    >>> import layerflow as tf
    >>> x = tf.math.log(tf.constant([[[0.1, 0.6, 0.3]], [[0.1, 0.6, 0.3]]]))
    >>> decoded, logp = tf.nn.ctc_beam_search_decoder(x, [2], beam_width=4)
    >>> decoded[0].values.numpy(), round(float(tf.exp(logp[0, 0])), 2)
    (array([1]), 0.72)
    """
    if beam_width < 1 or top_paths < 1 or top_paths > beam_width:
        raise ValueError(
            f"ctc_beam_search_decoder: need 1 <= top_paths <= beam_width, got top_paths="
            f"{top_paths}, beam_width={beam_width}."
        )
    x, lens = _decoder_inputs(inputs, sequence_length, "ctc_beam_search_decoder")
    blank = x.shape[2] - 1
    z = x - x.max(-1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    results = [_beam_search(lp[: lens[b], b], blank, beam_width, top_paths)
               for b in range(x.shape[1])]  # fmt: skip
    decoded, logps = [], np.full((x.shape[1], top_paths), -np.inf)
    for j in range(top_paths):
        seqs = []
        for b, res in enumerate(results):
            seq, score = res[j] if j < len(res) else ([], -np.inf)
            seqs.append(seq)
            logps[b, j] = score
        decoded.append(_sparse(seqs, x.shape[1]))
    dtype = _as_tensor(inputs)._data.dtype
    return decoded, constant(logps.astype(dtype))


def collapse_repeated(labels: Any, seq_length: Any, name: str | None = None) -> tuple:
    """Merge runs of a repeated label: `(collapsed_labels, new_seq_length)`, the labels padded
    with 0 to the longest new length.

    >>> import layerflow as tf
    >>> out, n = tf.nn.collapse_repeated([[1, 1, 2, 2, 1], [3, 3, 3, 0, 0]], [5, 3])
    >>> out.numpy().tolist(), n.numpy().tolist()
    ([[1, 2, 1], [3, 0, 0]], [3, 1])
    """
    lab = _as_tensor(labels)
    arr = np.asarray(backend.to_host(lab._data))
    lens = _host_ints(seq_length, "seq_length", "collapse_repeated").reshape(-1)
    if arr.ndim != 2 or lens.shape != (arr.shape[0],) or (lens > arr.shape[1]).any():
        raise errors.InvalidArgumentError(
            None, "collapse_repeated", f"collapse_repeated: labels must be [batch, max_length] "
            f"and seq_length [batch] values <= max_length; got {arr.shape} and {lens.tolist()}.",
        )  # fmt: skip
    rows = []
    for b in range(arr.shape[0]):
        row = arr[b, : lens[b]]
        keep = np.ones(len(row), bool)
        keep[1:] = row[1:] != row[:-1]
        rows.append(row[keep])
    width = max((len(r) for r in rows), default=0)
    out = np.zeros((arr.shape[0], width), arr.dtype)
    for b, r in enumerate(rows):
        out[b, : len(r)] = r
    return constant(out), constant(np.array([len(r) for r in rows], np.int32))


def ctc_unique_labels(labels: Any, name: str | None = None) -> tuple:
    """Per row, the unique labels in order of first appearance (padded with 0, int64) and each
    label's index into them (int32): the `unique` argument of `ctc_loss`.

    >>> import layerflow as tf
    >>> u, i = tf.nn.ctc_unique_labels([[3, 4, 4, 3, 0]])
    >>> u.numpy().tolist(), i.numpy().tolist()
    ([[3, 4, 0, 0, 0]], [[0, 1, 1, 0, 2]])
    """
    arr = np.asarray(backend.to_host(_as_tensor(labels)._data))
    if arr.ndim != 2:
        raise ValueError(f"ctc_unique_labels: labels must be [batch, max_length], got {arr.shape}.")
    uniq = np.zeros(arr.shape, np.int64)
    idx = np.zeros(arr.shape, np.int32)
    for b, row in enumerate(arr):
        seen: dict[int, int] = {}
        for i, v in enumerate(row.tolist()):
            idx[b, i] = seen.setdefault(v, len(seen))
        uniq[b, : len(seen)] = list(seen)
    return constant(uniq), constant(idx)
