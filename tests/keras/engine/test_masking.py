"""Implicit masks (issue 11): made by Embedding(mask_zero=True)/Masking, carried on tensors
(`_keras_mask`) and KerasTensors, passed to `call(mask=)`, combined, consumed, and turned into
sample weights by losses and metrics, as in tf_keras."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers
TOKENS = np.array([[3, 1, 0, 0], [2, 0, 0, 0]], np.int32)
MASK = TOKENS != 0


def test_embedding_mask_eager_and_symbolic():
    emb = L.Embedding(5, 2, mask_zero=True)
    np.testing.assert_array_equal(emb(TOKENS)._keras_mask.numpy(), MASK)
    kt = emb(tf.keras.Input((4,), dtype="int32"))
    assert kt._keras_mask.dtype == tf.bool and tuple(kt._keras_mask.shape) == (None, 4)
    assert getattr(L.Embedding(5, 2)(TOKENS), "_keras_mask", None) is None


def test_supports_masking_and_compute_mask_rules():
    assert L.Dense(2).supports_masking and L.Dropout(0.5).supports_masking
    assert not L.Flatten().supports_masking and not tf.keras.layers.Layer().supports_masking
    with pytest.raises(TypeError, match="does not support masking"):
        L.Flatten().compute_mask(None, tf.constant([True]))
    assert L.Flatten().compute_mask(None, None) is None

    class Overrides(L.Layer):  # overriding compute_mask means supporting masks (Keras 2)
        def compute_mask(self, inputs, mask=None):
            return mask

    assert Overrides().supports_masking


def test_masks_pass_through_supporting_layers_and_stop_at_others():
    x = L.Embedding(5, 2, mask_zero=True)(TOKENS)
    for layer in (L.Dense(3), L.Activation("relu"), L.Dropout(0.5)):
        x = layer(x)
        np.testing.assert_array_equal(x._keras_mask.numpy(), MASK)
    assert getattr(L.Flatten()(x), "_keras_mask", None) is None


def test_mask_reaches_call_implicitly_unless_given():
    seen = []

    class Probe(L.Layer):
        def call(self, inputs, mask=None):
            seen.append(None if mask is None else mask.numpy().tolist())
            return inputs

    x = L.Embedding(5, 2, mask_zero=True)(TOKENS)
    Probe()(x)
    Probe()(x, mask=tf.constant([[True] * 4] * 2))
    Probe()(tf.ones((2, 4, 2)))
    assert seen == [MASK.tolist(), [[True] * 4] * 2, None]


def test_sequential_and_functional_models_carry_masks_into_rnns():
    tf.keras.utils.set_random_seed(0)
    seq = tf.keras.Sequential([L.Embedding(5, 3, mask_zero=True), L.LSTM(4)])
    # With the mask the LSTM stops at each sequence's last real token: as the unpadded rows.
    out = seq(TOKENS).numpy()
    np.testing.assert_allclose(out[0], seq(TOKENS[:1, :2]).numpy()[0], rtol=1e-5)
    np.testing.assert_allclose(out[1], seq(TOKENS[1:, :1]).numpy()[0], rtol=1e-5)
    inputs = tf.keras.Input((None,), dtype="int32")
    h = L.Embedding(5, 3, mask_zero=True)(inputs)
    h = L.LSTM(4, return_sequences=True)(h)
    assert h._keras_mask is not None  # return_sequences keeps the mask
    out = L.Bidirectional(L.GRU(2))(h)
    assert out._keras_mask is None  # a last output has none
    model = tf.keras.Model(inputs, out)
    np.testing.assert_allclose(
        model(TOKENS[:1]).numpy(), model(TOKENS[:1, :2]).numpy(), rtol=1e-5, atol=1e-6
    )


def test_global_average_pooling_1d_averages_unmasked_steps():
    x = np.array([[[1.0], [3.0], [100.0]]], np.float32)
    masked = L.Masking(mask_value=100.0)(x)
    assert L.GlobalAveragePooling1D()(masked).numpy().item() == 2.0
    assert L.GlobalAveragePooling1D()(x).numpy().item() == pytest.approx(104 / 3)


def test_attention_layers_use_query_and_value_masks():
    tf.keras.utils.set_random_seed(0)
    emb = L.Embedding(5, 4, mask_zero=True)
    q = emb(TOKENS)
    mha = L.MultiHeadAttention(2, 2)
    out, scores = mha(q, q, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy()[0, :, :2, 2:], 0.0, atol=1e-7)  # padded keys
    np.testing.assert_array_equal(out._keras_mask.numpy(), MASK)
    att = L.Attention()([q, q])
    np.testing.assert_array_equal(att._keras_mask.numpy(), MASK)
    np.testing.assert_allclose(att.numpy()[1, 1:], 0.0)  # masked query steps are zero


def test_merging_combines_and_lambda_sets_masks():
    a = L.Embedding(5, 2, mask_zero=True)(TOKENS)
    b = L.Embedding(5, 2, mask_zero=True)(np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32))
    np.testing.assert_array_equal(L.Add()([a, b])._keras_mask.numpy(), MASK)
    lam = L.Lambda(lambda x: x * 2, mask=lambda inputs, mask: tf.logical_not(mask))
    np.testing.assert_array_equal(lam(a)._keras_mask.numpy(), ~MASK)
    assert getattr(L.Lambda(lambda x: x * 2)(a), "_keras_mask", None) is None


def test_time_distributed_passes_the_mask_on():
    x = L.Embedding(5, 2, mask_zero=True)(TOKENS)
    np.testing.assert_array_equal(L.TimeDistributed(L.Dense(3))(x)._keras_mask.numpy(), MASK)


def test_node_masks_and_model_mask_argument():
    inputs = tf.keras.Input((4,), dtype="int32")
    emb = L.Embedding(5, 2, mask_zero=True)
    dense = L.Dense(1)
    out = dense(emb(inputs))
    assert emb.input_mask is None and emb.output_mask is not None
    assert dense.input_mask is emb.output_mask and dense.get_output_mask_at(0) is not None
    model = tf.keras.Model(inputs, out)
    np.testing.assert_array_equal(model.compute_mask(TOKENS).numpy(), MASK)
    x = tf.keras.Input((4, 2))
    passthrough = tf.keras.Model(x, L.Dense(2)(x))
    given = tf.constant(MASK)
    np.testing.assert_array_equal(passthrough(np.ones((2, 4, 2), np.float32), mask=given)
                                  ._keras_mask.numpy(), MASK)  # fmt: skip


def test_losses_and_metrics_are_weighted_by_the_output_mask():
    rng = np.random.default_rng(0)
    x = rng.integers(1, 5, (8, 6))
    x[:, 4:] = 0
    y = rng.normal(size=(8, 6, 1)).astype("float32")
    inputs = tf.keras.Input((6,), dtype="int32")
    model = tf.keras.Model(inputs, L.Dense(1)(L.Embedding(5, 3, mask_zero=True)(inputs)))
    model.compile("sgd", "mse", metrics=["mae"])
    pred = model.predict(x, verbose=0)
    valid = x != 0
    loss, mae = model.evaluate(x, y, verbose=0, batch_size=8)
    assert loss == pytest.approx(((pred - y)[..., 0][valid] ** 2).mean(), rel=1e-5)
    assert mae == pytest.approx(np.abs(pred - y)[..., 0][valid].mean(), rel=1e-5)
    # The Loss object itself honours y_pred's mask (tf_keras's apply_valid_mask).
    y_pred = model(x)
    direct = tf.keras.losses.MeanSquaredError()(y, y_pred)
    assert float(direct) == pytest.approx(loss, rel=1e-5)
    sw = np.arange(8, dtype="float32")
    weighted = float(tf.keras.losses.MeanSquaredError()(y, y_pred, sample_weight=sw))
    per = ((pred - y)[..., 0] ** 2) * sw[:, None] * valid
    assert weighted == pytest.approx(per.sum() / valid.sum(), rel=1e-5)
