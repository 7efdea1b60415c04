"""The `get` of initializers, regularizers, constraints and activations: one shared lookup, each
module's own default, class handling, error type and message (pinned word for word)."""

import re

import pytest

import layerflow as tf

K = tf.keras


@pytest.mark.parametrize(
    ("module", "error", "message"),
    [
        (
            K.initializers,
            ValueError,
            "Could not interpret initializer identifier: 3. Pass a name such as 'glorot_uniform', "
            "an Initializer instance, a config dict, or a callable(shape, dtype).",
        ),
        (
            K.regularizers,
            ValueError,
            "Could not interpret regularizer identifier: 3. Pass 'l1', 'l2', "
            "'l1_l2', a Regularizer, a config dict, or a callable(weight) -> scalar.",
        ),
        (
            K.constraints,
            ValueError,
            "Could not interpret constraint identifier: 3. Pass a name such as "
            "'max_norm', a Constraint, a config dict, or a callable(weight) -> weight.",
        ),
        (
            K.activations,
            TypeError,
            "Could not interpret activation function identifier: 3. Pass a name such "
            "as 'relu', a callable, or None for linear.",
        ),
    ],
)
def test_uninterpretable_identifier(module, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        module.get(3)


def test_none_gives_each_modules_default():
    assert K.initializers.get(None) is None
    assert K.regularizers.get(None) is None
    assert K.constraints.get(None) is None
    assert K.activations.get(None) is K.activations.linear


def test_classes_instantiated_only_for_initializers():
    # Keras 2: initializers.get instantiates a class; the other modules return any callable.
    assert type(K.initializers.get(K.initializers.Ones)) is K.initializers.Ones
    assert K.regularizers.get(K.regularizers.L2) is K.regularizers.L2
    assert K.constraints.get(K.constraints.NonNeg) is K.constraints.NonNeg


@pytest.mark.parametrize(
    ("module", "name", "cls"),
    [
        (K.initializers, "he_normal", "HeNormal"),
        (K.regularizers, "l2", "L2"),
        (K.constraints, "unit_norm", "UnitNorm"),
    ],
)
def test_names_and_configs_round_trip(module, name, cls):
    obj = module.get(name)
    assert type(obj).__name__ == cls
    again = module.get(module.serialize(obj))
    assert type(again) is type(obj) and again.get_config() == obj.get_config()
    inst = module.get(name)
    assert module.get(inst) is inst


def test_reprs_show_the_config():
    assert repr(K.initializers.RandomNormal(1.0, 2.0, seed=3)) == (
        "RandomNormal(mean=1.0, stddev=2.0, seed=3)"
    )
    assert repr(K.initializers.Zeros()) == "Zeros()"
    assert repr(K.regularizers.L1L2(l1=0.5)) == "L1L2(l1=0.5, l2=0.0)"
    assert repr(K.constraints.MaxNorm(3, axis=1)) == "MaxNorm(max_value=3, axis=1)"
    assert repr(K.constraints.NonNeg()) == "NonNeg()"


def test_from_config_builds_the_class():
    assert K.regularizers.L1.from_config({"l1": 0.25}).l1 == 0.25
    assert K.constraints.UnitNorm.from_config({"axis": 1}).axis == 1
    # TF 1-style initializer configs carry a dtype, which Keras 2 ignores.
    init = K.initializers.TruncatedNormal.from_config(
        {"mean": 0.0, "stddev": 1.0, "seed": 2, "dtype": "float32"}
    )
    assert init.get_config() == {"mean": 0.0, "stddev": 1.0, "seed": 2}


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (K.initializers.RandomNormal, {"mean": 1.0, "stddev": 0.5, "seed": 4}),
        (K.initializers.TruncatedNormal, {"mean": -1.0, "stddev": 0.25, "seed": 4}),
    ],
)
def test_mean_stddev_initializers(cls, kwargs):
    init = cls(**kwargs)
    assert init.get_config() == kwargs
    a = init((2000,), "float64").numpy()
    b = init((2000,), "float64").numpy()
    assert (a == b).all()  # seeded: a pure function of the seed
    assert abs(a.mean() - kwargs["mean"]) < 0.05
    if cls is K.initializers.TruncatedNormal:
        assert abs(a - kwargs["mean"]).max() <= 2 * kwargs["stddev"] + 1e-12
    with pytest.raises(ValueError, match=f"^{cls.__name__} draws floating-point values"):
        init((2,), "int32")


@pytest.mark.parametrize(("cls", "value"), [(K.initializers.Zeros, 0), (K.initializers.Ones, 1)])
@pytest.mark.parametrize("dtype", [None, "float64", "int32", "bool"])
def test_zeros_and_ones_any_dtype(cls, value, dtype):
    out = cls()((2, 3), dtype)
    assert out.shape == (2, 3)
    assert out.dtype.name == (dtype or "float32")
    assert (out.numpy() == value).all()
