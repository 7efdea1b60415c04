"""A convolution's chunks shared between threads (`conv_threads`): im2col (channels-first and
channels-last patches, whole images and bands of rows) and shifted frames give the same
outputs, relu masks, kept patches and gradients, bit for bit, on 1, 2 or 3 threads; an error
in one thread reaches the caller (no hang); the budget bounds all threads' buffers."""

import signal

import numpy as np
import pytest

from layerflow._src.ops import conv_kernels, conv_small, conv_threads
from tests.ops.test_conv_algorithms import _two_rows, _two_rows_or_images

rng = np.random.default_rng(17)


def _one_image(n, oh, ow, per_pixel, budget=None):
    return [(i, i + 1, 0, oh) for i in range(n)]


def _one_frame(n, oh, hp, wp, per_pixel, cached):
    return [(i, i + 1, 0, oh) for i in range(n)]


def _im2col(mp):
    mp.setattr(conv_kernels, "FLAT_WASTE", 0)
    mp.setattr(conv_kernels, "ROWS_RUN", 10**9)


def _rows(mp):
    mp.setattr(conv_kernels, "FLAT_WASTE", 0)
    mp.setattr(conv_kernels, "ROWS_RUN", 0)
    mp.setattr(conv_kernels, "ROWS_OVER_CF", 0)
    mp.setattr(conv_kernels, "DX_GATHER_WASTE", 1e9)  # dx by dz's patches
    mp.setattr(conv_kernels, "DX_GATHER_M", 1e9)


def _flat(mp):
    mp.setattr(conv_kernels, "FLAT_WASTE", 1e9)
    mp.setattr(conv_kernels, "FLAT_EXTRA", 1e9)
    mp.setattr(conv_small, "applies", lambda cv: False)  # conv_flat's own loop


# name: (algorithm, chunk plan function name in conv_kernels, plan)
PLANS = {
    "im2col-images": (_im2col, "chunks", _one_image),
    "im2col-bands": (_im2col, "chunks", _two_rows_or_images),
    "rows-images": (_rows, "chunks", _one_image),
    "rows-bands": (_rows, "chunks", _two_rows_or_images),
    "flat-images": (_flat, "flat_chunks", _one_frame),
    "flat-bands": (_flat, "flat_chunks", _two_rows),
}
# (input, filter, groups, padding, strides, dilations)
SHAPES = [
    ((5, 7, 6, 3), (3, 3, 3, 4), 1, "SAME", (1, 1), (1, 1)),
    ((5, 6, 8, 4), (3, 2, 2, 6), 2, "SAME", (1, 1), (1, 1)),  # groups
    ((5, 9, 8, 2), (3, 3, 2, 2), 1, "VALID", (1, 1), (2, 1)),  # dilation
    ((5, 8, 9, 4), (3, 3, 4, 5), 1, "SAME", (2, 2), (1, 1)),  # strided (im2col only)
    ((5, 6, 5, 4), (1, 1, 4, 6), 1, "VALID", (1, 1), (1, 1)),  # pointwise (im2col only)
]


def _cv(xs, ws, groups, padding, strides, dil):
    return conv_kernels.plan(xs, ws, (strides, dil, padding, groups), "conv2d")


def _step(cv, x, w, b, dy, relu, keep):
    """Forward (output, relu mask, kept patches) and backward (dx, dw, db) as byte strings."""
    y, kept, mask = conv_kernels.conv_forward(np, x, w, cv, b, relu, keep)
    dx, dw, db = conv_kernels.conv_backward(np, x, w, dy, cv, x_shape=x.shape, need_x=True,
                                            need_w=True, need_b=b is not None,
                                            mask=mask if relu else None, cols=kept)  # fmt: skip
    out = [
        np.ascontiguousarray(a).tobytes() for a in (y, dx, dw) + ((db,) if b is not None else ())
    ]
    out += [m.tobytes() for m in mask or []]
    if kept is not None:
        out += [
            np.ascontiguousarray(k).tobytes() for k in (kept if type(kept) is tuple else [kept])
        ]
    return out


@pytest.fixture
def counted(monkeypatch):
    """The thread counts `conv_threads.count` gave."""
    seen = []
    real = conv_threads.count

    def spy(*a, **k):
        seen.append(real(*a, **k))
        return seen[-1]

    monkeypatch.setattr(conv_threads, "count", spy)
    return seen


@pytest.mark.parametrize("name", list(PLANS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}-g{s[2]}-s{s[4]}")
@pytest.mark.parametrize("relu,keep,bias", [(True, True, True), (False, False, False),
                                            (True, False, True)])  # fmt: skip
def test_any_number_of_threads_gives_the_same_bits(monkeypatch, counted, name, shape, relu,
                                                    keep, bias):  # fmt: skip
    algo, knob, chunks = PLANS[name]
    algo(monkeypatch)
    monkeypatch.setattr(conv_kernels, knob, chunks)
    xs, ws, groups, padding, strides, dil = shape
    cv = _cv(xs, ws, groups, padding, strides, dil)
    if name.startswith("flat") and not cv.flat or name.startswith("rows") and not cv.rows:
        pytest.skip("the algorithm does not apply to this shape")
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[-1]).astype(np.float32) if bias else None
    dy = rng.standard_normal((xs[0], *cv.geo[0], ws[-1])).astype(np.float32)
    results = {}
    for threads in (1, 2, 3):
        monkeypatch.setattr(conv_threads, "FORCE", threads)
        counted.clear()
        results[threads] = _step(cv, x, w, b, dy, relu, keep)
        assert counted == [threads, threads]  # forward and backward each ran on that many
    assert results[2] == results[1]
    assert results[3] == results[1]
    monkeypatch.setattr(conv_threads, "FORCE", None)  # the policy's choice: serial here
    counted.clear()
    assert _step(cv, x, w, b, dy, relu, keep) == results[1]


def test_units_keep_the_bands_of_an_image_together():
    plan = [(0, 2, 0, 4), (2, 3, 0, 2), (2, 3, 2, 4), (3, 4, 0, 2), (3, 4, 2, 4), (4, 5, 0, 4)]
    assert conv_threads.units(plan) == [[0], [1, 2], [3, 4], [5]]
    assert conv_threads.deal(plan, 2) == [[0, 3, 4], [1, 2, 5]]
    assert conv_threads.deal(plan, 3) == [[0, 5], [1, 2], [3, 4]]


def _alarm(seconds):
    def fire(*_):
        raise TimeoutError("the threads hung")

    signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)


@pytest.mark.parametrize("name", ["im2col-images", "flat-images", "flat-bands"])
def test_an_error_in_one_thread_reaches_the_caller(monkeypatch, name):
    """Image 1's chunks fail in the second thread while the first waits for their turn to add
    the filter gradient: the first stops waiting and the error itself is raised."""
    algo, knob, chunks = PLANS[name]
    algo(monkeypatch)
    monkeypatch.setattr(conv_kernels, knob, chunks)
    monkeypatch.setattr(conv_threads, "FORCE", 2)
    cv = _cv((5, 7, 6, 3), (3, 3, 3, 4), 1, "SAME", (1, 1), (1, 1))
    real = conv_threads.add_grads

    def failing(xp, turns, i, *a):
        if cv.plan[i][0] == 1:
            raise ValueError("chunk of image 1")
        return real(xp, turns, i, *a)

    monkeypatch.setattr(conv_threads, "add_grads", failing)
    x = np.ones((5, 7, 6, 3), np.float32)
    w = np.ones((3, 3, 3, 4), np.float32)
    _alarm(60)
    try:
        with pytest.raises(ValueError, match="image 1"):
            conv_kernels.conv_backward(np, x, w, np.ones((5, 7, 6, 4), np.float32), cv,
                                       x_shape=x.shape, need_x=True, need_w=True)  # fmt: skip
    finally:
        signal.alarm(0)
    monkeypatch.setattr(conv_threads, "add_grads", real)  # the pool still works after
    ok = conv_kernels.conv_backward(np, x, w, np.ones((5, 7, 6, 4), np.float32), cv,
                                    x_shape=x.shape, need_x=True, need_w=True)  # fmt: skip
    assert np.isfinite(ok[1]).all()


def test_a_forward_error_in_a_worker_is_raised(monkeypatch):
    _im2col(monkeypatch)
    monkeypatch.setattr(conv_kernels, "chunks", _one_image)
    monkeypatch.setattr(conv_threads, "FORCE", 3)
    cv = _cv((5, 7, 6, 3), (3, 3, 3, 4), 1, "SAME", (1, 1), (1, 1))
    real = conv_kernels.im2col
    monkeypatch.setattr(conv_kernels, "im2col", lambda xp, x5, cv, chunk, *a: (
        (_ for _ in ()).throw(ValueError("im2col 2")) if chunk[0] == 2
        else real(xp, x5, cv, chunk, *a)))  # fmt: skip
    with pytest.raises(ValueError, match="im2col 2"):
        conv_kernels.conv_forward(np, np.ones((5, 7, 6, 3), np.float32),
                                  np.ones((3, 3, 3, 4), np.float32), cv)  # fmt: skip


@pytest.mark.parametrize("name", ["im2col-bands", "flat-images"])
def test_all_threads_buffers_fit_the_budget(monkeypatch, name):
    """The threads run only as many as the budget holds of their buffers (all together)."""
    algo, knob, chunks = PLANS[name]
    algo(monkeypatch)
    monkeypatch.setattr(conv_kernels, knob, chunks)
    monkeypatch.setattr(conv_threads, "FORCE", 3)
    xs, ws = (5, 7, 6, 3), (3, 3, 3, 4)
    x, w = np.ones(xs, np.float32), np.ones(ws, np.float32)
    asked = []
    real = conv_threads.count
    monkeypatch.setattr(conv_threads, "count",
                        lambda *a, **k: asked.append(a[3]) or real(*a, **k))  # fmt: skip
    cv = _cv(xs, ws, 1, "SAME", (1, 1), (1, 1))
    conv_kernels.conv_forward(np, x, w, cv)
    per_thread = asked[-1]
    assert per_thread > 0
    for budget, want in [(3 * per_thread, 3), (3 * per_thread - 1, 2), (per_thread, 1)]:
        monkeypatch.setattr(conv_kernels, "BUDGET_BYTES", budget)
        cv = _cv(xs, ws, 1, "SAME", (1, 1), (1, 1))
        assert cv.budget == budget
        assert real(np, 5, (1, 1, 1), per_thread, cv.budget) == want


@pytest.mark.parametrize("per_image", [6, 7, 8, 16])
def test_whole_image_plans_come_in_a_multiple_of_balance_chunks(per_image):
    """Chunks of whole images come in a multiple of BALANCE (equal shares for 2 or 4
    threads) unless one chunk holds them all; each within the budget, every image once."""
    n, oh, ow, per_pixel = 16, 12, 12, 1000
    budget = per_image * oh * ow * per_pixel
    plan = conv_kernels.chunks(n, oh, ow, per_pixel, budget)
    assert [i for a, b, _, _ in plan for i in range(a, b)] == list(range(n))
    assert all((b - a) <= per_image and (r0, r1) == (0, oh) for a, b, r0, r1 in plan)
    assert len(plan) == 1 or len(plan) % conv_kernels.BALANCE == 0
    assert max(b - a for a, b, _, _ in plan) - min(b - a for a, b, _, _ in plan) <= 1
    flat = conv_kernels.flat_chunks(n, oh, oh + 2, ow + 2, 0, per_pixel * oh * ow // 196)
    assert len(flat) == 1 or len(flat) % conv_kernels.BALANCE == 0


class _Policy:
    current = 4


def test_wide_off_keeps_im2col_and_frames_serial(monkeypatch):
    """WIDE gates im2col (`wide=True`), FRAMES the shifted frames (`wide="frames"`); row frames
    (`wide=False`) always follow the policy's free cores."""
    from layerflow._src.backend import blas_threads

    monkeypatch.setattr(blas_threads, "policy", lambda: _Policy())
    monkeypatch.setattr(blas_threads, "gemm", lambda m, n, k: None)
    big = (1 << 10, 1 << 10, 1 << 10)
    monkeypatch.setattr(conv_threads, "WIDE", True)
    monkeypatch.setattr(conv_threads, "FRAMES", True)
    assert conv_threads.count(np, 8, big, wide=True) == 4
    assert conv_threads.count(np, 8, big, wide="frames") == 4
    monkeypatch.setattr(conv_threads, "WIDE", False)
    assert conv_threads.count(np, 8, big, wide=True) == 1
    assert conv_threads.count(np, 8, big, wide="frames") == 4
    monkeypatch.setattr(conv_threads, "FRAMES", False)
    assert conv_threads.count(np, 8, big, wide="frames") == 1
    assert conv_threads.count(np, 8, big) == 4
    assert conv_threads.count(np, 8, (1, 1, 1)) == 1  # too small to share
