"""Fused CPU kernels (numba) for the passes around a dense layer's GEMMs, and their NumPy paths.

Each function below does in one pass over memory what the NumPy path does in two to five
(each of those a ufunc call over an array that the GEMM before it just evicted from the
caches), and gives the NumPy path's bits: the same float operations in the same order, every
intermediate rounded to the array's dtype (the kernels take their constants typed, so no
float64 sneaks in), sums over the batch axis row after row as NumPy reduces axis 0 of a
C-ordered array, sums over a short class axis in class order as NumPy's class-major sum does.
`exp` stays NumPy's (its float32 SIMD `exp` and libm's differ in the last bit).

A caller uses a kernel through `use_kernels(*arrays)` (numba enabled, NumPy arrays, C order,
float32 or float64) and otherwise takes the NumPy path, which is what runs without numba,
with `LAYERFLOW_NUMBA=0`, inside `jit.use(False)` and on CuPy arrays.

Measured one thread, hot caches, medians of 2,000 calls alternating (the seed MLP's shapes):
bias + relu of a 256x256 GEMM output 37 -> 5 us (NumPy's `maximum` with a scalar runs 25 us
on it); relu mask + bias gradient 32 -> 11.5 us; softmax cross-entropy gradient + bias
gradient over 256x10 logits 22 -> 7.3 us; SGD's `w -= lr g` on 784x256 37 -> 21 us.
Sigmoid's gradient `dy y (1 - y)` (LeNet's first activation, 256x28x28x6 float32) 0.39 ->
0.24 ms; sigmoid's own `1 / (1 + e)` as a kernel ran 1.7x slower than NumPy's two passes
(1.77 vs 1.03 ms, into a fresh array or in place), so it stays NumPy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import jit

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def use_kernels(*arrays: Any) -> bool:
    """Whether the kernels may run on these arrays: numba enabled, and every array a C-ordered
    NumPy array of one float dtype (integer label arrays aside: see the callers)."""
    for a in arrays:
        if type(a) is not np.ndarray or not a.flags.c_contiguous or a.dtype not in _FLOATS:
            return False
    return jit.enabled()


# --- kernels -----------------------------------------------------------------------------------


@jit.kernel
def _bias_relu_kernel(out, bias):  # pragma: no cover - compiled
    n, c = out.shape
    for i in range(n):
        for j in range(c):
            v = out[i, j] + bias[j]
            # np.maximum(v, 0): v unless v < 0 (NaN and -0.0 stay)
            if v < 0:
                out[i, j] = 0
            else:
                out[i, j] = v


@jit.kernel
def _relu_grad_sum_kernel(dy, y, zero, out, total):  # pragma: no cover - compiled
    # Row by row through a small row buffer: `out` is often `dy` itself (the plan's in-place
    # chain), and a loop that reads and writes one array is not vectorized (3x slower).
    n, c = dy.shape
    row = np.empty(c, dy.dtype)
    for j in range(c):
        total[j] = zero  # NumPy's sums start from +0.0: a sum of -0.0s is +0.0
    for i in range(n):
        for j in range(c):
            v = dy[i, j]
            if not y[i, j] > 0:
                v = v * zero  # dy * False: -0.0 for a negative dy, NaN for inf or NaN
            row[j] = v
        for j in range(c):
            total[j] += row[j]
        for j in range(c):
            out[i, j] = row[j]


@jit.kernel
def _xent_shift_kernel(logits, labels, z, picked):  # pragma: no cover - compiled
    # z = logits - max over classes; picked = z at the label. Returns a row whose label is out
    # of range (-1: none).
    n, c = logits.shape
    bad = -1
    for b in range(n):
        m = logits[b, 0]
        for k in range(1, c):
            v = logits[b, k]
            if v > m or v != v:  # np.max: NaN wins
                m = v
        for k in range(c):
            z[b, k] = logits[b, k] - m
        label = labels[b]
        if label < 0 or label >= c:
            bad = b
            picked[b] = z[b, 0]
        else:
            picked[b] = z[b, label]
    return bad


@jit.kernel
def _row_sums_kernel(e, zero, s):  # pragma: no cover - compiled
    n, c = e.shape
    for b in range(n):
        t = zero  # NumPy's sums start from +0.0
        for k in range(c):
            t += e[b, k]
        s[b] = t


@jit.kernel
def _xent_grad_kernel(e, labels, dy, scale, one, s, out, total):  # pragma: no cover - compiled
    # s = row sums of e; out = (e / s - one_hot) (* dy when `scale`); total = out's column
    # sums. Every sum starts from +0.0, as NumPy's do.
    n, c = e.shape
    zero = one - one
    for k in range(c):
        total[k] = zero
    for b in range(n):
        t = zero
        for k in range(c):
            t += e[b, k]
        s[b] = t
        label = labels[b]
        for k in range(c):
            v = e[b, k] / t
            if k == label:
                v = v - one
            if scale:
                v = v * dy[b]
            out[b, k] = v
            total[k] += v


@jit.kernel
def _sgd_kernel(w, g, lr):  # pragma: no cover - compiled
    w = w.reshape(-1)
    g = g.reshape(-1)
    for i in range(w.size):
        w[i] -= g[i] * lr


@jit.kernel
def _sigmoid_grad_kernel(y, dy, one, out):  # pragma: no cover - compiled
    # ((one - y) * y) * dy, the NumPy path's order
    for i in range(np.uint64(y.size)):
        out[i] = (one - y[i]) * y[i] * dy[i]


@jit.kernel
def _argmax_hits_kernel(p, labels):  # pragma: no cover - compiled
    # How many rows' first largest entry (np.argmax: the first NaN, else the first maximum)
    # sits at the label.
    n, c = p.shape
    hits = 0
    for b in range(n):
        best = 0
        m = p[b, 0]
        if m == m:
            for k in range(1, c):
                v = p[b, k]
                if v != v:
                    best = k
                    break
                if v > m:
                    m = v
                    best = k
        if best == labels[b]:
            hits += 1
    return hits


# --- entry points (kernel or NumPy path) -------------------------------------------------------

# Below this many elements the NumPy path's two ufunc calls cost about what one kernel call's
# dispatch does, and an eager call would import numba for nothing.
_MIN_SIZE = 4096


def bias_relu(xp: Any, out: Any, bias: Any, relu: bool) -> None:
    """`out += bias`, then `out = maximum(out, 0)` when `relu`: in place, one pass."""
    if relu and out.ndim == 2 and out.size >= _MIN_SIZE and bias.shape == out.shape[1:]:
        if bias.dtype == out.dtype and use_kernels(out, bias):
            _bias_relu_kernel(out, bias)
            return
    out += bias
    if relu:
        xp.maximum(out, 0, out=out)


def relu_grad_sum(xp: Any, out: Any, dy: Any, y: Any) -> Any:
    """`out = dy * (y > 0)` (`out` may be `dy` itself) and, from the kernel, its sum over
    axis 0 row after row (the bias gradient) in the same pass; None from the NumPy path."""
    if dy.ndim == 2 and dy.shape == y.shape == out.shape and dy.shape[0] > 0:
        if dy.dtype == y.dtype == out.dtype and use_kernels(dy, y, out):
            total = np.empty(dy.shape[1], dy.dtype)
            _relu_grad_sum_kernel(dy, y, dy.dtype.type(0), out, total)
            return total
    xp.multiply(dy, y > 0, out=out)
    return None


def xent(logits: Any, labels: Any, dy: Any = None, loss: bool = True,
         grad: bool = True) -> tuple[Any, Any, Any, int] | None:  # fmt: skip
    """Sparse softmax cross-entropy of (batch, classes) `logits`, from one shifted copy:
    `(loss or None, grad or None, grad's sum over the batch or None, bad)`, where `grad` is
    `softmax(logits) - one_hot(labels)`, times `dy[:, None]` when `dy` is given, and `bad`
    is a row whose label is out of range (-1: none; the caller raises). None where the
    kernels do not apply (the caller's NumPy path runs).

    Sums over classes run in class order, as NumPy's class-major sums do (`nn_ops`)."""
    if logits.ndim != 2 or logits.shape[0] == 0 or logits.shape[1] == 0:
        return None
    if type(labels) is not np.ndarray or not _small_ints(labels.dtype):
        return None
    if labels.shape != logits.shape[:1] or not use_kernels(logits):
        return None
    if dy is not None and (dy.shape != labels.shape or dy.dtype != logits.dtype):
        return None
    if dy is not None and not use_kernels(dy):
        return None
    labels = np.ascontiguousarray(labels)
    n, c = logits.shape
    z = np.empty_like(logits)
    picked = np.empty(n, logits.dtype)
    bad = _xent_shift_kernel(logits, labels, z, picked)
    np.exp(z, out=z)
    s = np.empty(n, logits.dtype)
    out = total = None
    if grad:
        out = np.empty_like(logits)
        total = np.empty(c, logits.dtype)
        scale = dy is not None
        _xent_grad_kernel(z, labels, dy if scale else picked, scale, logits.dtype.type(1), s,
                          out, total)  # fmt: skip
    else:
        _row_sums_kernel(z, logits.dtype.type(0), s)
    values = None
    if loss:
        values = np.log(s, out=s)
        values -= picked
    return values, out, total, bad


def sgd_update(w: Any, g: Any, lr: Any) -> None:
    """`w -= g * lr` in place (`lr` a scalar of `w`'s dtype): one pass, no `lr g` array."""
    if w.shape == g.shape and w.dtype == g.dtype and w.size >= 1 and use_kernels(w, g):
        _sgd_kernel(w, g, lr)
        return
    w -= g * lr


def sigmoid_grad(y: Any, dy: Any) -> Any:
    """`dy * y * (1 - y)` in one pass, or None where the kernel does not apply."""
    if y.shape != dy.shape or y.dtype != dy.dtype or not use_kernels(y, dy):
        return None
    out = np.empty_like(y)
    _sigmoid_grad_kernel(y.reshape(-1), dy.reshape(-1), y.dtype.type(1), out.reshape(-1))
    return out


def argmax_hits(p: Any, labels: Any) -> int | None:
    """How many rows of `p` (batch, classes) have their argmax at the integer label, or None
    where the kernel does not apply."""
    if p.ndim != 2 or p.shape[1] == 0 or labels.shape != p.shape[:1]:
        return None
    if type(labels) is not np.ndarray or not _small_ints(labels.dtype) or not use_kernels(p):
        return None
    return int(_argmax_hits_kernel(p, np.ascontiguousarray(labels)))


def _small_ints(dtype: Any) -> bool:
    """Signed integers, or unsigned ones that compare with int64 as they are."""
    return dtype.kind == "i" or dtype.kind == "u" and dtype.itemsize < 8
