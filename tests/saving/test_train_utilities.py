"""tf.train.ExponentialMovingAverage, Coordinator and ClusterSpec with TF 2.21's semantics
(the expected values are TF's own outputs for the same calls)."""

import threading
import time

import numpy as np
import pytest

import layerflow as tf


def test_ema_updates_names_and_num_updates():
    v = tf.Variable([1.0, 2.0], name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    ema.apply([v])
    assert ema.average(v).numpy().tolist() == [1.0, 2.0]  # starts at the variable's value
    assert ema.average_name(v) == "v/ExponentialMovingAverage"
    assert ema.average(v).name == "v/ExponentialMovingAverage:0"
    assert not ema.average(v).trainable
    v.assign([3.0, 4.0])
    ema.apply([v])
    assert ema.average(v).numpy().tolist() == [2.0, 3.0]
    ema2 = tf.train.ExponentialMovingAverage(0.9, num_updates=0)  # decay min(0.9, 1/10)
    ema2.apply([v])
    v.assign([5.0, 6.0])
    ema2.apply([v])
    np.testing.assert_allclose(ema2.average(v).numpy(), [4.8, 5.8], rtol=1e-6)
    assert ema.variables_to_restore() == {"v/ExponentialMovingAverage": v}
    assert ema.average(tf.Variable(1.0)) is None


def test_ema_matches_the_recurrence_over_many_steps():
    v = tf.Variable(0.0)
    ema = tf.train.ExponentialMovingAverage(0.8)
    ref = None
    for x in np.linspace(0.0, 3.0, 10):
        v.assign(x)
        ema.apply([v])
        ref = float(x) if ref is None else ref - 0.2 * (ref - float(x))
    np.testing.assert_allclose(float(ema.average(v)), ref, rtol=1e-6)


def test_ema_errors_like_tf():
    ema = tf.train.ExponentialMovingAverage(0.5, zero_debias=True)
    with pytest.raises(TypeError, match="non-Variable tensors"):
        ema.apply([tf.constant([1.0])])
    with pytest.raises(TypeError, match="must be half, float, or double"):
        ema.apply([tf.Variable([1, 2])])


def test_coordinator_stop_on_exception_and_join_reraises():
    coord = tf.train.Coordinator()
    with coord.stop_on_exception():
        raise ValueError("boom")  # swallowed: it becomes a stop request
    assert coord.should_stop()
    with pytest.raises(ValueError, match="boom"):
        coord.join([])
    clean = tf.train.Coordinator()
    clean.request_stop(tf.errors.OutOfRangeError(None, None, "done"))
    clean.join([])  # a clean stop raises nothing
    assert clean.should_stop() and clean.joined


def test_coordinator_stops_threads_and_reports_stragglers():
    coord = tf.train.Coordinator()
    counts = [0, 0]

    def work(i):
        with coord.stop_on_exception():
            while not coord.should_stop():
                counts[i] += 1
                if i == 1 and counts[i] == 50:
                    raise RuntimeError("worker 1 failed")
                time.sleep(0.001)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    with pytest.raises(RuntimeError, match="worker 1 failed"):
        coord.join(threads, stop_grace_period_secs=5)
    assert not any(t.is_alive() for t in threads) and counts[0] > 0
    # a thread that ignores the stop request is named after the grace period
    release = threading.Event()
    stubborn = threading.Thread(target=release.wait, name="stubborn")
    stubborn.start()
    coord2 = tf.train.Coordinator()
    coord2.register_thread(stubborn)
    coord2.request_stop()
    try:
        with pytest.raises(RuntimeError, match="threads still running: stubborn"):
            coord2.join(stop_grace_period_secs=0.05)
        coord3 = tf.train.Coordinator()
        coord3.request_stop()
        coord3.join([stubborn], stop_grace_period_secs=0.01, ignore_live_threads=True)
    finally:
        release.set()
        stubborn.join()
    coord.clear_stop()
    assert not coord.should_stop()
    assert coord.wait_for_stop(0.01) is False


def test_cluster_spec():
    cs = tf.train.ClusterSpec(
        {"worker": ["w0:2222", "w1:2222"], "ps": {1: "p1:2222", 3: "p3:2222"}}
    )
    assert cs.as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": {1: "p1:2222", 3: "p3:2222"}}
    assert cs.jobs == ["worker", "ps"] and cs.num_tasks("ps") == 2
    assert cs.task_indices("ps") == [1, 3] and cs.task_address("ps", 3) == "p3:2222"
    assert cs.job_tasks("ps") == [None, "p1:2222", None, "p3:2222"]
    assert bool(cs) and not tf.train.ClusterSpec({})
    assert tf.train.ClusterSpec(cs) == cs
    assert repr(cs) == ("ClusterSpec({'ps': {1: 'p1:2222', 3: 'p3:2222'}, "
                        "'worker': ['w0:2222', 'w1:2222']})")  # fmt: skip
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        cs.task_address("chief", 0)
    with pytest.raises(ValueError, match="No task with index 0 in job 'ps'"):
        cs.task_address("ps", 0)
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        tf.train.ClusterSpec({"worker": "w0:2222"})
