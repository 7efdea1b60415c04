"""Optimizer.compute_gradients / aggregate_gradients / set_weights / save_own_variables /
load_own_variables (tf_keras 2.11+ semantics), and schedules.CosineDecayRestarts."""

from __future__ import annotations

import numpy as np
import pytest

import layerflow as tf


def test_compute_gradients_callable_and_tensor_loss():
    v = tf.Variable([1.0, 2.0])
    opt = tf.keras.optimizers.SGD()
    pairs = opt.compute_gradients(lambda: tf.reduce_sum(v * v), [v])
    assert len(pairs) == 1 and pairs[0][1] is v
    np.testing.assert_allclose(pairs[0][0].numpy(), [2.0, 4.0])
    u = tf.Variable(5.0)
    with tf.GradientTape() as tape:
        loss = v[0] * 3.0
    pairs = opt.compute_gradients(loss, [v, u], tape=tape)
    np.testing.assert_allclose(pairs[0][0].numpy(), [3.0, 0.0])
    assert pairs[1][0] is None and pairs[1][1] is u
    with pytest.raises(ValueError, match="tape"):
        opt.compute_gradients(loss, [v])


def test_compute_gradients_var_list_callable_created_by_loss():
    holder = []

    def loss():
        if not holder:
            holder.append(tf.Variable(2.0))
        return holder[0] ** 3

    pairs = tf.keras.optimizers.Adam().compute_gradients(loss, lambda: holder)
    assert float(pairs[0][0]) == pytest.approx(12.0)


def test_aggregate_gradients_outside_and_inside_a_strategy(two_cpus):
    v, u = tf.Variable(1.0), tf.Variable(2.0)
    opt = tf.keras.optimizers.SGD()
    g = tf.constant(3.0)
    out = opt.aggregate_gradients([(g, v), (None, u)])
    assert len(out) == 1 and out[0][0] is g and out[0][1] is v
    with pytest.raises(ValueError, match="No gradients"):
        opt.aggregate_gradients([(None, v)])
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        w = tf.Variable(1.0)

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        grad = tf.constant(float(ctx.replica_id_in_sync_group + 1))
        return opt.aggregate_gradients([(grad, w)])[0][0]

    result = strategy.run(replica_fn)
    values = [float(x) for x in strategy.experimental_local_results(result)]
    assert values == [3.0, 3.0]


def test_set_weights_and_errors_assign_nothing():
    w = tf.Variable(np.ones((2, 2), np.float32))
    opt = tf.keras.optimizers.Adam()
    with pytest.raises(ValueError, match="not yet been built"):
        opt.set_weights([])
    opt.build([w])
    new = [np.int64(7), np.full((2, 2), 0.5, np.float32), np.full((2, 2), 0.25, np.float32)]
    opt.set_weights(new)
    assert int(opt.iterations.numpy()) == 7
    np.testing.assert_array_equal(opt.get_slot(w, "v").numpy(), new[2])
    before = [x.numpy().copy() for x in opt.variables]
    with pytest.raises(ValueError, match=r"expected shape \(2, 2\), got \(3,\)"):
        opt.set_weights([np.int64(1), np.zeros((2, 2)), np.zeros(3)])
    with pytest.raises(ValueError, match="has 3 variables but 2 values"):
        opt.set_weights(new[:2])
    for x, b in zip(opt.variables, before):
        np.testing.assert_array_equal(x.numpy(), b)


def test_save_and_load_own_variables_round_trip():
    w = tf.Variable(np.ones((3,), np.float32))
    opt = tf.keras.optimizers.Nadam(0.1)
    for _ in range(3):
        opt.apply_gradients([(tf.constant([1.0, -1.0, 0.5]), w)])
    store = {}
    opt.save_own_variables(store)
    assert sorted(store) == ["0", "1", "2"]
    assert int(store["0"]) == 3
    other = tf.keras.optimizers.Nadam(0.1)
    w2 = tf.Variable(np.ones((3,), np.float32))
    other.build([w2])
    other.load_own_variables(store)
    for a, b in zip(opt.variables, other.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the same next step (Nadam's momentum product follows the restored step count)
    w2.assign(w)
    opt.apply_gradients([(tf.constant([0.3, 0.2, 0.1]), w)])
    other.apply_gradients([(tf.constant([0.3, 0.2, 0.1]), w2)])
    np.testing.assert_array_equal(w.numpy(), w2.numpy())


def test_load_own_variables_count_mismatch_warns_and_skips():
    opt = tf.keras.optimizers.Adam()
    with pytest.warns(UserWarning, match="Skipping variable loading.*not been called/built"):
        opt.load_own_variables({"0": np.int64(4), "1": np.zeros(3), "2": np.zeros(3)})
    assert int(opt.iterations.numpy()) == 0
    w = tf.Variable(np.ones((3,), np.float32))
    opt.build([w])
    with pytest.raises(ValueError, match="nothing was assigned"):
        opt.load_own_variables({"0": np.int64(4), "1": np.zeros(3), "2": np.zeros(2)})
    assert int(opt.iterations.numpy()) == 0


# Values computed by tf_keras 2.21 (CosineDecayRestarts(0.5, 7, t_mul=1.5, m_mul=0.8,
# alpha=0.1) and (0.5, 7, t_mul=1.0, m_mul=0.8) at steps 0, 3, ..., 57).
TF_KERAS_GEOMETRIC = [
    0.5,
    0.32506719,
    0.07228199,
    0.37872303,
    0.2434514,
    0.09805068,
    0.33728448,
    0.30431041,
    0.23300102,
    0.1481379,
    0.07921293,
    0.050179,
    0.27278274,
    0.24833353,
    0.2108284,
    0.16615744,
    0.1213361,
    0.08340351,
    0.05831683,
    0.23431434,
]
TF_KERAS_PERIODIC = [
    0.5,
    0.30563021,
    0.02475777,
    0.32469797,
    0.075302,
    0.30415505,
    0.12439667,
    0.25600001,
    0.15648265,
    0.01267597,
    0.1662454,
    0.03855461,
    0.15572739,
    0.06369103,
    0.13107201,
    0.08011918,
    0.00649009,
    0.08511765,
    0.01973996,
    0.07973240,
]


def _np_sgdr(step, lr0, first, t_mul, m_mul, alpha):
    frac = step / first
    if t_mul == 1.0:
        i = np.floor(frac)
        frac -= i
    else:
        i = np.floor(np.log(1 - frac * (1 - t_mul)) / np.log(t_mul))
        frac = (frac - (1 - t_mul**i) / (1 - t_mul)) / t_mul**i
    return lr0 * ((1 - alpha) * 0.5 * m_mul**i * (1 + np.cos(np.pi * frac)) + alpha)


def test_cosine_decay_restarts_matches_tf_keras_and_numpy():
    sched = tf.keras.optimizers.schedules
    geo = sched.CosineDecayRestarts(0.5, 7, t_mul=1.5, m_mul=0.8, alpha=0.1)
    per = sched.CosineDecayRestarts(0.5, 7, t_mul=1.0, m_mul=0.8)
    steps = range(0, 60, 3)
    np.testing.assert_allclose([float(geo(s)) for s in steps], TF_KERAS_GEOMETRIC, rtol=1e-5)
    np.testing.assert_allclose(
        [float(per(s)) for s in steps], TF_KERAS_PERIODIC, rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        [float(geo(s)) for s in steps],
        [_np_sgdr(s, 0.5, 7, 1.5, 0.8, 0.1) for s in steps],
        rtol=1e-6,
    )
    assert geo(tf.constant(3)).dtype == tf.float32


def test_cosine_decay_restarts_config_and_optimizer_use():
    sched = tf.keras.optimizers.schedules
    s = sched.CosineDecayRestarts(0.5, 7, t_mul=1.5, m_mul=0.8, alpha=0.1, name="sgdr")
    config = s.get_config()
    assert config == {
        "initial_learning_rate": 0.5,
        "first_decay_steps": 7,
        "t_mul": 1.5,
        "m_mul": 0.8,
        "alpha": 0.1,
        "name": "sgdr",
    }
    back = sched.deserialize(sched.serialize(s))
    assert isinstance(back, sched.CosineDecayRestarts) and back.get_config() == config
    opt = tf.keras.optimizers.SGD(learning_rate=s)
    again = tf.keras.optimizers.SGD.from_config(opt.get_config())
    assert again.learning_rate is not None
    assert float(again.learning_rate) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="first_decay_steps"):
        sched.CosineDecayRestarts(0.1, 0)


def test_checkpoint_restored_into_an_unbuilt_optimizer_fills_its_slots_when_built(tmp_path):
    def make():
        model = tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
        return model

    x = np.random.default_rng(0).normal(size=(16, 2)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    a = make()
    a.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    path = str(tmp_path / "ckpt")
    tf.train.Checkpoint(model=a, optimizer=a.optimizer).write(path)
    b = make()
    assert not b.optimizer.built
    status = tf.train.Checkpoint(model=b, optimizer=b.optimizer).restore(path)
    assert any(p.startswith("optimizer/slots/") for p in status.pending)
    for m in (a, b):
        m.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    status.assert_consumed()
    assert int(b.optimizer.iterations.numpy()) == 8
    for u, v in zip(a.optimizer.variables, b.optimizer.variables):
        np.testing.assert_array_equal(u.numpy(), v.numpy())
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
