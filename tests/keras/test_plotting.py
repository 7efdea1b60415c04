"""tf.keras.utils.plot_history: a PNG of the per-epoch curves, written atomically."""

import struct
import sys

import pytest

import layerflow as tf


class _History:  # what model.fit returns: .history (dict of lists) and .epoch
    def __init__(self, history, epoch):
        self.history, self.epoch = history, epoch


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_plot_history_writes_a_png_with_one_panel_per_quantity(tmp_path):
    logs = {"loss": [0.9, 0.5, 0.4], "val_loss": [1.0, 0.6, 0.5], "accuracy": [0.6, 0.8, 0.85]}
    one = tmp_path / "one.png"
    out = tf.keras.utils.plot_history({"loss": logs["loss"]}, one)
    assert out == str(one)
    two = tmp_path / "sub" / "two.png"
    tf.keras.utils.plot_history(_History(logs, [0, 1, 2]), two)
    (w1, h1), (w2, h2) = _png_size(one), _png_size(two)
    assert h1 == h2 and w2 > 1.8 * w1  # loss+val_loss share a panel, accuracy gets a second one
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["one.png", "sub", "two.png"]


def test_plot_history_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        tf.keras.utils.plot_history({}, tmp_path / "x.png")
    with pytest.raises(TypeError, match="History"):
        tf.keras.utils.plot_history([0.1, 0.2], tmp_path / "x.png")
    with pytest.raises(TypeError, match="list of numbers"):
        tf.keras.utils.plot_history({"loss": ["a"]}, tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_without_matplotlib_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(ImportError, match=r"pip install 'layerflow\[plot\]'"):
        tf.keras.utils.plot_history({"loss": [1.0]}, tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []
