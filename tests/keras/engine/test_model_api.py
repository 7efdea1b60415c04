"""Keras 2's Model API beyond structure and fit (issue 11)."""

import copy
import logging

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


class TwoDense(tf.keras.Model):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.d1 = L.Dense(3)
        self.blocks = [L.Dense(units)]

    def call(self, x):
        return self.blocks[0](self.d1(x))

    def get_config(self):
        return {"units": self.units, "name": self.name}


def _functional():
    x = tf.keras.Input((4,), name="x")
    return tf.keras.Model(x, L.Dense(2, name="d2")(L.Dense(3, name="d1")(x)))


def test_symbolic_input_and_output():
    model = _functional()
    assert model.input is model.inputs and model.output is model.outputs
    seq = tf.keras.Sequential([tf.keras.Input((3,)), L.Dense(2)])
    assert tuple(seq.input.shape) == (None, 3) and tuple(seq.output.shape) == (None, 2)
    with pytest.raises(AttributeError, match="not connected"):
        TwoDense().input  # noqa: B018


def test_get_weight_paths():
    assert sorted(_functional().get_weight_paths()) == ["d1.bias", "d1.kernel", "d2.bias",
                                                        "d2.kernel"]  # fmt: skip
    sub = TwoDense()
    sub(np.ones((1, 4), np.float32))
    paths = sub.get_weight_paths()
    assert sorted(paths) == ["blocks.0.bias", "blocks.0.kernel", "d1.bias", "d1.kernel"]
    assert paths["d1.kernel"] is sub.d1.kernel


def test_reset_states_resets_stateful_layers():
    model = tf.keras.Sequential([tf.keras.Input((2, 1), batch_size=1),
                                 L.SimpleRNN(2, stateful=True)])  # fmt: skip
    first = model(np.ones((1, 2, 1), np.float32)).numpy()
    assert not np.allclose(model(np.ones((1, 2, 1), np.float32)).numpy(), first)
    model.reset_states()
    np.testing.assert_allclose(model(np.ones((1, 2, 1), np.float32)).numpy(), first)


def test_save_spec_and_distribution_properties():
    assert TwoDense().save_spec() is None
    sub = TwoDense()
    sub(np.ones((5, 4), np.float32))
    (args,), kwargs = sub.save_spec()
    assert kwargs == {} and tuple(args.shape) == (None, 4) and args.dtype == tf.float32
    assert tuple(sub.save_spec(dynamic_batch=False)[0][0].shape) == (5, 4)
    model = _functional()
    assert tuple(model.save_spec()[0][0].shape) == (None, 4)
    assert model.distribute_strategy is tf.distribute.get_strategy()
    assert model.distribute_reduction_method == "auto"
    model.distribute_reduction_method = "sum"
    assert model.distribute_reduction_method == "sum"
    with pytest.raises(ValueError, match="distribute_reduction_method"):
        model.distribute_reduction_method = "max"
    with pytest.warns(UserWarning, match="state_updates"):
        assert model.state_updates == []


def test_compile_config_round_trip(caplog):
    model = _functional()
    assert model.get_compile_config() is None
    model.compile(tf.keras.optimizers.Adam(0.01), "mse", metrics=["mae"], steps_per_execution=3)
    config = model.get_compile_config()
    other = _functional()
    other.compile_from_config(config)
    assert isinstance(other.optimizer, tf.keras.optimizers.Adam)
    assert other.optimizer.learning_rate.numpy() == pytest.approx(0.01)
    assert other.loss == "mse" and other.steps_per_execution == 3

    class CustomCompile(TwoDense):
        def compile(self, *args, **kwargs):
            super().compile(*args, **kwargs)

    with caplog.at_level(logging.WARNING, logger="layerflow"):
        CustomCompile().compile_from_config(config)
    assert "compile()` method is custom" in caplog.text


def test_refusals_match_tf_keras():
    model = _functional()
    with pytest.raises(RuntimeError, match="to_yaml\\(\\)` has been removed"):
        model.to_yaml()
    with pytest.raises(RuntimeError, match="model_from_yaml\\(\\)` has been removed"):
        tf.keras.models.model_from_yaml("x: 1")
    with pytest.raises(NotImplementedError, match="model.save\\('model.keras'\\)"):
        model.export("/tmp/exported")


def test_copies_of_a_model_never_share_weights():
    model = _functional()
    for clone in (copy.copy(model), copy.deepcopy(model)):
        assert clone.weights[0] is not model.weights[0]
        np.testing.assert_array_equal(clone.weights[0].numpy(), model.weights[0].numpy())
        x = np.ones((2, 4), np.float32)
        np.testing.assert_allclose(clone(x).numpy(), model(x).numpy())


def test_step_functions_and_steps_per_execution_hooks():
    model = _functional()
    model.compile("sgd", "mse", steps_per_execution=2)
    train = model.make_train_function()
    assert model.make_train_function() is train and model.train_function is train
    data = [(np.ones((2, 4), np.float32), np.ones((2, 2), np.float32))] * 3
    logs = train(iter(data))
    assert model.optimizer.iterations.numpy() == 2 and "loss" in logs  # two steps per call
    assert "loss" in model.make_test_function()(iter(data))
    assert model.make_predict_function()(iter(data)).shape == (4, 2)
    seen = []

    class Hooks(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(("begin", batch))

        def on_train_batch_end(self, batch, logs=None):
            seen.append(("end", batch))

    model.fit(np.ones((10, 4)), np.ones((10, 2)), batch_size=2, verbose=0, callbacks=[Hooks()])
    assert seen == [("begin", 0), ("end", 1), ("begin", 2), ("end", 3), ("begin", 4), ("end", 4)]
    assert model.optimizer.iterations.numpy() == 2 + 5
    model.compile("sgd", "mse", steps_per_execution="auto")
    assert model.autotune_steps_per_execution and model.steps_per_execution == 1
    with pytest.raises(ValueError, match="positive integer"):
        model.compile("sgd", "mse", steps_per_execution=0)


def test_deprecated_generator_methods_warn_then_delegate():
    model = _functional()
    model.compile("sgd", "mse")

    def batches():
        while True:
            yield np.ones((2, 4), np.float32), np.ones((2, 2), np.float32)

    with pytest.warns(UserWarning, match="fit_generator` is deprecated"):
        history = model.fit_generator(batches(), steps_per_epoch=2, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    with pytest.warns(UserWarning, match="evaluate_generator` is deprecated"):
        assert model.evaluate_generator(batches(), steps=2) > 0
    with pytest.warns(UserWarning, match="predict_generator` is deprecated"):
        assert model.predict_generator(batches(), steps=2).shape == (4, 2)


def test_clone_model_of_a_subclassed_model_uses_its_config():
    sub = TwoDense(units=5)
    clone = tf.keras.models.clone_model(sub)
    assert type(clone) is TwoDense and clone.units == 5 and clone is not sub
    with pytest.raises(ValueError, match="only supported for Sequential models or Functional"):
        tf.keras.models.clone_model(sub, clone_function=lambda layer: layer)


def test_model_from_config():
    model = _functional()
    rebuilt = tf.keras.models.model_from_config({"class_name": "Functional",
                                                 "config": model.get_config()})  # fmt: skip
    assert [layer.name for layer in rebuilt.layers] == ["x", "d1", "d2"]
    with pytest.raises(TypeError, match="expects a dictionary, not a list"):
        tf.keras.models.model_from_config([])
