"""tf.keras.utils.StepsPerExecutionTuner: tf_keras's throughput-driven tuning."""

import time

import pytest

import layerflow as tf


def _tuner(spe=4, **kwargs):
    opt = tf.keras.optimizers.SGD()
    var = tf.Variable(spe, dtype="int64")
    tuner = tf.keras.utils.StepsPerExecutionTuner(opt, var, **kwargs)
    tuner._begin_tuning()
    return tuner, opt, var


def test_tune_repeats_a_good_change_and_reverses_a_bad_one():
    tuner, _, var = _tuner(4)
    tuner.rgsps = [100.0]  # faster than before (0): repeat the last action (an increase)
    tuner._tune()
    assert int(var.numpy()) == 6 and tuner.spe_tune_last_action_add
    tuner.rgsps = [105.0]  # within 10 %: unchanged
    tuner._tune()
    assert int(var.numpy()) == 6
    tuner.rgsps = [50.0]  # slower: the opposite (halve), and the last action flips
    tuner._tune()
    assert int(var.numpy()) == 3 and not tuner.spe_tune_last_action_add
    tuner.rgsps = [80.0]  # faster again: repeat the decrease
    tuner._tune()
    assert int(var.numpy()) == 2


def test_measure_counts_iterations_and_tunes_on_its_interval(monkeypatch):
    tuner, opt, var = _tuner(2, change_spe_interval=2)
    clock = [1000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    tuner._begin_tuning()
    for it, spe in ((10, 2), (20, 3)):  # 10 steps per second; tuned on the 2nd measurement
        opt.iterations.assign(it)
        clock[0] += 1.0
        tuner._measure_and_tune()
        assert tuner.rgsps[-1] == pytest.approx(10.0)
        assert int(var.numpy()) == spe


def test_thread_starts_and_stops_and_setter():
    tuner, opt, var = _tuner(1, interval=0.01)
    thread = tuner.start()
    assert tuner.start() is thread and thread.is_alive()
    tuner.stop()
    thread.join(5)
    assert not thread.is_alive()
    tuner.steps_per_execution = 7
    assert int(var.numpy()) == 7 and tuner.init_spe == 7


def test_rejects_a_non_integer_variable():
    with pytest.raises(TypeError, match="integer tf.Variable"):
        tf.keras.utils.StepsPerExecutionTuner(tf.keras.optimizers.SGD(), tf.Variable(1.0))
