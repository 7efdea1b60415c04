"""N-D NumPy references (channels last) for the convolution-family tests: direct tap loops,
independent of layerflow's im2col kernels and of the compositions under test."""

import itertools

import numpy as np


def pads(n, k, s, d, padding):
    """(output size, pad before, pad after) along one axis, as TF computes them."""
    eff = (k - 1) * d + 1
    if padding == "VALID":
        return (n - eff) // s + 1, 0, 0
    out = -(-n // s)
    total = max((out - 1) * s + eff - n, 0)
    return out, total // 2, total - total // 2


def conv_ref(x, w, strides, padding, dilations=None):
    """x [N, *S, C], w [*K, C, O]."""
    m = x.ndim - 2
    dilations = dilations or (1,) * m
    geo = [pads(x.shape[1 + i], w.shape[i], strides[i], dilations[i], padding) for i in range(m)]
    xp = np.pad(x, [(0, 0)] + [(b, a) for _, b, a in geo] + [(0, 0)])
    out = np.zeros((x.shape[0], *(o for o, _, _ in geo), w.shape[-1]))
    for tap in itertools.product(*(range(k) for k in w.shape[:m])):
        key = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                    for t, d, (o, _, _), s in zip(tap, dilations, geo, strides))  # fmt: skip
        out += xp[(slice(None), *key)] @ w[tap]
    return out


def conv_transpose_ref(y, w, x_shape, strides, padding, dilations=None):
    """The adjoint of conv_ref: y [N, *OS, O], w [*K, C, O] -> [N, *S, C] (= x_shape)."""
    m = y.ndim - 2
    dilations = dilations or (1,) * m
    geo = [pads(x_shape[1 + i], w.shape[i], strides[i], dilations[i], padding) for i in range(m)]
    padded = [x_shape[1 + i] + b + a for i, (_, b, a) in enumerate(geo)]
    out = np.zeros((x_shape[0], *padded, x_shape[-1]))
    for tap in itertools.product(*(range(k) for k in w.shape[:m])):
        key = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                    for t, d, (o, _, _), s in zip(tap, dilations, geo, strides))  # fmt: skip
        out[(slice(None), *key)] += y @ w[tap].T
    crop = tuple(slice(b, b + x_shape[1 + i]) for i, (_, b, _) in enumerate(geo))
    return out[(slice(None), *crop)]


def pool_ref(x, k, strides, padding, kind):
    m = x.ndim - 2
    geo = [pads(x.shape[1 + i], k[i], strides[i], 1, padding) for i in range(m)]
    out = np.zeros((x.shape[0], *(o for o, _, _ in geo), x.shape[-1]))
    for idx in itertools.product(*(range(o) for o, _, _ in geo)):
        key = tuple(slice(max(j * s - b, 0), j * s - b + kk)
                    for j, s, (_, b, _), kk in zip(idx, strides, geo, k))  # fmt: skip
        win = x[(slice(None), *key)]
        axes = tuple(range(1, m + 1))
        out[(slice(None), *idx)] = win.max(axes) if kind == "max" else win.mean(axes)
    return out
