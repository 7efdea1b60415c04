"""`tf.keras.utils.Progbar` (Keras 2's output format) and the interactive-logging switch."""

import logging

import pytest

import layerflow as tf


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    tf.keras.utils.enable_interactive_logging()


def test_live_bar_format_and_averaged_metrics(capsys):
    bar = tf.keras.utils.Progbar(4, width=8, interval=0.0)
    bar._dynamic_display = False  # one line per update, as in a log file
    bar.update(1, values=[("loss", 1.0)])
    bar.update(3, values=[("loss", 2.0), ("acc", 0.5)])
    bar.update(4, values=[("loss", 4.0)])
    lines = capsys.readouterr().out.split("\n")
    assert lines[1].startswith("1/4 [=>......] - ETA: ") and "loss: 1.0000" in lines[1]
    # loss is averaged weighted by steps: (1*1 + 2*2) / 3
    assert lines[2].startswith("3/4 [=====>..]") and "loss: 1.6667 - acc: 0.5000" in lines[2]
    assert lines[3].startswith("4/4 [========] - 0s ") and "/step - loss: 2.2500" in lines[3]
    assert lines[4] == ""  # a finished bar ends its line


def test_stateful_metrics_unknown_target_and_add(capsys):
    bar = tf.keras.utils.Progbar(None, stateful_metrics=["acc"], interval=0.0)
    bar._dynamic_display = False
    bar.update(2, values=[("acc", 0.25)])
    bar.add(3, values=[("acc", 0.75)])
    out = capsys.readouterr().out
    assert "      5/Unknown" in out and "acc: 0.7500" in out  # shown as is, not averaged
    assert bar._seen_so_far == 5


def test_verbose_2_prints_one_line_at_the_end(capsys):
    bar = tf.keras.utils.Progbar(3, verbose=2)
    bar.update(1, values=[("loss", 0.00001)])
    assert capsys.readouterr().out == ""
    bar.update(3, values=[("loss", 0.00001)])
    out = capsys.readouterr().out
    assert out.startswith("3/3 - 0s - loss: 1.0000e-05 -") and "/epoch -" in out
    assert out.endswith("/step\n")


def test_verbose_0_is_silent_and_bad_target_raises(capsys):
    tf.keras.utils.Progbar(2, verbose=0).update(2, values=[("x", 1.0)])
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="target"):
        tf.keras.utils.Progbar(-1)


def test_disabled_interactive_logging_goes_to_logging(capsys, caplog):
    assert tf.keras.utils.is_interactive_logging_enabled()
    tf.keras.utils.disable_interactive_logging()
    assert not tf.keras.utils.is_interactive_logging_enabled()
    with caplog.at_level(logging.INFO, logger="layerflow"):
        tf.keras.utils.Progbar(1).update(1)
    assert capsys.readouterr().out == ""
    assert "1/1 [" in caplog.text
    tf.keras.utils.enable_interactive_logging()
    tf.keras.utils.Progbar(1).update(1)
    assert "1/1 [" in capsys.readouterr().out


def test_fit_progress_honours_the_switch(capsys, caplog):
    import numpy as np

    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((4, 2), "float32"), np.ones((4, 1), "float32")
    tf.keras.utils.disable_interactive_logging()
    with caplog.at_level(logging.INFO, logger="layerflow"):
        model.fit(x, y, epochs=1, verbose=2)
    assert capsys.readouterr().out == ""
    assert "Epoch 1/1" in caplog.text and "1/1 - " in caplog.text
    tf.keras.utils.enable_interactive_logging()
    model.fit(x, y, epochs=1, verbose=2)
    assert "Epoch 1/1" in capsys.readouterr().out
