"""Cases run on both tf_keras's `keras.backend` (by fixtures/make_backend_fixture.py) and
layerflow's (by test_backend_oracle.py). Each case takes (tf, K) and returns arrays."""

import numpy as np

rng = np.random.default_rng(3)
A = rng.standard_normal((2, 3, 4)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
C = rng.standard_normal((4, 3, 2)).astype(np.float32)
M = rng.standard_normal((2, 3)).astype(np.float32)
P = rng.random((2, 3, 4)).astype(np.float32) + 0.05
IMG = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
VOL = rng.standard_normal((1, 4, 4, 4, 2)).astype(np.float32)
KER = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
DW = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
PW = rng.standard_normal((1, 1, 6, 4)).astype(np.float32)
SEQ = rng.standard_normal((2, 7, 3)).astype(np.float32)
K1 = rng.standard_normal((3, 3, 5)).astype(np.float32)
K3 = rng.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)
ONEHOT = np.eye(4, dtype=np.float32)[[[0, 3, 1], [2, 2, 0]]]
LABELS = np.array([[0, 3, 1], [2, 2, 0]], dtype=np.int32)
BIN = (rng.random((2, 3, 4)) > 0.5).astype(np.float32)


NAMES = [
    "A",
    "B",
    "C",
    "M",
    "P",
    "IMG",
    "VOL",
    "KER",
    "DW",
    "PW",
    "SEQ",
    "K1",
    "K3",
    "ONEHOT",
    "LABELS",
    "BIN",
    "SEQ_CTC",
    "L1",
    "L2",
]
ARRAYS = {}


def bind(tf):
    """Rebind the inputs as `tf` constants (tf_keras's backend wants tensors)."""
    g = globals()
    for n in NAMES:
        ARRAYS.setdefault(n, g[n])
        g[n] = tf.constant(ARRAYS[n])


def _grad(tf, fn, x):
    v = tf.Variable(ARRAYS[[n for n in NAMES if globals()[n] is x][0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(fn(v))
    return tape.gradient(y, v).numpy()


def _rnn(tf, K, **kw):
    w = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))

    def step(x, states):
        h = K.tanh(K.dot(x, w) + states[0] * 0.5)
        return h, [h]

    mask = np.array([[1, 1, 1, 0, 1, 0, 0], [1, 0, 1, 1, 1, 1, 1]], dtype=bool)
    use_mask = kw.pop("use_mask", False)
    last, outs, states = K.rnn(step, tf.constant(SEQ), [tf.zeros((2, 4))],
                               mask=tf.constant(mask) if use_mask else None, **kw)  # fmt: skip
    return last, outs, states[0]


CASES = {
    "mean": lambda tf, K: K.mean(A, 1, True),
    "mean_bool": lambda tf, K: K.mean(tf.constant(BIN > 0), axis=-1),
    "sum": lambda tf, K: K.sum(A, axis=[0, 2]),
    "max_min": lambda tf, K: (K.max(A, 2), K.min(A, 0, True)),
    "prod": lambda tf, K: K.prod(M, 1),
    "var_std": lambda tf, K: (K.var(A, 1), K.std(A, None), K.std(A, -1, True)),
    "cumsum_cumprod": lambda tf, K: (K.cumsum(A, 1), K.cumprod(M, 1)),
    "any_all": lambda tf, K: (K.any(BIN, 1), K.all(BIN, -1)),
    "argmax_argmin": lambda tf, K: (K.argmax(A), K.argmin(A, 1)),
    "elementwise": lambda tf, K: (
        K.square(A),
        K.abs(A),
        K.sqrt(A),
        K.exp(A),
        K.log(P),
        K.round(A * 3),
        K.sign(A),
        K.pow(P, 1.5),
        K.sin(A),
        K.cos(A),
    ),
    "clip": lambda tf, K: (K.clip(A, -0.5, 0.5), K.clip(A, 0.3, -1.0), K.clip(A, None, 0.2)),
    "compare": lambda tf, K: (
        K.equal(A, A),
        K.not_equal(A, 0.0),
        K.greater(A, 0.1),
        K.greater_equal(A, 0.1),
        K.less(A, 0.1),
        K.less_equal(A, 0.1),
        K.maximum(A, 0.0),
        K.minimum(A, 0.0),
    ),
    "dot_nd": lambda tf, K: K.dot(A, B),
    "dot_2d": lambda tf, K: K.dot(M, B[:3]),
    "dot_y_nd": lambda tf, K: K.dot(M, C),
    "batch_dot_default": lambda tf, K: K.batch_dot(A, tf.transpose(A[:, :, :4], (0, 2, 1))),
    "batch_dot_axes": lambda tf, K: K.batch_dot(A, A, axes=(1, 1)),
    "batch_dot_int": lambda tf, K: K.batch_dot(A, A, axes=2),
    "batch_dot_2d": lambda tf, K: K.batch_dot(M, M),
    "batch_dot_2d_3d": lambda tf, K: K.batch_dot(M, A, axes=(1, 1)),
    "batch_dot_4d": lambda tf, K: K.batch_dot(IMG, IMG, axes=(3, 3)),
    "transpose_gather": lambda tf, K: (K.transpose(M), K.gather(A, [1, 0, 1])),
    "concat_reshape": lambda tf, K: (
        K.concatenate([A, A], -1),
        K.reshape(A, (4, 6)),
        K.permute_dimensions(A, (2, 0, 1)),
    ),
    "resize_images": lambda tf, K: (
        K.resize_images(IMG, 2, 3, "channels_last"),
        K.resize_images(IMG, 2, 1, "channels_first"),
        K.resize_images(IMG, 2, 2, "channels_last", "bilinear"),
    ),
    "resize_volumes": lambda tf, K: K.resize_volumes(VOL, 2, 1, 2, "channels_last"),
    "repeats": lambda tf, K: (
        K.repeat_elements(A, 2, 1),
        K.repeat(M, 3),
        K.tile(M, (2, 1)),
        K.tile(M[0], 2),
    ),
    "arange": lambda tf, K: (
        K.arange(5),
        K.arange(2, 9, 3),
        K.arange(-3),
        K.arange(4, dtype="float32"),
    ),
    "flatten": lambda tf, K: (
        K.flatten(A),
        K.batch_flatten(A),
        K.expand_dims(M),
        K.squeeze(A[:, :1], 1),
    ),
    "padding": lambda tf, K: (
        K.temporal_padding(A, (2, 1)),
        K.spatial_2d_padding(IMG, ((1, 0), (0, 2))),
        K.spatial_2d_padding(IMG, data_format="channels_first"),
        K.spatial_3d_padding(VOL),
    ),
    "stack_onehot_reverse": lambda tf, K: (
        K.stack([M, M], 1),
        K.one_hot(LABELS, 5),
        K.reverse(A, 1),
        K.reverse(A, (0, 2)),
    ),
    "relu": lambda tf, K: (
        K.relu(A),
        K.relu(A, alpha=0.1),
        K.relu(A, max_value=0.5),
        K.relu(A, alpha=0.2, max_value=1.0, threshold=0.3),
        K.relu(A, threshold=0.2),
        K.relu(A * 10, max_value=6),
    ),
    "activations": lambda tf, K: (
        K.elu(A),
        K.elu(A, 0.5),
        K.softmax(A),
        K.softmax(A, 1),
        K.softplus(A),
        K.softsign(A),
        K.sigmoid(A),
        K.hard_sigmoid(A * 4),
        K.tanh(A),
    ),
    "cce": lambda tf, K: (
        K.categorical_crossentropy(ONEHOT, P[:, :, :4]),
        K.categorical_crossentropy(ONEHOT, A, from_logits=True),
        K.categorical_crossentropy(
            tf.transpose(ONEHOT, (0, 2, 1)), tf.transpose(A, (0, 2, 1)), True, axis=1
        ),
    ),
    "cfce": lambda tf, K: K.categorical_focal_crossentropy(ONEHOT, P),
    "scce": lambda tf, K: (
        K.sparse_categorical_crossentropy(LABELS, P),
        K.sparse_categorical_crossentropy(LABELS, A, from_logits=True),
        K.sparse_categorical_crossentropy(LABELS, tf.transpose(A, (0, 2, 1)), True, axis=1),
    ),
    "bce": lambda tf, K: (
        K.binary_crossentropy(BIN, P / 1.1),
        K.binary_crossentropy(BIN, A, True),
        K.binary_focal_crossentropy(BIN, P / 1.1),
        K.binary_focal_crossentropy(BIN, A, True, 0.3, 1.5, True),
    ),
    "l2_normalize": lambda tf, K: (K.l2_normalize(A, -1), K.l2_normalize(A)),
    "in_top_k": lambda tf, K: K.in_top_k(M, np.array([0, 2], np.int32), 2),
    "conv1d": lambda tf, K: (
        K.conv1d(SEQ, K1),
        K.conv1d(SEQ, K1, 2, "same"),
        K.conv1d(SEQ, K1, padding="causal", dilation_rate=2),
    ),
    "conv2d": lambda tf, K: (
        K.conv2d(IMG, KER),
        K.conv2d(IMG, KER, (2, 2), "same"),
        K.conv2d(IMG, KER, dilation_rate=(2, 1)),
        K.conv2d(tf.transpose(IMG, (0, 3, 1, 2)), KER, data_format="channels_first"),
    ),
    "conv3d": lambda tf, K: K.conv3d(VOL, K3, (1, 2, 1), "same"),
    "conv2d_transpose": lambda tf, K: (
        K.conv2d_transpose(
            IMG, tf.transpose(KER, (0, 1, 3, 2))[:, :, :, :3], (2, 10, 12, 4), (2, 2), "same"
        ),
        K.conv2d_transpose(IMG, tf.transpose(KER, (0, 1, 3, 2))[:, :, :, :3], (None, 7, 8, 4)),
        K.conv2d_transpose(
            tf.transpose(IMG, (0, 3, 1, 2)),
            tf.transpose(KER, (0, 1, 3, 2))[:, :, :, :3],
            (2, 4, 11, 13),
            (2, 2),
            "valid",
            "channels_first",
        ),
    ),
    "separable_depthwise": lambda tf, K: (
        K.separable_conv2d(IMG, DW, PW, (1, 1), "same"),
        K.depthwise_conv2d(IMG, DW, (2, 2), "valid"),
    ),
    "pool2d": lambda tf, K: (
        K.pool2d(IMG, (2, 2), (2, 2)),
        K.pool2d(IMG, (3, 3), (1, 2), "same", pool_mode="avg"),
        K.pool2d(tf.transpose(IMG, (0, 3, 1, 2)), (2, 2), (1, 1), data_format="channels_first"),
    ),
    "pool3d": lambda tf, K: (
        K.pool3d(VOL, (2, 2, 2), (2, 2, 2)),
        K.pool3d(VOL, (2, 2, 2), (1, 1, 1), "same", pool_mode="avg"),
    ),
    "bias_add": lambda tf, K: (
        K.bias_add(A, np.arange(4, dtype=np.float32)),
        K.bias_add(A, np.ones((3, 4), np.float32) * 2),
        K.bias_add(
            tf.transpose(IMG, (0, 3, 1, 2)), np.arange(3, dtype=np.float32), "channels_first"
        ),
    ),
    "local_conv1d": lambda tf, K: K.local_conv1d(SEQ, rng_l1(), (3,), (2,)),
    "local_conv2d": lambda tf, K: K.local_conv2d(IMG, rng_l2(), (2, 2), (2, 2), (2, 3)),
    "batch_normalization": lambda tf, K: (
        K.batch_normalization(
            IMG, tf.fill([3], 0.1), tf.fill([3], 2.0), tf.zeros(3), tf.fill([3], 1.5)
        ),
        K.batch_normalization(A, tf.constant(0.2), tf.constant(1.5), None, None),
    ),
    "normalize_batch_in_training": lambda tf, K: K.normalize_batch_in_training(
        A, np.ones(4, np.float32), np.zeros(4, np.float32), [0, 1]
    ),
    "switch": lambda tf, K: (
        K.switch(K.greater(A, 0), A, -A),
        K.switch(K.constant(True), A, 0 * A),
        K.switch(K.greater(M, 0), A, 2 * A),
    ),
    "phase": lambda tf, K: (
        K.in_train_phase(A, 2 * A, training=1),
        K.in_test_phase(A, 2 * A, training=1),
        K.in_train_phase(lambda: A, lambda: 2 * A, training=K.constant(False)),
    ),
    "rnn": lambda tf, K: _rnn(tf, K),
    "rnn_backwards_mask": lambda tf, K: _rnn(tf, K, go_backwards=True, use_mask=True),
    "rnn_mask_zero": lambda tf, K: _rnn(tf, K, use_mask=True, zero_output_for_mask=True),
    "rnn_unroll_last": lambda tf, K: _rnn(tf, K, unroll=True, return_all_outputs=False),
    "rnn_input_length": lambda tf, K: _rnn(tf, K, input_length=tf.constant([4, 6])),
    "ctc_cost": lambda tf, K: K.ctc_batch_cost(
        np.array([[1, 2, 1], [0, 1, 0]], np.int32),
        K.softmax(SEQ_CTC),
        np.array([[7], [6]], np.int32),
        np.array([[3], [2]], np.int32),
    ),
    "ctc_decode_greedy": lambda tf, K: _ctc_decode(K, True),
    "ctc_decode_beam": lambda tf, K: _ctc_decode(K, False),
    "ctc_dense_to_sparse": lambda tf, K: tf.sparse.to_dense(
        K.ctc_label_dense_to_sparse(LABELS, tf.constant([2, 3]))
    ),
    "values": lambda tf, K: (
        K.eval(K.zeros((2, 3))),
        K.eval(K.ones((2,), "int32")),
        K.eval(K.eye(3, "float64")),
        K.get_value(K.variable(M)),
        K.eval(K.constant(2)),
        K.cast_to_floatx(np.arange(3)),
        K.eval(K.zeros_like(M)),
        K.eval(K.ones_like(LABELS, "float32")),
        K.count_params(K.zeros((3, 4))),
        K.eval(K.cast(M, "int32")),
    ),
    "shapes": lambda tf, K: (
        np.array(K.int_shape(A)),
        K.ndim(A),
        K.eval(K.shape(A)),
        K.dtype(A),
        K.dtype(K.variable(1, "float16")),
    ),
    "moving_average_update": lambda tf, K: _mau(tf, K),
    "rnn_constants_nested": lambda tf, K: _rnn_constants(tf, K),
    "map_fold": lambda tf, K: (
        K.map_fn(lambda r: r * 2.0, M),
        K.foldl(lambda a, r: a + r, M),
        K.foldr(lambda a, r: a * 0.5 + r, M),
    ),
    "grad_sqrt": lambda tf, K: _grad(tf, K.sqrt, A),
    "grad_dot": lambda tf, K: _grad(tf, lambda v: K.dot(v, B), A),
    "grad_batch_dot": lambda tf, K: _grad(tf, lambda v: K.batch_dot(v, v, axes=(1, 1)), A),
    "grad_relu": lambda tf, K: _grad(tf, lambda v: K.relu(v, 0.1, 0.5, 0.2), A),
    "grad_cce": lambda tf, K: _grad(tf, lambda v: K.categorical_crossentropy(ONEHOT, v, True), A),
    "grad_scce": lambda tf, K: _grad(
        tf, lambda v: K.sparse_categorical_crossentropy(LABELS, v, True), A
    ),
    "grad_bce": lambda tf, K: _grad(tf, lambda v: K.binary_crossentropy(BIN, K.sigmoid(v)), A),
    "grad_clip": lambda tf, K: _grad(tf, lambda v: K.clip(v, -0.5, 0.5), A),
    "grad_conv2d": lambda tf, K: _grad(tf, lambda v: K.conv2d(v, KER, padding="same"), IMG),
    "grad_pool2d": lambda tf, K: _grad(
        tf, lambda v: K.pool2d(v, (2, 2), (2, 2), pool_mode="avg"), IMG
    ),
    "grad_rnn": lambda tf, K: _grad(tf, lambda v: _rnn_on(tf, K, v), SEQ),
    "grad_switch": lambda tf, K: _grad(tf, lambda v: K.switch(K.greater(v, 0), v * v, -v), A),
    "grad_std": lambda tf, K: _grad(tf, lambda v: K.std(v, 1), A),
}

SEQ_CTC = rng.standard_normal((2, 7, 4)).astype(np.float32)
L1 = rng.standard_normal((3, 9, 5)).astype(np.float32)
L2 = rng.standard_normal((6, 12, 4)).astype(np.float32)


def rng_l1():
    return L1


def rng_l2():
    return L2


def _rnn_constants(tf, K):
    def step(x, states):
        h, c, bias = states
        h2 = K.tanh(x[:, :2] + h * 0.3 + bias)
        return h2, [h2, c + K.sum(x, axis=-1, keepdims=True)]

    mask = np.array([[1, 1, 0, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0, 0]], dtype=bool)
    last, outs, states = K.rnn(step, SEQ, [tf.zeros((2, 2)), tf.zeros((2, 1))],
                               go_backwards=True, mask=tf.constant(mask),
                               constants=[tf.constant([0.1, -0.2])])  # fmt: skip
    return (last, outs) + tuple(states)


def _mau(tf, K):
    v = K.variable(M)
    K.moving_average_update(v, tf.ones((2, 3)), 0.9)
    K.update_add(v, tf.ones((2, 3)))
    K.update_sub(v, 0.5 * tf.ones((2, 3)))
    after = K.get_value(v)
    K.update(v, tf.zeros((2, 3)))
    return after, K.get_value(v)


def _ctc_decode(K, greedy):
    decoded, logp = K.ctc_decode(K.softmax(SEQ_CTC), np.array([7, 5], np.int32), greedy=greedy,
                                 beam_width=5, top_paths=2 if not greedy else 1)  # fmt: skip
    return tuple(decoded) + (logp,)


def _rnn_on(tf, K, v):
    def step(x, states):
        h = K.tanh(x + states[0] * 0.5)
        return h, [h]

    mask = np.array([[1, 1, 1, 0, 1, 0, 0], [1, 0, 1, 1, 1, 1, 1]], dtype=bool)
    return K.rnn(step, v, [tf.zeros((2, 3))], mask=tf.constant(mask))[1]
