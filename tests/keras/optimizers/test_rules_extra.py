"""Adamax, Nadam, Adadelta, Ftrl, Adafactor, Lion: step by step against tf_keras's trajectories
(fixtures made by real tf_keras, see fixtures/README.md) and against a NumPy transcription of
tf_keras's update equations written here; config round trips, names and aliases."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import layerflow as tf

FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "optimizers_tf_keras.npz"
# The same cases as make_fixtures.py (the fixture stores only the trajectories).
CASES = {
    "adamax": ("Adamax", {"learning_rate": 0.05}),
    "nadam": ("Nadam", {"learning_rate": 0.05}),
    "adadelta": ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    "ftrl": ("Ftrl", {"learning_rate": 0.1}),
    "ftrl_reg": (
        "Ftrl",
        {
            "learning_rate": 0.1,
            "l1_regularization_strength": 0.01,
            "l2_regularization_strength": 0.02,
            "l2_shrinkage_regularization_strength": 0.03,
            "beta": 0.5,
            "learning_rate_power": -0.7,
        },
    ),
    "adafactor": ("Adafactor", {"learning_rate": 0.1}),
    "adafactor_fixed": ("Adafactor", {"learning_rate": 0.05, "relative_step": False}),
    "lion": ("Lion", {"learning_rate": 0.01}),
}


# --- NumPy transcriptions of tf_keras's update_step (float64) ---------------------------------
def np_adamax(w, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    m = s.setdefault("m", np.zeros_like(w))
    u = s.setdefault("u", np.zeros_like(w))
    m += (g - m) * (1 - beta_1)
    u[...] = np.maximum(beta_2 * u, np.abs(g))
    return w - lr * m / ((1 - beta_1**t) * (u + epsilon))


def np_nadam(w, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    m = s.setdefault("m", np.zeros_like(w))
    v = s.setdefault("v", np.zeros_like(w))
    u = [beta_1 * (1 - 0.5 * 0.96**i) for i in range(1, t + 2)]
    prod_t, prod_t1 = np.prod(u[:t]), np.prod(u[: t + 1])
    m += (g - m) * (1 - beta_1)
    v += (g * g - v) * (1 - beta_2)
    m_hat = u[t] * m / (1 - prod_t1) + (1 - u[t - 1]) * g / (1 - prod_t)
    v_hat = v / (1 - beta_2**t)
    return w - m_hat * lr / (np.sqrt(v_hat) + epsilon)


def np_adadelta(w, g, s, t, lr, rho=0.95, epsilon=1e-7):
    ag = s.setdefault("ag", np.zeros_like(w))
    ad = s.setdefault("ad", np.zeros_like(w))
    ag[...] = rho * ag + (1 - rho) * g * g
    delta = -np.sqrt(ad + epsilon) * g / np.sqrt(ag + epsilon)
    ad[...] = rho * ad + (1 - rho) * delta * delta
    return w + lr * delta


def np_ftrl(
    w,
    g,
    s,
    t,
    lr,
    learning_rate_power=-0.5,
    initial_accumulator_value=0.1,
    l1_regularization_strength=0.0,
    l2_regularization_strength=0.0,
    l2_shrinkage_regularization_strength=0.0,
    beta=0.0,
):
    acc = s.setdefault("acc", np.full_like(w, initial_accumulator_value))
    lin = s.setdefault("lin", np.zeros_like(w))
    p = -learning_rate_power
    l2 = l2_regularization_strength + beta / (2 * lr)
    g2 = g + 2 * l2_shrinkage_regularization_strength * w
    new_acc = acc + g * g
    lin += g2 - (new_acc**p - acc**p) / lr * w
    quad = new_acc**p / lr + 2 * l2
    l1 = l1_regularization_strength
    acc[...] = new_acc
    return (np.clip(lin, -l1, l1) - lin) / quad


def np_adafactor(
    w,
    g,
    s,
    t,
    lr,
    beta_2_decay=-0.8,
    epsilon_1=1e-30,
    epsilon_2=1e-3,
    clip_threshold=1.0,
    relative_step=True,
):
    def rms(x):
        return np.sqrt(np.mean(x * x))

    if relative_step:
        lr = min(lr, 1 / np.sqrt(t))
    rho_t = min(lr, 1 / np.sqrt(t))
    alpha = max(epsilon_2, rms(w)) * rho_t
    sq = g * g + epsilon_1
    b2 = 1 - t**beta_2_decay
    v = s.setdefault("v", np.zeros_like(w))
    if w.ndim >= 2:
        r = s.setdefault("r", np.zeros(w.shape[:-1]))
        c = s.setdefault("c", np.zeros(w.shape[:-2] + w.shape[-1:]))
        r[...] = b2 * r + (1 - b2) * sq.mean(-1)
        c[...] = b2 * c + (1 - b2) * sq.mean(-2)
        v[...] = (r / r.mean(-1, keepdims=True))[..., None] * c[..., None, :]
    else:
        v[...] = b2 * v + (1 - b2) * sq
    u = g / np.sqrt(v)
    return w - alpha * u / max(1.0, rms(u) / clip_threshold)


def np_lion(w, g, s, t, lr, beta_1=0.9, beta_2=0.99):
    m = s.setdefault("m", np.zeros_like(w))
    w = w - lr * np.sign(m * beta_1 + g * (1 - beta_1))
    m[...] = m * beta_2 + g * (1 - beta_2)
    return w


NUMPY_RULES = {
    "Adamax": np_adamax,
    "Nadam": np_nadam,
    "Adadelta": np_adadelta,
    "Ftrl": np_ftrl,
    "Adafactor": np_adafactor,
    "Lion": np_lion,
}


@pytest.fixture(scope="module")
def ref():
    return dict(np.load(FIXTURE))


def _run(cls_name, kwargs, ref):
    w = tf.Variable(ref["w0"])
    b = tf.Variable(ref["b0"])
    opt = getattr(tf.keras.optimizers, cls_name)(**kwargs)
    ws, bs = [], []
    for i in range(len(ref["gw"])):
        opt.apply_gradients([(tf.constant(ref["gw"][i]), w), (tf.constant(ref["gb"][i]), b)])
        ws.append(w.numpy())
        bs.append(b.numpy())
    return np.stack(ws), np.stack(bs), opt


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_tf_keras_step_by_step(case, ref):
    cls_name, kwargs = CASES[case]
    ws, bs, _ = _run(cls_name, kwargs, ref)
    assert ws.dtype == np.float32
    np.testing.assert_allclose(ws, ref[f"{case}/w"], rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(bs, ref[f"{case}/b"], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_numpy_equations(case, ref):
    cls_name, kwargs = CASES[case]
    ws, bs, _ = _run(cls_name, kwargs, ref)
    rule = NUMPY_RULES[cls_name]
    kw = dict(kwargs)
    lr = kw.pop("learning_rate")
    w, b = ref["w0"].astype(np.float64), ref["b0"].astype(np.float64)
    sw, sb = {}, {}
    for i in range(len(ref["gw"])):
        w = rule(w, ref["gw"][i].astype(np.float64), sw, i + 1, lr, **kw)
        b = rule(b, ref["gb"][i].astype(np.float64), sb, i + 1, lr, **kw)
        np.testing.assert_allclose(ws[i], w, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(bs[i], b, rtol=1e-4, atol=1e-5)


def test_nadam_product_advances_once_per_step_and_survives_iteration_changes(ref):
    # Two variables per step: a product advanced per variable would differ after step 1.
    _, _, opt = _run("Nadam", {"learning_rate": 0.05}, ref)
    u = [0.9 * (1 - 0.5 * 0.96**i) for i in range(1, 6)]
    assert opt._u_product[0] == 5
    np.testing.assert_allclose(opt._u_product[1], np.prod(u), rtol=1e-12)
    # A restored optimizer (iterations set by hand) recomputes the product from the step count.
    fresh = tf.keras.optimizers.Nadam(learning_rate=0.05)
    w = tf.Variable(ref["w0"])
    fresh.build([w])
    fresh.iterations.assign(3)
    fresh.apply_gradients([(tf.constant(ref["gw"][0]), w)])
    np.testing.assert_allclose(fresh._u_product[1], np.prod(u[:4]), rtol=1e-12)


def test_slots_and_variable_counts_as_tf_keras():
    w = tf.Variable(np.ones((3, 4), np.float32))
    b = tf.Variable(np.ones((4,), np.float32))
    counts = {}
    for name in ("Adamax", "Nadam", "Adadelta", "Ftrl", "Adafactor", "Lion"):
        opt = getattr(tf.keras.optimizers, name)()
        opt.build([w, b])
        counts[name] = len(opt.variables)
    # iterations + per variable: 2 slots (Lion 1; Adafactor r, c and v for the kernel, v for
    # the bias), as tf_keras's optimizer.variables.
    assert counts == {
        "Adamax": 5,
        "Nadam": 5,
        "Adadelta": 5,
        "Ftrl": 5,
        "Adafactor": 5,
        "Lion": 3,
    }
    opt = tf.keras.optimizers.Adafactor()
    opt.build([w])
    assert opt.get_slot(w, "r").shape == (3,)
    assert opt.get_slot(w, "c").shape == (4,)
    ftrl = tf.keras.optimizers.Ftrl(initial_accumulator_value=0.25)
    ftrl.build([w])
    np.testing.assert_array_equal(ftrl.get_slot(w, "accumulator").numpy(), np.full((3, 4), 0.25))


CONFIG_KEYS = {
    "Adamax": {"beta_1": 0.8, "beta_2": 0.9, "epsilon": 1e-5},
    "Nadam": {"beta_1": 0.8, "beta_2": 0.9, "epsilon": 1e-5},
    "Adadelta": {"rho": 0.5, "epsilon": 1e-5},
    "Ftrl": {
        "learning_rate_power": -0.25,
        "initial_accumulator_value": 0.5,
        "l1_regularization_strength": 0.1,
        "l2_regularization_strength": 0.2,
        "l2_shrinkage_regularization_strength": 0.3,
        "beta": 0.4,
    },
    "Adafactor": {
        "beta_2_decay": -0.5,
        "epsilon_1": 1e-20,
        "epsilon_2": 1e-2,
        "clip_threshold": 2.0,
        "relative_step": False,
    },
    "Lion": {"beta_1": 0.8, "beta_2": 0.95},
}


@pytest.mark.parametrize("name", sorted(CONFIG_KEYS))
def test_config_round_trip_and_serialize(name):
    cls = getattr(tf.keras.optimizers, name)
    opt = cls(learning_rate=0.25, clipnorm=1.5, **CONFIG_KEYS[name])
    config = opt.get_config()
    for key, value in CONFIG_KEYS[name].items():
        assert config[key] == value
    assert config["name"] == name and config["learning_rate"] == 0.25
    again = cls.from_config(config)
    assert type(again) is cls and again.get_config() == config
    back = tf.keras.optimizers.deserialize(tf.keras.optimizers.serialize(opt))
    assert type(back) is cls and back.get_config() == config


def test_names_resolve_as_in_tf_keras():
    for name, cls in [("adamax", "Adamax"), ("nadam", "Nadam"), ("adadelta", "Adadelta")]:
        assert type(tf.keras.optimizers.get(name)).__name__ == cls
    assert type(tf.keras.optimizers.get("Ftrl")).__name__ == "Ftrl"
    # Adafactor and Lion resolve by class name in a config, not by a lower-case name.
    lion = tf.keras.optimizers.deserialize({"class_name": "Lion", "config": {}})
    assert isinstance(lion, tf.keras.optimizers.Lion)
    with pytest.raises(ValueError, match="Unknown optimizer"):
        tf.keras.optimizers.get("lion")


def test_aliases_as_tf_keras_exposes_them():
    k = tf.keras.optimizers
    for name in ("Adadelta", "Adafactor", "Adamax", "Ftrl", "Nadam"):
        assert getattr(k.experimental, name) is getattr(k, name)
        assert getattr(tf.optimizers, name) is getattr(k, name)
    for name in ("Adadelta", "Adamax", "Ftrl", "Nadam"):
        assert getattr(k.legacy, name) is getattr(k, name)
    assert tf.optimizers.Lion is k.Lion
    # As in tf_keras: Lion only at the top, Adafactor not under legacy.
    assert not hasattr(k.legacy, "Adafactor") and not hasattr(k.legacy, "Lion")
    assert not hasattr(k.experimental, "Lion")


def test_argument_errors():
    with pytest.raises(ValueError, match="beta_1"):
        tf.keras.optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="learning_rate_power"):
        tf.keras.optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength"):
        tf.keras.optimizers.Ftrl(l1_regularization_strength=-1.0)


def test_train_a_model_with_fit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    for opt in (
        tf.keras.optimizers.Adamax(0.05),
        tf.keras.optimizers.Nadam(0.05),
        tf.keras.optimizers.Lion(0.03),
        tf.keras.optimizers.Adafactor(0.1),
    ):
        init = tf.keras.initializers.GlorotUniform(seed=1)
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer=init)])
        model.compile(optimizer=opt, loss="mse")
        hist = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
        # Adafactor's relative steps are small for small weights: it only has to improve.
        factor = 0.9 if isinstance(opt, tf.keras.optimizers.Adafactor) else 0.5
        assert hist.history["loss"][-1] < factor * hist.history["loss"][0], type(opt).__name__
