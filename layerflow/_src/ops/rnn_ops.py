"""Whole-sequence recurrent ops: SimpleRNN, LSTM and GRU over every time step as ONE op each.

A recurrent layer composed step by step records a dozen tape nodes per time step and walks
them back one by one. Here the input projection `x @ kernel + bias` of all steps is one GEMM
done by the caller (composed with `matmul`, whose gradient is again one GEMM), and the op
runs the recurrence: per step one GEMM `h @ recurrent_kernel` for all gates at once and the
gate nonlinearities in place. Its gradient is one op too: back-propagation through time in a
loop over arrays, then one GEMM for the recurrent kernel's gradient over all steps.

Layout and gate order are Keras's: `xw` is `(batch, time, G*units)` (`(time, batch, ...)`
with `time_major`), gates LSTM i, f, c, o; GRU z, r, h; `recurrent_kernel` `(units, G*units)`.
Keras 2's step semantics are kept exactly:

- `mask` `(batch, time)` (bool): a masked step keeps the states and outputs the previous
  output (zeros before the first unmasked step), or zeros with `zero_output_for_mask`;
- `recurrent_masks` `(G, batch, units)`: recurrent dropout, one mask per gate multiplying
  the previous output before it meets that gate's block of the recurrent kernel (Keras 2's
  `implementation=1`, which recurrent dropout forces);
- `go_backwards`: the steps run from the last to the first, and the output sequence comes
  in that processing order (as Keras returns it).

The forward keeps, while a tape records, the gate activations and states as its residual
(see `autodiff/op.py`); the gradient op recomputes them when that memo is absent. Second
derivatives through these ops are not supported: the gradient op's own gradient raises
`UnimplementedError` (differentiate a per-step composition, `tf.keras.layers.RNN` with a
custom cell, when you need them).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from layerflow._src import backend
from layerflow._src.autodiff.op import autocast_values, op, recording
from layerflow._src.backend import blas_threads
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import to_array
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops import compare_ops

__all__ = ["gru_sequence", "lstm_sequence", "simple_rnn_sequence"]


class Seq(NamedTuple):
    """How the op walks the sequence (an attribute of every sequence op)."""

    time_major: bool = False
    go_backwards: bool = False
    return_sequences: bool = True
    zero_output_for_mask: bool = False


# Which optional inputs follow an op's tensors: (a mask, recurrent dropout masks).
Extras = tuple[bool, bool]


def _split(arrays: list[Any], n: int, extras: Extras) -> list[Any]:
    """An op's `n` leading arrays, then its mask and recurrent masks (None when absent)."""
    rest = iter(arrays[n:])
    return [*arrays[:n], *[next(rest) if present else None for present in extras]]


# --- helpers on arrays ----------------------------------------------------------------------


def _sigmoid_(xp: Any, a: Any) -> Any:
    """sigmoid(a) in place, as 0.5 * tanh(0.5 a) + 0.5: one transcendental, never overflows."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5
    return a


def _time_first(a: Any, seq: Seq) -> Any:
    return a if seq.time_major else a.swapaxes(0, 1)


def _sequence_start(xp: Any, xw: Any, h0: Any, mask: Any, seq: Seq) -> tuple[Any, Any, Any]:
    """A forward's time-major inputs `xs` and mask `mk` ([T, B, 1] or None), and the state
    buffer `hs` ([T + 1, B, n], `hs[0] = h0`) every recurrence fills."""
    xs = _time_first(xw, seq)
    mk = None if mask is None else _time_first(mask, seq)[:, :, None]
    hs = xp.empty((xs.shape[0] + 1, xs.shape[1], h0.shape[-1]), dtype=xw.dtype)
    hs[0] = h0
    return xs, mk, hs


def _order(n: int, seq: Seq) -> range:
    return range(n - 1, -1, -1) if seq.go_backwards else range(n)


def _rec(xp: Any, h: Any, u: Any, rmask: Any, gates: int) -> Any:
    """h @ u, each gate's block of u meeting h times that gate's recurrent dropout mask."""
    blas_threads.gemm(h.shape[0], u.shape[1], u.shape[0])
    if rmask is None:
        return xp.matmul(h, u)
    n = u.shape[1] // gates
    out = xp.empty((h.shape[0], u.shape[1]), dtype=h.dtype)
    for g in range(gates):
        xp.matmul(h * rmask[g], u[:, g * n : (g + 1) * n], out=out[:, g * n : (g + 1) * n])
    return out


def _rec_t(xp: Any, d: Any, u: Any, rmask: Any, gates: int) -> Any:
    """The gradient of `_rec` with respect to h."""
    blas_threads.gemm(d.shape[0], u.shape[0], u.shape[1])
    if rmask is None:
        return xp.matmul(d, u.T)
    n = u.shape[1] // gates
    out = xp.zeros((d.shape[0], u.shape[0]), dtype=d.dtype)
    for g in range(gates):
        out += xp.matmul(d[:, g * n : (g + 1) * n], u[:, g * n : (g + 1) * n].T) * rmask[g]
    return out


def _rec_kernel_grad(xp: Any, hprev: Any, d: Any, rmask: Any, gates: int) -> Any:
    """The gradient of `_rec` summed over all steps, with respect to u: one GEMM per gate."""
    h2 = hprev.reshape(-1, hprev.shape[-1])
    d2 = d.reshape(-1, d.shape[-1])
    blas_threads.gemm(h2.shape[1], d2.shape[1], h2.shape[0])
    if rmask is None:
        return xp.matmul(h2.T, d2)
    n = d.shape[-1] // gates
    out = xp.empty((hprev.shape[-1], d.shape[-1]), dtype=d.dtype)
    for g in range(gates):
        hg = (hprev * rmask[g]).reshape(h2.shape)
        xp.matmul(hg.T, d2[:, g * n : (g + 1) * n], out=out[:, g * n : (g + 1) * n])
    return out


class _Outputs:
    """The op's output sequence (or last output), written step by step in processing order."""

    def __init__(self, xp: Any, batch: int, steps: int, units: int, dtype: Any, seq: Seq,
                 masked: bool) -> None:  # fmt: skip
        self.seq = seq
        self.masked = masked
        self.y = xp.zeros((batch, units), dtype=dtype) if masked else None
        if seq.return_sequences:
            shape = (steps, batch, units) if seq.time_major else (batch, steps, units)
            self.out = xp.empty(shape, dtype=dtype)
            self.steps = _time_first(self.out, seq)
        else:
            self.out = None

    def write(self, xp: Any, k: int, hnew: Any, m: Any) -> None:
        if self.masked:
            if self.seq.zero_output_for_mask:
                self.y = hnew * m
            else:
                self.y = xp.where(m, hnew, self.y)
            if self.out is not None:
                self.steps[k] = self.y
        elif self.out is not None:
            self.steps[k] = hnew

    def result(self, h_last: Any) -> Any:
        if self.out is not None:
            return self.out
        return self.y if self.masked else h_last.copy()


def _incoming(xp: Any, k: int, last: int, dys: Any, seq: Seq) -> Any:
    """The gradient arriving at output step k from the op's output (None: nothing)."""
    if seq.return_sequences:
        return _time_first(dys, seq)[k]
    return dys if k == last else None


class _MaskGrad:
    """Back through Keras's masked step: state = where(m, new, old); output likewise."""

    def __init__(self, xp: Any, mask: Any, seq: Seq) -> None:
        self.xp = xp
        self.mask = None if mask is None else _time_first(mask, seq)[:, :, None]
        self.seq = seq
        self.carry = None  # the gradient reaching y_{k-1} through a masked step's output

    def split(self, t: int, dh: Any, gy: Any) -> tuple[Any, Any]:
        """(gradient reaching the step's new h, gradient passed on to the previous state)."""
        if self.mask is None:
            return (dh if gy is None else dh + gy), None
        m = self.mask[t]
        if self.carry is not None:
            gy = self.carry if gy is None else gy + self.carry
        if gy is not None and not self.seq.zero_output_for_mask:
            self.carry = gy * ~m
        dnew = dh if gy is None else dh + gy
        return dnew * m, dh * ~m

    def keep(self, t: int, dc: Any) -> tuple[Any, Any]:
        if self.mask is None:
            return dc, None
        m = self.mask[t]
        return dc * m, dc * ~m


def _no_second_order(name: str) -> Any:
    def grad(*args: Any, **kwargs: Any) -> Any:
        raise errors.UnimplementedError(
            None,
            name,
            f"Second derivatives through the fused recurrent op {name!r} are not supported "
            "(its gradient, back-propagation through time, is not itself differentiable). "
            "For higher-order gradients use tf.keras.layers.RNN with a custom cell, which "
            "composes ordinary ops step by step.",
        )

    return grad


# --- LSTM -------------------------------------------------------------------------------------


def _lstm_forward(xp: Any, xw: Any, h0: Any, c0: Any, u: Any, mask: Any, rmask: Any, seq: Seq,
                  keep: bool) -> Any:  # fmt: skip
    xs, mk, hs = _sequence_start(xp, xw, h0, mask, seq)
    steps, batch, n = hs.shape[0] - 1, hs.shape[1], hs.shape[2]
    dt = xw.dtype
    cs = xp.empty((steps + 1, batch, n), dtype=dt)
    cs[0] = c0
    acts = xp.empty((steps, batch, 4 * n), dtype=dt) if keep else None
    tcs = xp.empty((steps, batch, n), dtype=dt) if keep else None
    outs = _Outputs(xp, batch, steps, n, dt, seq, mk is not None)
    for k, t in enumerate(_order(steps, seq)):
        z = _rec(xp, hs[k], u, rmask, 4)
        z += xs[t]
        _sigmoid_(xp, z[:, : 2 * n])
        xp.tanh(z[:, 2 * n : 3 * n], out=z[:, 2 * n : 3 * n])
        _sigmoid_(xp, z[:, 3 * n :])
        i, f, g, o = z[:, :n], z[:, n : 2 * n], z[:, 2 * n : 3 * n], z[:, 3 * n :]
        c = f * cs[k]
        c += i * g
        tc = xp.tanh(c)
        h = o * tc
        if mk is None:
            hs[k + 1] = h
            cs[k + 1] = c
            outs.write(xp, k, h, None)
        else:
            m = mk[t]
            hs[k + 1] = xp.where(m, h, hs[k])
            cs[k + 1] = xp.where(m, c, cs[k])
            outs.write(xp, k, h, m)
        if keep:
            acts[k] = z
            tcs[k] = tc
    result = (outs.result(hs[steps]), hs[steps].copy(), cs[steps].copy())
    return result, ((hs, cs, acts, tcs) if keep else None)


@op("lstm_sequence", list_input=True, multi_out=True, same_dtype=False, saves=True)
def _lstm(xp: Any, arrays: list[Any], seq: Seq, extras: Extras) -> Any:
    xw, h0, c0, u, mask, rmask = _split(arrays, 4, extras)
    return _lstm_forward(xp, xw, h0, c0, u, mask, rmask, seq, recording())


@_lstm.grad
def _(dy: Any, out: Any, inputs: list[Any], seq: Seq, extras: Extras,
      saved: Any = None) -> Any:  # fmt: skip
    grads = _lstm_grad([dy[0], dy[1], dy[2], *inputs], seq, extras, saved)
    return [*grads, *[None] * (len(inputs) - 4)]


@op("lstm_sequence_grad", list_input=True, multi_out=True, same_dtype=False)
def _lstm_grad(xp: Any, arrays: list[Any], seq: Seq, extras: Extras, memo: Any) -> Any:
    """Back-propagation through time for `lstm_sequence`: (dxw, dh0, dc0, du). `arrays` are
    the output gradients (sequence, h, c) and the forward's inputs."""
    dys, dh_last, dc_last, xw, h0, c0, u, mask, rmask = _split(arrays, 7, extras)
    if memo is None:
        memo = _lstm_forward(xp, xw, h0, c0, u, mask, rmask, seq, True)[1]
    hs, cs, acts, tcs = memo
    steps, n = acts.shape[0], h0.shape[-1]
    order = _order(steps, seq)
    grads = _MaskGrad(xp, mask, seq)
    dz_all = xp.empty_like(acts)
    dh, dc = dh_last.copy(), dc_last.copy()
    for k in range(steps - 1, -1, -1):
        t = order[k]
        dhn, dh_pass = grads.split(t, dh, _incoming(xp, k, steps - 1, dys, seq))
        dcn, dc_pass = grads.keep(t, dc)
        z = acts[k]
        i, f, g, o = z[:, :n], z[:, n : 2 * n], z[:, 2 * n : 3 * n], z[:, 3 * n :]
        tc = tcs[k]
        dz = dz_all[k]
        # dc_total = dc + dh * o * (1 - tanh(c)^2)
        dct = 1 - tc * tc
        dct *= o
        dct *= dhn
        dct += dcn
        xp.multiply(dct, g, out=dz[:, :n])
        dz[:, :n] *= i * (1 - i)
        xp.multiply(dct, cs[k], out=dz[:, n : 2 * n])
        dz[:, n : 2 * n] *= f * (1 - f)
        xp.multiply(dct, i, out=dz[:, 2 * n : 3 * n])
        dz[:, 2 * n : 3 * n] *= 1 - g * g
        xp.multiply(dhn, tc, out=dz[:, 3 * n :])
        dz[:, 3 * n :] *= o * (1 - o)
        dc = dct * f
        if dc_pass is not None:
            dc += dc_pass
        dh = _rec_t(xp, dz, u, rmask, 4)
        if dh_pass is not None:
            dh += dh_pass
    du = _rec_kernel_grad(xp, hs[:-1], dz_all, rmask, 4)
    return _input_grad(xp, dz_all, seq), dh, dc, du


_lstm_grad.grad(_no_second_order("lstm_sequence"))


def _input_grad(xp: Any, d_steps: Any, seq: Seq) -> Any:
    """The gradients per processing step, back in the layout and order of `xw`."""
    if seq.go_backwards:
        d_steps = d_steps[::-1]
    if not seq.time_major:
        d_steps = d_steps.swapaxes(0, 1)
    return xp.ascontiguousarray(d_steps)


# --- GRU --------------------------------------------------------------------------------------


def _gru_forward(xp: Any, xw: Any, h0: Any, u: Any, b: Any, mask: Any, rmask: Any, seq: Seq,
                 reset_after: bool, keep: bool) -> Any:  # fmt: skip
    xs, mk, hs = _sequence_start(xp, xw, h0, mask, seq)
    steps, batch, n = hs.shape[0] - 1, hs.shape[1], hs.shape[2]
    dt = xw.dtype
    zr_all = xp.empty((steps, batch, 2 * n), dtype=dt) if keep else None
    hh_all = xp.empty((steps, batch, n), dtype=dt) if keep else None
    # reset_after: r's partner h @ U_h + b_h; before: the product r * h that meets U_h.
    aux_all = xp.empty((steps, batch, n), dtype=dt) if keep else None
    outs = _Outputs(xp, batch, steps, n, dt, seq, mk is not None)
    rm_zr = None if rmask is None else rmask[:2]
    for k, t in enumerate(_order(steps, seq)):
        h_prev = hs[k]
        x = xs[t]
        if reset_after:
            hu = _rec(xp, h_prev, u, rmask, 3)
            hu += b
            zr = hu[:, : 2 * n]
            zr += x[:, : 2 * n]
            _sigmoid_(xp, zr)
            aux = hu[:, 2 * n :]
            hh = zr[:, n:] * aux
        else:
            zr = _rec(xp, h_prev, u[:, : 2 * n], rm_zr, 2)
            zr += x[:, : 2 * n]
            _sigmoid_(xp, zr)
            h_h = h_prev if rmask is None else h_prev * rmask[2]
            aux = zr[:, n:] * h_h
            hh = xp.matmul(aux, u[:, 2 * n :])
        hh += x[:, 2 * n :]
        xp.tanh(hh, out=hh)
        z = zr[:, :n]
        h = h_prev - hh
        h *= z
        h += hh
        if mk is None:
            hs[k + 1] = h
            outs.write(xp, k, h, None)
        else:
            m = mk[t]
            hs[k + 1] = xp.where(m, h, h_prev)
            outs.write(xp, k, h, m)
        if keep:
            zr_all[k] = zr
            hh_all[k] = hh
            aux_all[k] = aux
    result = (outs.result(hs[steps]), hs[steps].copy())
    return result, ((hs, zr_all, hh_all, aux_all) if keep else None)


@op("gru_sequence", list_input=True, multi_out=True, same_dtype=False, saves=True)
def _gru(xp: Any, arrays: list[Any], seq: Seq, extras: Extras, reset_after: bool) -> Any:
    xw, h0, u, b, mask, rmask = _split(arrays, 4, extras)
    return _gru_forward(xp, xw, h0, u, b, mask, rmask, seq, reset_after, recording())


@_gru.grad
def _(dy: Any, out: Any, inputs: list[Any], seq: Seq, extras: Extras, reset_after: bool,
      saved: Any = None) -> Any:  # fmt: skip
    grads = _gru_grad([dy[0], dy[1], *inputs], seq, extras, reset_after, saved)
    return [*grads, *[None] * (len(inputs) - 4)]


@op("gru_sequence_grad", list_input=True, multi_out=True, same_dtype=False)
def _gru_grad(xp: Any, arrays: list[Any], seq: Seq, extras: Extras, reset_after: bool,
              memo: Any) -> Any:  # fmt: skip
    """Back-propagation through time for `gru_sequence`: (dxw, dh0, du, db)."""
    dys, dh_last, xw, h0, u, b, mask, rmask = _split(arrays, 6, extras)
    if memo is None:
        memo = _gru_forward(xp, xw, h0, u, b, mask, rmask, seq, reset_after, True)[1]
    hs, zr_all, hh_all, aux_all = memo
    steps, n = hh_all.shape[0], h0.shape[-1]
    order = _order(steps, seq)
    grads = _MaskGrad(xp, mask, seq)
    dx_all = xp.empty((steps, h0.shape[0], 3 * n), dtype=xw.dtype)
    # The gradient of the recurrent products: all gates (reset_after), or U_h's alone.
    dhu_all = xp.empty_like(dx_all) if reset_after else xp.empty_like(hh_all)
    dh = dh_last.copy()
    for k in range(steps - 1, -1, -1):
        t = order[k]
        dhn, dh_pass = grads.split(t, dh, _incoming(xp, k, steps - 1, dys, seq))
        z, r = zr_all[k][:, :n], zr_all[k][:, n:]
        hh, aux, h_prev = hh_all[k], aux_all[k], hs[k]
        dx = dx_all[k]
        dpre_h = dx[:, 2 * n :]
        xp.multiply(dhn, 1 - z, out=dpre_h)
        dpre_h *= 1 - hh * hh
        xp.multiply(dhn, h_prev - hh, out=dx[:, :n])
        dx[:, :n] *= z * (1 - z)
        dh = dhn * z
        if reset_after:
            xp.multiply(dpre_h, aux, out=dx[:, n : 2 * n])
            dx[:, n : 2 * n] *= r * (1 - r)
            dhu = dhu_all[k]
            dhu[:, : 2 * n] = dx[:, : 2 * n]
            xp.multiply(dpre_h, r, out=dhu[:, 2 * n :])
            dh += _rec_t(xp, dhu, u, rmask, 3)
        else:
            dhu_all[k] = dpre_h
            drh = xp.matmul(dpre_h, u[:, 2 * n :].T)
            h_h = h_prev if rmask is None else h_prev * rmask[2]
            xp.multiply(drh, h_h, out=dx[:, n : 2 * n])
            dx[:, n : 2 * n] *= r * (1 - r)
            rm_zr = None if rmask is None else rmask[:2]
            dh += _rec_t(xp, dx[:, : 2 * n], u[:, : 2 * n], rm_zr, 2)
            drh *= r
            if rmask is not None:
                drh *= rmask[2]
            dh += drh
        if dh_pass is not None:
            dh += dh_pass
    if reset_after:
        du = _rec_kernel_grad(xp, hs[:-1], dhu_all, rmask, 3)
        db = dhu_all.reshape(-1, 3 * n).sum(axis=0)
    else:
        du = xp.empty_like(u)
        rm_zr = None if rmask is None else rmask[:2]
        du[:, : 2 * n] = _rec_kernel_grad(xp, hs[:-1], dx_all[:, :, : 2 * n], rm_zr, 2)
        du[:, 2 * n :] = _rec_kernel_grad(xp, aux_all, dhu_all, None, 1)
        db = xp.zeros_like(b)
    return _input_grad(xp, dx_all, seq), dh, du, db.reshape(b.shape)


_gru_grad.grad(_no_second_order("gru_sequence"))


# --- SimpleRNN --------------------------------------------------------------------------------

SIMPLE_ACTIVATIONS = ("tanh", "relu", "linear")


def _simple_forward(xp: Any, xw: Any, h0: Any, u: Any, mask: Any, rmask: Any, seq: Seq,
                    activation: str, keep: bool) -> Any:  # fmt: skip
    xs, mk, hs = _sequence_start(xp, xw, h0, mask, seq)
    steps, batch, n = hs.shape[0] - 1, hs.shape[1], hs.shape[2]
    dt = xw.dtype
    # The raw new outputs: the masked states differ from them at masked steps.
    raw = xp.empty((steps, batch, n), dtype=dt) if keep and mk is not None else None
    outs = _Outputs(xp, batch, steps, n, dt, seq, mk is not None)
    for k, t in enumerate(_order(steps, seq)):
        h = _rec(xp, hs[k], u, rmask, 1)
        h += xs[t]
        if activation == "tanh":
            xp.tanh(h, out=h)
        elif activation == "relu":
            xp.maximum(h, 0, out=h)
        if mk is None:
            hs[k + 1] = h
            outs.write(xp, k, h, None)
        else:
            m = mk[t]
            hs[k + 1] = xp.where(m, h, hs[k])
            outs.write(xp, k, h, m)
            if keep:
                raw[k] = h
    result = (outs.result(hs[steps]), hs[steps].copy())
    return result, ((hs, raw) if keep else None)


@op("simple_rnn_sequence", list_input=True, multi_out=True, same_dtype=False, saves=True)
def _simple(xp: Any, arrays: list[Any], seq: Seq, extras: Extras, activation: str) -> Any:
    xw, h0, u, mask, rmask = _split(arrays, 3, extras)
    return _simple_forward(xp, xw, h0, u, mask, rmask, seq, activation, recording())


@_simple.grad
def _(dy: Any, out: Any, inputs: list[Any], seq: Seq, extras: Extras, activation: str,
      saved: Any = None) -> Any:  # fmt: skip
    grads = _simple_grad([dy[0], dy[1], *inputs], seq, extras, activation, saved)
    return [*grads, *[None] * (len(inputs) - 3)]


@op("simple_rnn_sequence_grad", list_input=True, multi_out=True, same_dtype=False)
def _simple_grad(xp: Any, arrays: list[Any], seq: Seq, extras: Extras, activation: str,
                 memo: Any) -> Any:  # fmt: skip
    """Back-propagation through time for `simple_rnn_sequence`: (dxw, dh0, du)."""
    dys, dh_last, xw, h0, u, mask, rmask = _split(arrays, 5, extras)
    if memo is None:
        memo = _simple_forward(xp, xw, h0, u, mask, rmask, seq, activation, True)[1]
    hs, raw = memo
    new = hs[1:] if raw is None else raw
    steps = new.shape[0]
    order = _order(steps, seq)
    grads = _MaskGrad(xp, mask, seq)
    dpre_all = xp.empty_like(new)
    dh = dh_last.copy()
    for k in range(steps - 1, -1, -1):
        t = order[k]
        dhn, dh_pass = grads.split(t, dh, _incoming(xp, k, steps - 1, dys, seq))
        dpre = dpre_all[k]
        if activation == "tanh":
            xp.multiply(dhn, 1 - new[k] * new[k], out=dpre)
        elif activation == "relu":
            xp.multiply(dhn, new[k] > 0, out=dpre)
        else:
            dpre[...] = dhn
        dh = _rec_t(xp, dpre, u, rmask, 1)
        if dh_pass is not None:
            dh += dh_pass
    du = _rec_kernel_grad(xp, hs[:-1], dpre_all, rmask, 1)
    return _input_grad(xp, dpre_all, seq), dh, du


_simple_grad.grad(_no_second_order("simple_rnn_sequence"))


# --- public functions -------------------------------------------------------------------------


def _attr(value: Any, like: Any, dtype: Any, what: str, shape: tuple) -> Any:
    """A mask argument as a tensor input of the op (masks are not differentiated): eager
    values on `like`'s device; inside a `tf.function` trace a symbolic mask is a traced input,
    so a masked RNN compiles."""
    if value is None:
        return None
    if not isinstance(value, TensorLike) and hasattr(value, "_data"):  # symbolic
        if value._data.dtype != dtype.np:
            value = compare_ops.cast(value, dtype)
        got = tuple(value._data.shape)
        if len(got) != len(shape) or any(g is not None and g != w for g, w in zip(got, shape)):
            raise errors.InvalidArgumentError(
                None, what, f"{what} must have shape {shape}, got {got}."
            )
        return value
    data = to_array(value, None, like._device)
    if data.dtype != dtype.np:
        data = data.astype(dtype.np)
    if tuple(data.shape) != shape:
        raise errors.InvalidArgumentError(
            None, what, f"{what} must have shape {shape}, got {tuple(data.shape)}."
        )
    return Tensor(data, like._device)


def _prepare(xw: Any, tensors: dict[str, Any], gates: int, mask: Any, recurrent_masks: Any,
             seq: Seq, opname: str) -> tuple[list[Any], Extras]:  # fmt: skip
    """The op's tensor inputs (`tensors`, then the masks present) and its `extras`."""
    if backend.flags.autocast is not None:  # a mixed-precision layer reads its float32 kernels
        tensors = dict(zip(tensors, autocast_values(list(tensors.values()))))
    h0, u = tensors["h0"], tensors["recurrent_kernel"]
    for name, t in (("xw", xw), *tensors.items()):
        # (a symbolic tensor of a tf.function trace has its spec as `_data`)
        if not isinstance(t, TensorLike) and not hasattr(t, "_data"):
            raise TypeError(f"{opname}: {name} must be a tensor, got {type(t).__name__}.")
        if t._data.dtype != xw._data.dtype:
            first, second = (dtypes.from_numpy(a._data.dtype).name for a in (xw, t))
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: all inputs must have the same dtype, got {first} and {second}. "
                f"Cast one of them with tf.cast(x, tf.{first}).",
            )
    shape = tuple(xw._data.shape)
    if len(shape) != 3:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: xw must be 3-D (batch, time, gates*units), got {shape}."
        )
    units = h0._data.shape[-1]
    steps, batch = (shape[0], shape[1]) if seq.time_major else (shape[1], shape[0])
    if shape[2] != gates * units or tuple(u._data.shape) != (units, gates * units):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: with {units} units the last dimension of xw must be {gates * units} and "
            f"the recurrent kernel ({units}, {gates * units}); got xw {shape} and recurrent "
            f"kernel {tuple(u._data.shape)}.",
        )
    mask_shape = (steps, batch) if seq.time_major else (batch, steps)
    m = _attr(mask, xw, dtypes.bool_, f"{opname}: mask", mask_shape)
    r = _attr(recurrent_masks, xw, dtypes.from_numpy(xw._data.dtype),
              f"{opname}: recurrent_masks", (gates, batch, units))  # fmt: skip
    inputs = [xw, *tensors.values(), *[t for t in (m, r) if t is not None]]
    return inputs, (m is not None, r is not None)


def lstm_sequence(xw: Any, h0: Any, c0: Any, recurrent_kernel: Any, mask: Any = None,
                  recurrent_masks: Any = None, time_major: bool = False,
                  go_backwards: bool = False, return_sequences: bool = True,
                  zero_output_for_mask: bool = False) -> tuple[Any, Any, Any]:  # fmt: skip
    """An LSTM over a whole sequence: `(outputs, h, c)`; `xw` is `x @ kernel + bias`.

    >>> import layerflow as tf
    >>> y, h, c = lstm_sequence(tf.zeros((2, 5, 12)), tf.zeros((2, 3)), tf.zeros((2, 3)),
    ...                         tf.zeros((3, 12)))
    >>> tuple(y.shape), tuple(h.shape)
    ((2, 5, 3), (2, 3))
    """
    seq = Seq(bool(time_major), bool(go_backwards), bool(return_sequences),
              bool(zero_output_for_mask))  # fmt: skip
    tensors = {"h0": h0, "c0": c0, "recurrent_kernel": recurrent_kernel}
    inputs, extras = _prepare(xw, tensors, 4, mask, recurrent_masks, seq, "lstm_sequence")
    return _lstm(inputs, seq, extras)


def gru_sequence(xw: Any, h0: Any, recurrent_kernel: Any, recurrent_bias: Any,
                 reset_after: bool = True, mask: Any = None, recurrent_masks: Any = None,
                 time_major: bool = False, go_backwards: bool = False,
                 return_sequences: bool = True,
                 zero_output_for_mask: bool = False) -> tuple[Any, Any]:  # fmt: skip
    """A GRU over a whole sequence: `(outputs, h)`; `xw` is `x @ kernel + input bias`.

    `recurrent_bias` (3 * units) is added to `h @ recurrent_kernel` (reset_after, Keras 2's
    default); with `reset_after=False` it is unused (pass zeros).

    >>> import layerflow as tf
    >>> y, h = gru_sequence(tf.zeros((2, 5, 9)), tf.zeros((2, 3)), tf.zeros((3, 9)),
    ...                     tf.zeros((9,)))
    >>> tuple(y.shape)
    (2, 5, 3)
    """
    seq = Seq(bool(time_major), bool(go_backwards), bool(return_sequences),
              bool(zero_output_for_mask))  # fmt: skip
    tensors = {"h0": h0, "recurrent_kernel": recurrent_kernel, "recurrent_bias": recurrent_bias}
    inputs, extras = _prepare(xw, tensors, 3, mask, recurrent_masks, seq, "gru_sequence")
    return _gru(inputs, seq, extras, bool(reset_after))


def simple_rnn_sequence(xw: Any, h0: Any, recurrent_kernel: Any, activation: str = "tanh",
                        mask: Any = None, recurrent_masks: Any = None, time_major: bool = False,
                        go_backwards: bool = False, return_sequences: bool = True,
                        zero_output_for_mask: bool = False) -> tuple[Any, Any]:  # fmt: skip
    """A simple RNN, `h = activation(xw_t + h @ recurrent_kernel)`, over a whole sequence.

    `activation` is "tanh", "relu" or "linear". Returns `(outputs, h)`.

    >>> import layerflow as tf
    >>> y, h = simple_rnn_sequence(tf.ones((1, 2, 1)), tf.zeros((1, 1)), tf.ones((1, 1)),
    ...                            activation="linear")
    >>> y.numpy().ravel().tolist()
    [1.0, 2.0]
    """
    if activation not in SIMPLE_ACTIVATIONS:
        raise ValueError(
            f"simple_rnn_sequence: activation must be one of {SIMPLE_ACTIVATIONS}, got "
            f"{activation!r}."
        )
    seq = Seq(bool(time_major), bool(go_backwards), bool(return_sequences),
              bool(zero_output_for_mask))  # fmt: skip
    tensors = {"h0": h0, "recurrent_kernel": recurrent_kernel}
    inputs, extras = _prepare(xw, tensors, 1, mask, recurrent_masks, seq, "simple_rnn_sequence")
    return _simple(inputs, seq, extras, activation)
