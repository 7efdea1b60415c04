"""`tf.keras.utils.Sequence` in fit/evaluate/predict (workers=, use_multiprocessing=, shuffle)
and the Ordered/Generator enqueuers."""

import threading

import numpy as np
import pytest

import layerflow as tf


class Batches(tf.keras.utils.Sequence):
    def __init__(self, n=6, size=4):
        self.n, self.size = n, size
        self.epoch_ends = 0
        self.seen = []
        self.threads = set()
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.lock:
            self.seen.append(i)
            self.threads.add(threading.current_thread().name)
        x = np.full((self.size, 2), i, "float32")
        return x, x.sum(axis=1, keepdims=True)

    def on_epoch_end(self):
        self.epoch_ends += 1


def _model():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def test_fit_reads_every_batch_each_epoch_and_calls_on_epoch_end():
    seq = Batches()
    history = _model().fit(seq, epochs=3, verbose=0, shuffle=False)
    assert len(history.history["loss"]) == 3
    assert seq.seen == list(range(6)) * 3 and seq.epoch_ends == 3


def test_fit_shuffles_the_batch_order_per_epoch():
    tf.keras.utils.set_random_seed(1)
    seq = Batches(n=8)
    _model().fit(seq, epochs=2, verbose=0)  # shuffle=True by default
    first, second = seq.seen[:8], seq.seen[8:]
    assert sorted(first) == sorted(second) == list(range(8))
    assert first != list(range(8)) or second != list(range(8))


@pytest.mark.parametrize("use_multiprocessing", [False, True])
def test_workers_read_in_threads_and_keep_order(use_multiprocessing):
    seq = Batches(n=10, size=1)
    model = _model()
    model.fit(seq, epochs=1, verbose=0, workers=3, use_multiprocessing=use_multiprocessing,
              max_queue_size=2)  # fmt: skip
    assert any(name.startswith("keras-sequence") for name in seq.threads)
    pred = model.predict(seq, workers=4, verbose=0)
    want = model.predict(np.repeat(np.arange(10, dtype="float32"), 2).reshape(10, 2), verbose=0)
    np.testing.assert_allclose(pred, want, rtol=1e-6)  # batches came back in order
    loss = model.evaluate(seq, workers=2, verbose=0)
    assert np.isfinite(loss)


def test_steps_per_epoch_shorter_than_the_sequence_continues_across_epochs():
    seq = Batches(n=4)
    _model().fit(seq, epochs=3, steps_per_epoch=3, verbose=0, shuffle=False)
    assert seq.seen == [0, 1, 2, 3, 0, 1, 2, 3, 0] and seq.epoch_ends == 2


def test_an_error_in_getitem_reaches_fit():
    class Broken(Batches):
        def __getitem__(self, i):
            if i == 2:
                raise KeyError("bad batch 2")
            return super().__getitem__(i)

    with pytest.raises(KeyError, match="bad batch 2"):
        _model().fit(Broken(), epochs=1, verbose=0, workers=2)


def test_a_sequence_with_y_is_refused():
    with pytest.raises(ValueError, match="`y` must not be given"):
        _model().fit(Batches(), np.ones((6, 1)), verbose=0)


def test_base_class_methods_raise_until_defined():
    with pytest.raises(NotImplementedError, match="__len__"):
        len(tf.keras.utils.Sequence())
    with pytest.raises(NotImplementedError, match="__getitem__"):
        tf.keras.utils.Sequence()[0]


def test_ordered_enqueuer_runs_epochs_in_order():
    seq = Batches(n=3, size=1)
    enq = tf.keras.utils.OrderedEnqueuer(seq, use_multiprocessing=True)
    enq.start(workers=2, max_queue_size=2)
    got = enq.get()
    firsts = [int(next(got)[0][0, 0]) for _ in range(7)]
    enq.stop()
    assert firsts == [0, 1, 2, 0, 1, 2, 0] and seq.epoch_ends >= 2
    assert not enq.is_running()
    with pytest.raises(ValueError, match="workers"):
        enq.start(workers=0)


def test_generator_enqueuer_ends_with_the_generator_and_passes_errors():
    enq = tf.keras.utils.GeneratorEnqueuer(iter(range(5)))
    enq.start(workers=1, max_queue_size=2)
    assert list(enq.get()) == [0, 1, 2, 3, 4]
    enq.stop()

    def bad():
        yield 1
        raise RuntimeError("generator broke")

    enq = tf.keras.utils.GeneratorEnqueuer(bad())
    enq.start()
    with pytest.raises(RuntimeError, match="generator broke"):
        list(enq.get())
    assert issubclass(tf.keras.utils.OrderedEnqueuer, tf.keras.utils.SequenceEnqueuer)
