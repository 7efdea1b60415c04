"""ExponentialDecay and InverseTimeDecay: values, staircase, errors, config round trips."""

import math

import pytest

import layerflow as tf

S = tf.keras.optimizers.schedules


@pytest.mark.parametrize("staircase", [False, True])
def test_values_match_the_formulas(staircase):
    exp = S.ExponentialDecay(0.1, 10, 0.5, staircase=staircase)
    inv = S.InverseTimeDecay(0.1, 10, 2.0, staircase=staircase)
    for step in (0, 5, 10, 25):
        p = math.floor(step / 10) if staircase else step / 10
        assert float(exp(step)) == pytest.approx(0.1 * 0.5**p, rel=1e-6)
        assert float(inv(step)) == pytest.approx(0.1 / (1 + 2.0 * p), rel=1e-6)


@pytest.mark.parametrize("cls", [S.ExponentialDecay, S.InverseTimeDecay])
def test_bad_decay_steps_names_the_schedule(cls):
    with pytest.raises(ValueError, match=f"{cls.__name__}: decay_steps must be > 0, got 0"):
        cls(0.1, 0, 0.5)


@pytest.mark.parametrize("cls", [S.ExponentialDecay, S.InverseTimeDecay])
def test_config_round_trip(cls):
    s = cls(0.3, 7, 0.9, staircase=True, name="lr")
    again = cls.from_config(s.get_config())
    assert again.get_config() == s.get_config() == {
        "initial_learning_rate": 0.3, "decay_steps": 7, "decay_rate": 0.9,
        "staircase": True, "name": "lr",
    }  # fmt: skip
    assert float(again(15)) == float(s(15))
