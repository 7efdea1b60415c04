import pytest

from layerflow._src.ops import control_flow_ops


@pytest.fixture
def spy(monkeypatch):
    """Counts the calls of tf.cond / tf.while_loop made by converted code."""
    calls = {"cond": 0, "while_loop": 0}
    cond, while_loop = control_flow_ops.cond, control_flow_ops.while_loop

    def spy_cond(*args, **kwargs):
        calls["cond"] += 1
        return cond(*args, **kwargs)

    def spy_while(*args, **kwargs):
        calls["while_loop"] += 1
        return while_loop(*args, **kwargs)

    monkeypatch.setattr(control_flow_ops, "cond", spy_cond)
    monkeypatch.setattr(control_flow_ops, "while_loop", spy_while)
    return calls


@pytest.fixture
def graph_cond(monkeypatch):
    """A tf.cond that runs both branches, as a trace does, and returns the taken one."""

    def cond(pred, true_fn, false_fn, name=None):
        a, b = true_fn(), false_fn()
        return a if bool(pred) else b

    monkeypatch.setattr(control_flow_ops, "cond", cond)
