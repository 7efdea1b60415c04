"""Two-output functional models: losses as a list or dict, loss_weights, per-output metrics."""

import numpy as np
import pytest

import layerflow as tf

RNG = np.random.default_rng(3)
X = RNG.standard_normal((64, 4)).astype(np.float32)
Y_REG = (X @ RNG.standard_normal((4, 1))).astype(np.float32)
Y_CLS = (X @ RNG.standard_normal((4, 3))).argmax(1)


def _model():
    inputs = tf.keras.Input((4,))
    h = tf.keras.layers.Dense(8, activation="relu", name="trunk")(inputs)
    reg = tf.keras.layers.Dense(1, name="out1")(h)
    cls = tf.keras.layers.Dense(3, name="out2")(h)
    return tf.keras.Model(inputs, [reg, cls])


def _np_losses(model):
    """(mse of out1, sparse CE from logits of out2) computed with NumPy from predictions."""
    reg, logits = model.predict(X, verbose=0)
    mse = ((reg - Y_REG) ** 2).mean()
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    ce = -logp[np.arange(len(Y_CLS)), Y_CLS].mean()
    acc = (logits.argmax(1) == Y_CLS).mean()
    return mse, ce, acc


CE = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@pytest.mark.parametrize(
    "loss",
    [["mse", CE], {"out1": "mse", "out2": CE}],
    ids=["list", "dict"],
)
def test_losses_per_output_weights_and_metric_names(loss):
    model = _model()
    model.compile(
        optimizer=tf.keras.optimizers.SGD(0.05),
        loss=loss,
        loss_weights={"out1": 0.5, "out2": 2.0} if isinstance(loss, dict) else [0.5, 2.0],
        metrics={"out2": ["accuracy"]},
    )
    h = model.fit(X, [Y_REG, Y_CLS], batch_size=16, epochs=3, verbose=0)
    assert list(h.history) == ["loss", "out1_loss", "out2_loss", "out2_accuracy"]
    assert model.metrics_names == ["loss", "out1_loss", "out2_loss", "out2_accuracy"]
    # The total is the weighted sum; per-output losses are reported unweighted (Keras 2).
    for i in range(3):
        total = 0.5 * h.history["out1_loss"][i] + 2.0 * h.history["out2_loss"][i]
        assert h.history["loss"][i] == pytest.approx(total, rel=1e-5)
    logs = model.evaluate(X, [Y_REG, Y_CLS], batch_size=64, verbose=0, return_dict=True)
    mse, ce, acc = _np_losses(model)
    assert logs["out1_loss"] == pytest.approx(mse, rel=1e-5)
    assert logs["out2_loss"] == pytest.approx(ce, rel=1e-5)
    assert logs["out2_accuracy"] == pytest.approx(acc)
    assert logs["loss"] == pytest.approx(0.5 * mse + 2.0 * ce, rel=1e-5)


def test_targets_as_a_dict_and_a_metric_for_every_output():
    model = _model()
    onehot = np.eye(3, dtype=np.float32)[Y_CLS]
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])  # one loss, one metric: all
    targets = {"out1": Y_REG, "out2": onehot}
    h = model.fit(X, targets, batch_size=32, epochs=1, verbose=0)
    assert list(h.history) == ["loss", "out1_loss", "out2_loss", "out1_mae", "out2_mae"]
    reg, logits = model.predict(X, verbose=0)
    logs = model.evaluate(X, targets, batch_size=64, verbose=0, return_dict=True)
    assert logs["out1_mae"] == pytest.approx(np.abs(reg - Y_REG).mean(), rel=1e-5)
    assert logs["out2_mae"] == pytest.approx(np.abs(logits - onehot).mean(), rel=1e-5)
    assert logs["out2_loss"] == pytest.approx(((logits - onehot) ** 2).mean(), rel=1e-5)


def test_output_without_a_loss_is_not_trained_on():
    model = _model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss={"out1": "mse"})
    before = model.get_layer("out2").get_weights()
    h = model.fit(X, [Y_REG, Y_CLS], batch_size=32, epochs=2, verbose=0)
    assert "out2_loss" not in h.history and "out1_loss" in h.history
    for a, b in zip(before, model.get_layer("out2").get_weights()):
        np.testing.assert_array_equal(a, b)  # no gradient reaches an output without a loss


def test_mismatched_loss_specs_are_explained():
    model = _model()
    model.compile(optimizer="sgd", loss={"nope": "mse"})
    with pytest.raises(ValueError, match=r"names outputs \['nope'\].*\['out1', 'out2'\]"):
        model.fit(X, [Y_REG, Y_CLS], verbose=0)
    model.compile(optimizer="sgd", loss=["mse"])
    with pytest.raises(ValueError, match="got 1 losses for a model with 2 outputs"):
        model.fit(X, [Y_REG, Y_CLS], verbose=0)
    model.compile(optimizer="sgd", loss="mse", loss_weights=[1.0])
    with pytest.raises(ValueError, match="loss_weights has 1 entries"):
        model.fit(X, [Y_REG, Y_REG], verbose=0)
