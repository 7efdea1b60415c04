"""The added Keras 2 losses against NumPy oracles: per-sample values, reductions, sample
weights, from_logits / label_smoothing, configs, name lookup, and gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import check_gradients

L = tf.keras.losses
RNG = np.random.default_rng(3)
EPS = 1e-7

T01 = (RNG.random((5, 4)) > 0.5).astype("float32")
TPM = np.where(RNG.random((5, 4)) > 0.5, 1.0, -1.0).astype("float32")
LOGITS = RNG.standard_normal((5, 4)).astype("float32")
PROBS = RNG.uniform(0.05, 0.95, (5, 4)).astype("float32")
ONEHOT = np.eye(4, dtype="float32")[[0, 3, 1, 1, 2]]
POS = RNG.uniform(0.1, 3.0, (5, 4)).astype("float32")
POS2 = RNG.uniform(0.1, 3.0, (5, 4)).astype("float32")
W = np.array([1.0, 0.5, 2.0, 0.0, 1.5], "float32")


def np_hinge(t, p):
    t = 2 * t - 1 if np.isin(t, (0, 1)).all() else t
    return np.maximum(1 - t * p, 0).mean(-1)


def np_squared_hinge(t, p):
    t = 2 * t - 1 if np.isin(t, (0, 1)).all() else t
    return (np.maximum(1 - t * p, 0) ** 2).mean(-1)


def np_categorical_hinge(t, p):
    return np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0)


def np_log_cosh(t, p):
    return np.log(np.cosh(p - t)).mean(-1)


def np_poisson(t, p):
    return (p - t * np.log(p + EPS)).mean(-1)


def np_cosine(t, p, axis=-1):
    def n(a):
        return a / np.sqrt(np.maximum((a * a).sum(axis, keepdims=True), 1e-12))

    return -(n(t) * n(p)).sum(axis)


def np_mape(t, p):
    return 100 * (np.abs(t - p) / np.maximum(np.abs(t), EPS)).mean(-1)


def np_msle(t, p):
    return ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2).mean(-1)


def np_binary_focal(t, p, balance=False, alpha=0.25, gamma=2.0, logits=False, smooth=0.0):
    t = t * (1 - smooth) + 0.5 * smooth
    q = 1 / (1 + np.exp(-p)) if logits else p
    qc = np.clip(q, EPS, 1 - EPS)
    bce = -(
        t * np.log(qc + (0 if logits else EPS)) + (1 - t) * np.log(1 - qc + (0 if logits else EPS))
    )
    p_t = t * q + (1 - t) * (1 - q)
    f = (1 - p_t) ** gamma * bce
    if balance:
        f = (t * alpha + (1 - t) * (1 - alpha)) * f
    return f.mean(-1)


def np_categorical_focal(t, p, alpha=0.25, gamma=2.0, logits=False, smooth=0.0):
    t = t * (1 - smooth) + smooth / t.shape[-1]
    if logits:
        e = np.exp(p - p.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    p = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return (alpha * (1 - p) ** gamma * -t * np.log(p)).sum(-1)


CASES = [
    (L.Hinge, {}, L.hinge, np_hinge, T01, LOGITS),
    (L.Hinge, {}, L.hinge, np_hinge, TPM, LOGITS),
    (L.SquaredHinge, {}, L.squared_hinge, np_squared_hinge, T01, LOGITS),
    (L.CategoricalHinge, {}, L.categorical_hinge, np_categorical_hinge, ONEHOT, LOGITS),
    (L.LogCosh, {}, L.log_cosh, np_log_cosh, POS, POS2),
    (L.Poisson, {}, L.poisson, np_poisson, POS, POS2),
    (L.CosineSimilarity, {}, L.cosine_similarity, np_cosine, LOGITS, POS),
    (L.MeanAbsolutePercentageError, {}, L.mape, np_mape, POS, POS2),
    (L.MeanSquaredLogarithmicError, {}, L.msle, np_msle, POS, POS2),
    (L.BinaryFocalCrossentropy, {}, L.binary_focal_crossentropy, np_binary_focal, T01, PROBS),
    (L.BinaryFocalCrossentropy,
     {"apply_class_balancing": True, "alpha": 0.4, "gamma": 3.0, "label_smoothing": 0.1},
     L.binary_focal_crossentropy,
     lambda t, p: np_binary_focal(t, p, True, 0.4, 3.0, False, 0.1), T01, PROBS),
    (L.BinaryFocalCrossentropy, {"from_logits": True}, L.binary_focal_crossentropy,
     lambda t, p: np_binary_focal(t, p, logits=True), T01, LOGITS),
    (L.CategoricalFocalCrossentropy, {}, L.categorical_focal_crossentropy, np_categorical_focal,
     ONEHOT, PROBS),
    (L.CategoricalFocalCrossentropy, {"from_logits": True, "gamma": 1.0, "label_smoothing": 0.2},
     L.categorical_focal_crossentropy,
     lambda t, p: np_categorical_focal(t, p, gamma=1.0, logits=True, smooth=0.2), ONEHOT, LOGITS),
]  # fmt: skip
IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("cls,kwargs,fn,oracle,t,p", CASES, ids=IDS)
def test_values_reductions_and_sample_weights(cls, kwargs, fn, oracle, t, p):
    want = oracle(t.astype(np.float64), p.astype(np.float64))
    fn_kwargs = {k: v for k, v in kwargs.items()}
    np.testing.assert_allclose(fn(t, p, **fn_kwargs).numpy(), want, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(float(cls(**kwargs)(t, p)), want.mean(), rtol=2e-5, atol=1e-6)
    none = cls(reduction="none", **kwargs)(t, p, sample_weight=W).numpy()
    np.testing.assert_allclose(none, want * W, rtol=2e-5, atol=1e-6)
    total = float(cls(reduction="sum", **kwargs)(t, p, sample_weight=W))
    np.testing.assert_allclose(total, (want * W).sum(), rtol=2e-5, atol=1e-6)
    avg = float(cls(**kwargs)(t, p, sample_weight=W))
    np.testing.assert_allclose(avg, (want * W).sum() / len(W), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("cls,kwargs,fn,oracle,t,p", CASES, ids=IDS)
def test_config_round_trip_and_lookup(cls, kwargs, fn, oracle, t, p):
    loss = cls(name="my_loss", **kwargs)
    config = loss.get_config()
    assert config["name"] == "my_loss" and all(config[k] == v for k, v in kwargs.items())
    again = cls.from_config(config)
    assert again.get_config() == config
    np.testing.assert_allclose(float(again(t, p)), float(loss(t, p)), rtol=1e-6)
    restored = L.deserialize(L.serialize(loss))
    assert type(restored) is cls and restored.get_config() == config
    # tf_keras writes the wrapped function as "fn" into configs; loading ignores it
    assert cls.from_config({**config, "fn": fn.__name__}).get_config() == config
    assert L.get(fn.__name__) is fn
    assert type(L.get(cls.__name__)) is cls


def test_default_names_and_aliases():
    assert L.Hinge().name == "hinge" and L.LogCosh().name == "log_cosh"
    assert L.MeanAbsolutePercentageError().name == "mean_absolute_percentage_error"
    assert L.BinaryFocalCrossentropy().name == "binary_focal_crossentropy"
    assert L.mape is L.MAPE is L.mean_absolute_percentage_error
    assert L.msle is L.MSLE is L.mean_squared_logarithmic_error
    assert L.logcosh is L.log_cosh
    assert L.get("logcosh") is L.log_cosh and L.get("mape") is L.mape
    assert L.CosineSimilarity(axis=0).get_config()["axis"] == 0


def test_cosine_similarity_on_another_axis():
    got = L.cosine_similarity(LOGITS, POS, axis=0).numpy()
    np.testing.assert_allclose(got, np_cosine(LOGITS, POS, axis=0), rtol=1e-5)


def test_hinge_keeps_minus_one_plus_one_labels_and_converts_zero_one():
    p = np.array([[0.3, -0.2]], "float32")
    np.testing.assert_allclose(L.hinge([[0.0, 1.0]], p).numpy(), L.hinge([[-1.0, 1.0]], p).numpy())


def test_compile_and_fit_with_new_losses():
    x = RNG.standard_normal((32, 3)).astype("float32")
    y = (x.sum(1, keepdims=True) > 0).astype("float32")
    for loss in ("hinge", L.BinaryFocalCrossentropy(from_logits=True), "poisson", "logcosh"):
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
        if loss == "poisson":
            model = tf.keras.Sequential(
                [tf.keras.layers.Dense(1, activation="softplus", input_shape=(3,))]
            )
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=loss)
        hist = model.fit(x, y, epochs=5, verbose=0)
        assert hist.history["loss"][-1] < hist.history["loss"][0]


@pytest.mark.parametrize(
    "fn,t,p",
    [
        (L.hinge, TPM, LOGITS),
        (L.categorical_hinge, ONEHOT, LOGITS),
        (L.log_cosh, POS, POS2),
        (L.poisson, POS, POS2),
        (L.cosine_similarity, LOGITS, POS),
        (L.mape, POS, POS2),
        (L.msle, POS, POS2),
        (lambda t, p: L.binary_focal_crossentropy(t, p, from_logits=True), T01, LOGITS),
        (lambda t, p: L.categorical_focal_crossentropy(t, p, from_logits=True), ONEHOT, LOGITS),
    ],
)
def test_gradients_match_finite_differences(fn, t, p):
    t64 = tf.constant(t.astype(np.float64))
    check_gradients(lambda x: fn(t64, x), [p.astype(np.float64)])
