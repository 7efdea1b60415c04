"""MultiHeadAttention, EinsumDense, Attention, AdditiveAttention and Dot: the layer contract
(run_layer_test), masks, Keras's weight layout, configs, the functional API and errors."""

import pathlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
RNG = np.random.default_rng(0)
FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


class SelfAttention(L.MultiHeadAttention):
    """MultiHeadAttention on one input (query = value = x), so the single-input harness runs it."""

    def __call__(self, x, **kwargs):
        return super().__call__(x, x, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_heads": 2, "key_dim": 3},
        {"num_heads": 2, "key_dim": 3, "value_dim": 2, "output_shape": 4, "use_bias": False},
        {"num_heads": 1, "key_dim": 2, "attention_axes": (1, 2)},
    ],
)
def test_multi_head_attention_layer_contract(kwargs):
    shape = (2, 3, 2, 5) if "attention_axes" in kwargs else (2, 4, 5)
    run_layer_test(SelfAttention, kwargs, input_shape=shape, check_input_spec=False)


def test_multi_head_attention_weights_have_keras_names_shapes_and_order():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, name="mha")
    mha(tf.ones((1, 5, 6)), tf.ones((1, 7, 8)))
    names = [w.name for w in mha.weights]  # each sublayer's name scopes its weights
    assert [tuple(w.shape) for w in mha.weights] == [
        (6, 2, 3), (2, 3), (8, 2, 3), (2, 3), (8, 2, 4), (2, 4), (2, 4, 6), (6,),
    ]  # fmt: skip
    assert [n.rsplit(":", 1)[0].rsplit("/", 2)[-2] + "/" + n.rsplit(":", 1)[0].rsplit("/", 1)[-1]
            for n in names] == [
        "query/kernel", "query/bias", "key/kernel", "key/bias",
        "value/kernel", "value/bias", "attention_output/kernel", "attention_output/bias",
    ]  # fmt: skip
    assert [mha.query_dense.name, mha.key_dense.name, mha.value_dense.name,
            mha.output_dense.name] == ["query", "key", "value", "attention_output"]  # fmt: skip


def test_multi_head_attention_loads_a_keras3_weights_file():
    x = np.load(FIXTURES / "keras3_mha_x.npy")
    inp = tf.keras.Input((5, 8))
    h = L.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp)
    model = tf.keras.Model(inp, L.LayerNormalization()(h))
    model.load_weights(FIXTURES / "keras3_mha.weights.h5")
    np.testing.assert_allclose(
        model(x).numpy(), np.load(FIXTURES / "keras3_mha_y.npy"), rtol=1e-5, atol=1e-5
    )


def test_masks_causal_and_padding():
    q = RNG.standard_normal((2, 4, 6)).astype("float32")
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3)
    _, scores = mha(q, q, use_causal_mask=True, return_attention_scores=True)
    s = scores.numpy()
    assert s.shape == (2, 2, 4, 4)
    assert np.all(np.triu(np.ones((4, 4)), 1)[None, None] * s < 1e-6)
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)
    mask = np.ones((2, 4, 4), bool)
    mask[:, :, 2:] = False  # padding keys
    _, scores = mha(q, q, attention_mask=mask, return_attention_scores=True)
    assert np.all(scores.numpy()[..., 2:] < 1e-6)
    # a [B, T, S] mask and use_causal_mask combine (logical and)
    _, both = mha(q, q, attention_mask=mask, use_causal_mask=True, return_attention_scores=True)
    np.testing.assert_allclose(both.numpy()[:, :, 0, 0], 1.0, rtol=1e-6)


def test_key_defaults_to_value_and_a_different_key_changes_the_scores():
    q, v = (RNG.standard_normal((1, 3, 4)).astype("float32") for _ in range(2))
    mha = L.MultiHeadAttention(num_heads=1, key_dim=2)
    a = mha(q, v).numpy()
    np.testing.assert_allclose(mha(q, v, v).numpy(), a, rtol=1e-6)
    assert not np.allclose(mha(q, v, q).numpy(), a)


def test_dropout_only_in_training_and_scores_before_dropout():
    x = RNG.standard_normal((2, 5, 4)).astype("float32")
    mha = L.MultiHeadAttention(num_heads=2, key_dim=2, dropout=0.5)
    out, s = mha(x, x, return_attention_scores=True)
    out2, s2 = mha(x, x, return_attention_scores=True, training=True)
    np.testing.assert_allclose(s.numpy(), s2.numpy(), rtol=1e-6)
    assert not np.allclose(out.numpy(), out2.numpy())
    np.testing.assert_allclose(mha(x, x, training=False).numpy(), out.numpy(), rtol=1e-6)


def test_config_round_trip_builds_the_sublayers_from_the_shapes():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=1, name="m")
    q, v = tf.ones((2, 4, 6)), tf.ones((2, 5, 8))
    mha(q, v)
    config = mha.get_config()
    assert config["query_shape"] == [2, 4, 6] and config["value_shape"] == [2, 5, 8]
    assert config["attention_axes"] == (1,)
    clone = L.MultiHeadAttention.from_config(config)
    assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in mha.weights]
    clone.set_weights(mha.get_weights())
    np.testing.assert_allclose(clone(q, v).numpy(), mha(q, v).numpy(), rtol=1e-6)
    again = L.deserialize(L.serialize(mha))
    assert type(again) is L.MultiHeadAttention and again.get_config() == config


def test_functional_model_with_scores_and_a_different_key():
    q_in, v_in, k_in = tf.keras.Input((4, 6)), tf.keras.Input((5, 8)), tf.keras.Input((5, 3))
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3)
    out, scores = mha(q_in, v_in, k_in, return_attention_scores=True)
    assert out.shape.as_list() == [None, 4, 6] and scores.shape.as_list() == [None, 2, 4, 5]
    model = tf.keras.Model([q_in, v_in, k_in], [out, scores])
    assert len(model.weights) == 8  # built from the symbolic call
    q, v, k = (RNG.standard_normal((3,) + s).astype("float32") for s in ((4, 6), (5, 8), (5, 3)))
    got = model([q, v, k])
    want = mha(q, v, k, return_attention_scores=True)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
    assert tuple(got[1].shape) == (3, 2, 4, 5)


def test_transformer_block_trains():
    inp = tf.keras.Input((6, 8))
    h = L.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp)
    h = L.LayerNormalization()(L.Add()([inp, h]))
    out = L.Dense(1)(L.GlobalAveragePooling1D()(h))
    model = tf.keras.Model(inp, out)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    x = RNG.standard_normal((64, 6, 8)).astype("float32")
    y = x[:, :, 0].mean(axis=1, keepdims=True)
    hist = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]


def test_multi_head_attention_errors():
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        L.MultiHeadAttention(num_heads=0, key_dim=2)
    mha = L.MultiHeadAttention(num_heads=2, key_dim=2, name="mha_err")
    with pytest.raises(TypeError, match="without `value`"):
        mha(tf.ones((1, 3, 4)))
    with pytest.raises(ValueError, match="rank >= 3"):
        mha(tf.ones((1, 4)), tf.ones((1, 4)))
    assert not mha.weights  # nothing half-built
    with pytest.raises(ValueError, match="attention_axes"):
        L.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=(0,))(
            tf.ones((1, 3, 4)), tf.ones((1, 3, 4))
        )


# --- EinsumDense -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,shape,expected",
    [
        ({"equation": "ab,bc->ac", "output_shape": 4, "bias_axes": "c"}, (2, 3), [2, 4]),
        ({"equation": "...b,bc->...c", "output_shape": 4, "activation": "tanh"}, (2, 3, 5),
         [2, 3, 4]),
        ({"equation": "ab...,bc->ac...", "output_shape": 4, "bias_axes": "c"}, (2, 3, 5),
         [2, 4, 5]),
        ({"equation": "abc,cde->abde", "output_shape": (None, 2, 3), "bias_axes": "de"},
         (2, 3, 5), [2, 3, 2, 3]),
    ],
)  # fmt: skip
def test_einsum_dense_layer_contract(kwargs, shape, expected):
    run_layer_test(L.EinsumDense, kwargs, input_shape=shape, expected_output_shape=expected)


def test_einsum_dense_shapes_and_errors():
    layer = L.EinsumDense("abc,cd->abd", output_shape=(None, 4), bias_axes="d")
    layer(tf.ones((2, 3, 5)))
    assert [tuple(w.shape) for w in layer.weights] == [(5, 4), (4,)]
    with pytest.raises(ValueError, match="invalid einsum equation"):
        L.EinsumDense("ab,bc", output_shape=3)
    with pytest.raises(ValueError, match="invalid einsum equation"):
        L.EinsumDense("ab,bc,cd->ad", output_shape=3)(tf.ones((2, 3)))
    with pytest.raises(ValueError, match="bias axis 'x'"):
        L.EinsumDense("ab,bc->ac", output_shape=3, bias_axes="x")(tf.ones((2, 3)))
    with pytest.raises(ValueError, match="weight dimension 'z'"):
        L.EinsumDense("ab,bz->ab", output_shape=3)(tf.ones((2, 3)))
    with pytest.raises(ValueError, match="disagree on dimension 'b'"):
        L.EinsumDense("ab,bc->ab", output_shape=4)(tf.ones((2, 3)))


# --- Attention, AdditiveAttention, Dot ----------------------------------------------------------


def _qv(*shapes):
    return [RNG.standard_normal(s).astype("float32") for s in shapes]


@pytest.mark.parametrize(
    "cls,kwargs",
    [
        (L.Attention, {}),
        (L.Attention, {"use_scale": True}),
        (L.Attention, {"use_scale": True, "score_mode": "concat"}),
        (L.AdditiveAttention, {}),
        (L.AdditiveAttention, {"use_scale": False}),
    ],
)
def test_dense_attention_layer_contract(cls, kwargs):
    run_layer_test(cls, kwargs, input_data=_qv((2, 3, 4), (2, 5, 4)),
                   expected_output_shape=[2, 3, 4])  # fmt: skip
    run_layer_test(cls, kwargs, input_data=_qv((2, 3, 4), (2, 5, 4), (2, 5, 4)),
                   expected_output_shape=[2, 3, 4])  # fmt: skip


def test_dense_attention_masks_and_scores():
    q, v = _qv((2, 3, 4), (2, 5, 4))
    layer = L.Attention()
    v_mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    q_mask = np.array([[1, 0, 1], [1, 1, 1]], bool)
    out, w = layer([q, v], mask=[q_mask, v_mask], return_attention_scores=True)
    assert np.all(w.numpy()[0, :, 2:] < 1e-6)
    np.testing.assert_allclose(out.numpy()[0, 1], 0.0)  # masked query row
    _, w = layer([q, v], use_causal_mask=True, return_attention_scores=True)
    assert np.all(np.triu(np.ones((3, 5)), 1)[None] * w.numpy() < 1e-6)
    assert layer.compute_mask([q, v], [q_mask, v_mask]) is q_mask
    with pytest.raises(ValueError, match="list of inputs"):
        layer(tf.constant(q))
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="cosine")


def test_dense_attention_dropout_only_while_training():
    q, v = _qv((2, 3, 4), (2, 5, 4))
    layer = L.Attention(dropout=0.5)
    np.testing.assert_allclose(layer([q, v]).numpy(), L.Attention()([q, v]).numpy(), rtol=1e-6)
    assert not np.allclose(layer([q, v], training=True).numpy(), layer([q, v]).numpy())


@pytest.mark.parametrize(
    "kwargs,shapes,expected",
    [
        ({"axes": 1}, ((2, 3), (2, 3)), [2, 1]),
        ({"axes": (1, 2), "normalize": True}, ((2, 3, 4), (2, 5, 3)), [2, 4, 5]),
        ({"axes": -1}, ((2, 3, 4), (2, 5, 4)), [2, 3, 5]),
    ],
)
def test_dot_layer_contract(kwargs, shapes, expected):
    run_layer_test(L.Dot, kwargs, input_data=_qv(*shapes), expected_output_shape=expected)


def test_dot_values_and_errors():
    a, b = _qv((2, 3), (2, 3))
    np.testing.assert_allclose(L.dot([a, b], axes=1).numpy()[:, 0], (a * b).sum(1), rtol=1e-5)
    cos = L.Dot(axes=1, normalize=True)([a, b]).numpy()[:, 0]
    want = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(cos, want, rtol=1e-5)
    with pytest.raises(ValueError, match="Incompatible input shapes|incompatible input shapes"):
        L.Dot(axes=1)(_qv((2, 3), (2, 4)))
    with pytest.raises(ValueError, match="batch axis"):
        L.Dot(axes=0)([a, b])
    with pytest.raises(TypeError, match="axes must be an int"):
        L.Dot(axes="1")
