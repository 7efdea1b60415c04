"""Row frames (`conv_small.py`): stride-1 convolutions in chunks of whole images, each image's
OH*WP positions only, the chunks run by one thread or shared between several. Values and
gradients against the NumPy reference (finite differences too), the relu mask, and results
that do not depend on the number of threads (bit for bit)."""

import threading

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op
from layerflow._src.backend import blas_threads
from layerflow._src.ops import conv_kernels, conv_small, conv_threads
from tests.ops.test_conv_algorithms import CASES, _cv, _ref, check_fused_bias_and_relu

rng = np.random.default_rng(11)


def _images_per_chunk(k):
    def plan(n, oh, hp, wp, per_pixel, cached):
        return [(n0, min(n, n0 + k), 0, oh) for n0 in range(0, n, k)]

    return plan


def _split(threads):
    """`_shares` replaced: the chunks cut into `threads` contiguous runs, as the policy would
    on a machine with that many free cores."""

    def shares(xp, cv):
        n = len(cv.plan)
        if threads == 1:
            return [list(range(n))]
        b = [round(i * n / threads) for i in range(threads + 1)]
        return [list(range(b[i], b[i + 1])) for i in range(threads) if b[i] < b[i + 1]]

    return shares


@pytest.fixture(params=[(1, 1), (1, 2), (2, 2), (3, 3)], ids=lambda p: f"{p[0]}img-{p[1]}thr")
def rows(request, monkeypatch):
    """Row frames forced for every stride-1 shape, `images` per chunk, `threads` threads."""
    images, threads = request.param
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 1e9)
    monkeypatch.setattr(conv_kernels, "FLAT_EXTRA", 1e9)
    monkeypatch.setattr(conv_kernels, "flat_chunks", _images_per_chunk(images))
    monkeypatch.setattr(conv_small, "_shares", _split(threads))
    return request.param


@pytest.mark.parametrize("xs,ws,groups,padding,dil", CASES)
def test_values_and_gradients(rows, xs, ws, groups, padding, dil):
    cv = _cv(xs, ws, groups, padding, dil)
    assert conv_small.applies(cv)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    check_op(lambda a, k: tf.nn.conv2d(a, k, 1, padding, dilations=dil, groups=groups), [x, w],
             lambda a, k: _ref(a, k, groups, padding, dil), grad_rtol=1e-4)  # fmt: skip


@pytest.mark.parametrize("xs,ws,groups,padding,dil", CASES[:3] + CASES[5:])
@pytest.mark.parametrize("relu", [False, True])
def test_fused_bias_and_relu(rows, xs, ws, groups, padding, dil, relu):
    check_fused_bias_and_relu(rng, xs, ws, groups, padding, dil, relu)


def _lenet_like(threads, monkeypatch, dtype=np.float32, rows=True):
    """Forward (bias, relu, mask kept) and backward of LeNet's two layers (batch 9, two
    images per chunk) with `threads` threads; returns every array."""
    monkeypatch.setattr(conv_kernels, "flat_chunks", _images_per_chunk(2))
    monkeypatch.setattr(conv_small, "_shares", _split(threads))
    r = np.random.default_rng(3)
    out = []
    for xs, ws, pad in [((9, 28, 28, 1), (5, 5, 1, 6), "SAME"),
                        ((9, 14, 14, 6), (5, 5, 6, 16), "VALID")]:  # fmt: skip
        x, w = r.standard_normal(xs).astype(dtype), r.standard_normal(ws).astype(dtype)
        b = r.standard_normal(ws[-1]).astype(dtype)
        cv = _cv(xs, ws, 1, pad, (1, 1))
        assert conv_small.applies(cv) == rows and len(cv.plan) == 5
        y, _, mask = conv_kernels.conv_forward(np, x, w, cv, b, True, keep=True)
        dy = r.standard_normal(y.shape).astype(dtype)
        grads = conv_kernels.conv_backward(np, x, w, dy, cv, x_shape=xs, need_x=True,
                                           need_w=True, need_b=True, mask=mask)  # fmt: skip
        out += [np.array(y), *grads, conv_kernels.relu_mask(np, mask, cv, dtype)]
    return out


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    one = _lenet_like(1, monkeypatch)
    for threads in (2, 3, 5):
        for a, b in zip(one, _lenet_like(threads, monkeypatch)):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()


def test_row_frames_match_whole_frames(monkeypatch):
    """The same convolution by the shifted frames' own loop (row frames switched off)."""
    rows_out = _lenet_like(2, monkeypatch, np.float64)
    monkeypatch.setattr(conv_small, "applies", lambda cv: False)
    frames_out = _lenet_like(1, monkeypatch, np.float64, rows=False)
    for a, b in zip(rows_out, frames_out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_threads_error_is_raised(monkeypatch):
    monkeypatch.setattr(conv_kernels, "flat_chunks", _images_per_chunk(1))
    monkeypatch.setattr(conv_small, "_shares", _split(2))
    cv = _cv((4, 6, 6, 1), (3, 3, 1, 2), 1, "SAME", (1, 1))
    with pytest.raises(ValueError):  # a filter of the wrong size: the GEMMs refuse it
        conv_small.forward(np, np.ones((4, 6, 6, 1)), np.ones((3, 3, 1, 3)), cv, None, False,
                           False)  # fmt: skip


class _Policy:
    def __init__(self, current):
        self.current = current


def test_threads_follow_the_blas_policy(monkeypatch):
    """As many threads as the policy gives a large GEMM (at most MAX_THREADS and one per
    chunk), BLAS then on one thread; one thread off the main thread or for one chunk."""
    monkeypatch.setattr(conv_kernels, "flat_chunks", _images_per_chunk(1))
    cv = _cv((6, 28, 28, 1), (5, 5, 1, 6), 1, "SAME", (1, 1))
    big = _cv((128, 28, 28, 1), (5, 5, 1, 6), 1, "SAME", (1, 1))
    calls = []
    monkeypatch.setattr(blas_threads, "gemm", lambda m, n, k: calls.append((m, n, k)))
    assert conv_small._shares(np, cv) == [list(range(6))]  # too small to share
    assert calls == []
    for free, want in [(1, 1), (2, 2), (3, 3), (16, conv_threads.MAX_THREADS)]:
        monkeypatch.setattr(blas_threads, "policy", lambda free=free: _Policy(free))
        calls.clear()
        shares = conv_small._shares(np, big)
        assert len(shares) == want
        assert sorted(i for s in shares for i in s) == list(range(128))
        assert all(s == list(range(s[0], s[0] + len(s))) for s in shares)  # contiguous runs
        assert calls[0][0] * calls[0][1] * calls[0][2] >= blas_threads.SMALL_MNK
        assert (calls[-1] == (1, 1, 1)) == (want > 1)
    monkeypatch.setattr(blas_threads, "policy", lambda: _Policy(4))
    seen = []
    thread = threading.Thread(target=lambda: seen.append(conv_small._shares(np, big)))
    thread.start()
    thread.join()
    assert seen == [[list(range(128))]]
    assert len(conv_small._shares(np, big)) == 4


def test_which_convolutions_run_by_row_frames(monkeypatch):
    assert conv_small.applies(_cv((8, 28, 28, 1), (5, 5, 1, 6), 1, "SAME", (1, 1)))  # LeNet 1
    assert conv_small.applies(_cv((8, 14, 14, 6), (5, 5, 6, 16), 1, "VALID", (1, 1)))  # 2
    assert not conv_small.applies(_cv((8, 8, 8, 4), (1, 1, 4, 8), 1, "VALID", (1, 1)))  # 1x1
    geo = conv_kernels.geometry((28, 28), (5, 5), (2, 2), (1, 1), "SAME", "conv2d")
    strided = conv_kernels.Conv((8, 28, 28, 1), (5, 5, 1, 6), (*geo, (2, 2), (1, 1)), 1)
    assert not conv_small.applies(strided)
    # Bands of rows of one image (a frame too large for a chunk) keep the shifted frames.
    monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", 1)
    assert not conv_small.applies(_cv((2, 28, 28, 1), (5, 5, 1, 6), 1, "SAME", (1, 1)))


def test_a_forked_child_makes_its_own_pool(monkeypatch):
    """After a fork the parent's pool threads do not exist: a new pool is made (no hang)."""
    monkeypatch.setattr(conv_kernels, "flat_chunks", _images_per_chunk(1))
    monkeypatch.setattr(conv_small, "_shares", _split(2))
    cv = _cv((4, 6, 6, 1), (3, 3, 1, 2), 1, "SAME", (1, 1))
    x, w = np.ones((4, 6, 6, 1)), np.ones((3, 3, 1, 2))
    want = conv_small.forward(np, x, w, cv, None, False, False)[0]
    parent = conv_threads._POOL[0]
    monkeypatch.setattr(conv_threads, "_POOL", [parent, -1])  # as seen from another process
    got = conv_small.forward(np, x, w, cv, None, False, False)[0]
    assert conv_threads._POOL[0] is not parent and conv_threads._POOL[1] > 0
    np.testing.assert_array_equal(got, want)
