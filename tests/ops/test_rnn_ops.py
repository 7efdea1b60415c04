"""The fused sequence ops (LSTM, GRU, SimpleRNN) against a NumPy reference of Keras 2's
recurrence, and their gradients (back-propagation through time) against float64 differences.

The reference below is written gate by gate, as tf_keras's `implementation=1` cells compute
(`tf_keras/src/layers/rnn/{lstm,gru,simple_rnn}.py`), with `backend.rnn`'s masking rule: a
masked step keeps the states and outputs the previous output (zeros with
`zero_output_for_mask`). It was checked against tf_keras 2.21's LSTM, GRU (both reset_after)
and SimpleRNN layers on random weights while this file was written: every combination of
time_major, go_backwards, return_sequences, mask and zero_output_for_mask, max |diff| 5e-7 in
float32 (recurrent dropout masks are random in Keras and were not compared).
"""

import itertools

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op
from layerflow._src.framework import errors
from layerflow._src.ops import rnn_ops

GATES = {"lstm": 4, "gru": 3, "gru_v1": 3, "simple": 1}


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(kind, xw, h0, c0, u, b, mask=None, rmask=None, time_major=False,
              go_backwards=False, return_sequences=True, zero_output=False,
              activation="tanh"):  # fmt: skip
    xs = xw if time_major else xw.transpose(1, 0, 2)
    mk = None if mask is None else (mask if time_major else mask.T)
    steps, n = xs.shape[0], h0.shape[-1]
    gates = GATES[kind]
    h, c, y = h0, c0, np.zeros_like(h0)
    outs = []
    for t in reversed(range(steps)) if go_backwards else range(steps):
        hp = [h * rmask[g] if rmask is not None else h for g in range(gates)]
        x = [xs[t][:, g * n : (g + 1) * n] for g in range(gates)]
        us = [u[:, g * n : (g + 1) * n] for g in range(gates)]
        cn = c
        if kind == "lstm":
            i = _sig(x[0] + hp[0] @ us[0])
            f = _sig(x[1] + hp[1] @ us[1])
            cn = f * c + i * np.tanh(x[2] + hp[2] @ us[2])
            o = _sig(x[3] + hp[3] @ us[3])
            hn = o * np.tanh(cn)
        elif kind == "gru":  # reset_after: the recurrent bias b sits inside r * (...)
            z = _sig(x[0] + hp[0] @ us[0] + b[:n])
            r = _sig(x[1] + hp[1] @ us[1] + b[n : 2 * n])
            hh = np.tanh(x[2] + r * (hp[2] @ us[2] + b[2 * n :]))
            hn = z * h + (1 - z) * hh
        elif kind == "gru_v1":
            z = _sig(x[0] + hp[0] @ us[0])
            r = _sig(x[1] + hp[1] @ us[1])
            hh = np.tanh(x[2] + (r * hp[2]) @ us[2])
            hn = z * h + (1 - z) * hh
        else:
            pre = x[0] + hp[0] @ us[0]
            hn = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0), "linear": lambda v: v}[
                activation
            ](pre)
        if mk is None:
            h, c, y = hn, cn, hn
        else:
            m = mk[t][:, None]
            h, c = np.where(m, hn, h), np.where(m, cn, c)
            y = np.where(m, hn, 0.0 if zero_output else y)
        outs.append(y)
    ys = np.stack(outs) if outs else np.zeros((0,) + h0.shape)
    if not time_major:
        ys = ys.transpose(1, 0, 2)
    first = ys if return_sequences else y
    return (first, h, c) if kind == "lstm" else (first, h)


def _data(kind, batch=3, steps=4, n=2, seed=0, masked=False, dropped=False, time_major=False):
    rng = np.random.default_rng(seed)
    g = GATES[kind]
    shape = (steps, batch, g * n) if time_major else (batch, steps, g * n)
    xw = rng.standard_normal(shape)
    h0, c0 = rng.standard_normal((batch, n)), rng.standard_normal((batch, n))
    u, b = rng.standard_normal((n, g * n)) * 0.7, rng.standard_normal(g * n)
    mask = None
    if masked:
        mask = rng.random((steps, batch) if time_major else (batch, steps)) > 0.4
        # A row masked everywhere, a leading masked step, a trailing one.
        first = mask[:, 0] if time_major else mask[0]
        first[:] = False
        if time_major:
            mask[0, 1], mask[-1, 2] = False, False
        else:
            mask[1, 0], mask[2, -1] = False, False
    rmask = (rng.random((g, batch, n)) > 0.3) / 0.7 if dropped else None
    return xw, h0, c0, u, b, mask, rmask


def _call(kind, xw, h0, c0, u, b, mask, rmask, flags, activation="tanh"):
    tm, back, rs, zo = flags
    common = dict(mask=mask, recurrent_masks=rmask, time_major=tm, go_backwards=back,
                  return_sequences=rs, zero_output_for_mask=zo)  # fmt: skip
    if kind == "lstm":
        return rnn_ops.lstm_sequence(xw, h0, c0, u, **common)
    if kind in ("gru", "gru_v1"):
        return rnn_ops.gru_sequence(xw, h0, u, b, reset_after=kind == "gru", **common)
    return rnn_ops.simple_rnn_sequence(xw, h0, u, activation=activation, **common)


def _flat(outs):
    return tf.concat([tf.reshape(o, (-1,)) for o in outs], 0)


FLAGS = list(itertools.product([False, True], repeat=4))  # time_major, back, seqs, zero_out
CASES = [(k, m, d) for k in GATES for m in (False, True) for d in (False, True)]


@pytest.mark.parametrize("kind,masked,dropped", CASES)
def test_forward_matches_the_numpy_recurrence_for_every_flag(kind, masked, dropped):
    for flags in FLAGS:
        xw, h0, c0, u, b, mask, rmask = _data(kind, masked=masked, dropped=dropped,
                                               time_major=flags[0])  # fmt: skip
        xw, h0, c0, u, b = (a.astype(np.float32) for a in (xw, h0, c0, u, b))
        rmask = None if rmask is None else rmask.astype(np.float32)
        got = _call(kind, tf.constant(xw), tf.constant(h0), tf.constant(c0), tf.constant(u),
                    tf.constant(b), mask, rmask, flags)  # fmt: skip
        want = reference(kind, xw, h0, c0, u, b, mask, rmask, *flags)
        for g, w in zip(got, want):
            assert g.dtype == tf.float32
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5, err_msg=str(flags))


@pytest.mark.parametrize("kind,masked,dropped", CASES)
def test_gradients_match_float64_differences(kind, masked, dropped):
    # Every input's gradient through every output, for a few flag combinations.
    for flags in [(False, False, True, False), (True, True, False, False),
                  (False, True, True, True)]:  # fmt: skip
        xw, h0, c0, u, b, mask, rmask = _data(kind, masked=masked, dropped=dropped,
                                               time_major=flags[0], seed=1)  # fmt: skip
        c0_ = c0 if kind == "lstm" else None
        b_ = b if kind in ("gru", "gru_v1") else None

        def fn(*ts, mask=mask, rmask=rmask, flags=flags, c0_=c0_, b_=b_):
            xw, h0, *rest = ts
            c0 = rest.pop(0) if c0_ is not None else None
            u = rest.pop(0)
            b = rest.pop(0) if b_ is not None else None
            return _flat(_call(kind, xw, h0, c0, u, b, mask, rmask, flags))

        inputs = [a for a in (xw, h0, c0_, u, b_) if a is not None]
        check_op(fn, inputs, None, dtypes=("float64",), grad_rtol=1e-5, grad_atol=1e-7)


@pytest.mark.parametrize("activation", ["tanh", "relu", "linear"])
def test_simple_rnn_activations_forward_and_gradient(activation):
    xw, h0, _, u, _, mask, _ = _data("simple", masked=True, seed=2)
    flags = (False, False, True, False)
    fn = lambda xw, h0, u: _flat(  # noqa: E731
        _call("simple", xw, h0, None, u, None, mask, None, flags, activation)
    )
    ref = lambda xw, h0, u: np.concatenate(  # noqa: E731
        [
            o.ravel()
            for o in reference(
                "simple", xw, h0, None, u, None, mask, None, *flags, activation=activation
            )
        ]  # fmt: skip
    )
    check_op(fn, [xw, h0, u], ref, dtypes=("float64",), grad_atol=1e-7)


@pytest.mark.parametrize("kind", ["lstm", "gru", "gru_v1", "simple"])
def test_gradient_recomputes_when_the_forward_kept_no_residual(kind):
    # The gradient op called with memo=None (a forward run outside any tape) gives the same
    # gradients as the tape's, which used the forward's saved activations.
    xw, h0, c0, u, b, mask, rmask = _data(kind, masked=True, dropped=True, seed=3)
    ts = [tf.constant(a) for a in (xw, h0, c0, u, b)]
    flags = (False, True, True, False)
    with tf.GradientTape() as tape:
        tape.watch(ts)
        outs = _call(kind, *ts, mask, rmask, flags)
        loss = tf.reduce_sum(_flat(outs) ** 2)
    taped = tape.gradient(loss, ts)
    dys = [2.0 * o for o in outs]
    seq = rnn_ops.Seq(*flags)
    m, r = tf.constant(mask), tf.constant(rmask)
    extras = (True, True)
    if kind == "lstm":
        direct = rnn_ops._lstm_grad([*dys, *ts[:4], m, r], seq, extras, None)
        pairs = zip(direct, [taped[0], taped[1], taped[2], taped[3]])
    elif kind == "simple":
        direct = rnn_ops._simple_grad([*dys, ts[0], ts[1], ts[3], m, r], seq, extras, "tanh",
                                      None)  # fmt: skip
        pairs = zip(direct, [taped[0], taped[1], taped[3]])
    else:
        direct = rnn_ops._gru_grad([*dys, ts[0], ts[1], ts[3], ts[4], m, r], seq, extras,
                                   kind == "gru", None)  # fmt: skip
        pairs = zip(direct, [taped[0], taped[1], taped[3], taped[4]])
    for d, t in pairs:
        if t is None:  # gru_v1 leaves the recurrent bias unused
            assert not np.any(d.numpy())
            continue
        np.testing.assert_allclose(d.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_no_residual_is_kept_without_a_tape():
    xw, h0, c0, u, *_ = _data("lstm")
    seq = rnn_ops.Seq()
    _, memo = rnn_ops._lstm_forward(np, xw, h0, c0, u, None, None, seq, False)
    assert memo is None


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple"])
def test_second_derivatives_raise_a_clear_error(kind):
    xw, h0, c0, u, b, *_ = _data(kind)
    ts = [tf.constant(a) for a in (xw, h0, c0, u, b)]
    with tf.GradientTape() as outer:
        outer.watch(ts[3])
        with tf.GradientTape() as inner:
            inner.watch(ts[3])
            loss = tf.reduce_sum(_call(kind, *ts, None, None, (False, False, True, False))[0])
        g = inner.gradient(loss, ts[3])
        second = tf.reduce_sum(g * g)
    with pytest.raises(errors.UnimplementedError, match="Second derivatives"):
        outer.gradient(second, ts[3])


def test_gradients_keep_float32_and_skip_unconnected_outputs():
    xw, h0, c0, u = (a.astype(np.float32) for a in _data("lstm")[:4])
    ts = [tf.Variable(a) for a in (xw, h0, c0, u)]
    with tf.GradientTape() as tape:
        y, _, _ = rnn_ops.lstm_sequence(*ts)  # the states' gradients arrive as zeros
        loss = tf.reduce_sum(y)
    grads = tape.gradient(loss, ts)
    assert all(g.dtype == tf.float32 for g in grads)
    # Against float64 differences of the same float32 weights, loosely.
    f64 = [tf.constant(a.astype(np.float64)) for a in (xw, h0, c0, u)]
    with tf.GradientTape() as tape:
        tape.watch(f64)
        loss64 = tf.reduce_sum(rnn_ops.lstm_sequence(*f64)[0])
    for g32, g64 in zip(grads, tape.gradient(loss64, f64)):
        np.testing.assert_allclose(g32.numpy(), g64.numpy(), rtol=1e-4, atol=1e-5)


def test_bad_shapes_are_reported_with_the_expected_sizes():
    xw, h0, c0, u, *_ = _data("lstm")
    with pytest.raises(errors.InvalidArgumentError, match="last dimension of xw must be 8"):
        rnn_ops.lstm_sequence(tf.constant(xw[..., :7]), tf.constant(h0), tf.constant(c0),
                              tf.constant(u))  # fmt: skip
    with pytest.raises(errors.InvalidArgumentError, match=r"mask must have shape \(3, 4\)"):
        rnn_ops.lstm_sequence(tf.constant(xw), tf.constant(h0), tf.constant(c0), tf.constant(u),
                              mask=np.ones((4, 3), bool))  # fmt: skip
    with pytest.raises(ValueError, match="activation must be one of"):
        rnn_ops.simple_rnn_sequence(
            tf.constant(xw[..., :2]), tf.constant(h0), tf.constant(u[:, :2]), activation="elu"
        )
