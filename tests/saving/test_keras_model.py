"""Whole models in `.keras` files: Sequential, functional and subclassed round trips, the compile
configuration, Lambda refused in safe mode, a file made by real Keras 3, damaged files."""

import json
import pathlib
import sys
import zipfile

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.saving.weights_file import WeightsFileError

from . import peers

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
X = np.load(FIXTURES / "x.npy")
try:
    import h5py  # noqa: F401

    HAVE_H5PY = True
except ImportError:
    HAVE_H5PY = False
needs_h5py = pytest.mark.skipif(not HAVE_H5PY, reason="h5py (the `h5` extra) is not installed")


def trained_mlp():
    tf.keras.utils.set_random_seed(3)
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(6, activation="relu"), tf.keras.layers.Dense(3)]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    model.fit(X, np.ones((5, 3), np.float32), epochs=2, verbose=0)
    return model


@tf.keras.utils.register_keras_serializable(package="SavingTest")
class Scaled(tf.keras.Model):
    def __init__(self, units=3, scale=2.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.scale = units, scale
        self.hidden = tf.keras.layers.Dense(5, activation="tanh")
        self.out = tf.keras.layers.Dense(units)

    def call(self, x):
        return self.out(self.hidden(x)) * self.scale

    def get_config(self):
        return {"units": self.units, "scale": self.scale, "name": self.name}


class Unregistered(Scaled):
    pass


def test_sequential_round_trip_restores_outputs_and_compile(tmp_path):
    model = trained_mlp()
    path = tmp_path / "mlp.keras"
    model.save(path)
    weights = "model.weights.h5" if HAVE_H5PY else "model.weights.safetensors"
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["config.json", "metadata.json", weights]
        config = json.loads(z.read("config.json"))
    assert config["class_name"] == "Sequential"
    assert config["compile_config"]["loss"] == "mse"
    clone = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(clone(X).numpy(), model(X).numpy())
    assert type(clone.optimizer).__name__ == "Adam"
    assert float(clone.optimizer.learning_rate) == pytest.approx(0.01)
    assert clone.loss == "mse" and clone.metrics_names == ["loss", "mae"]
    clone.fit(X, np.ones((5, 3), np.float32), epochs=1, verbose=0)  # it is really compiled
    assert not tf.keras.models.load_model(path, compile=False)._is_compiled


def test_functional_round_trip_with_branches_and_a_merge(tmp_path):
    inp = tf.keras.Input((4,))
    a = tf.keras.layers.Dense(5, activation="relu")(inp)
    b = tf.keras.layers.Dense(5)(inp)
    out = tf.keras.layers.Dense(2)(tf.keras.layers.Add()([a, b]))
    model = tf.keras.Model(inp, out)
    model.save(tmp_path / "f.keras")
    clone = tf.keras.models.load_model(tmp_path / "f.keras")
    assert clone._is_graph_network and len(clone.layers) == len(model.layers)
    np.testing.assert_array_equal(clone(X).numpy(), model(X).numpy())


@pytest.mark.parametrize("built", [True, False])
def test_registered_subclassed_model_round_trip(tmp_path, built):
    model = Scaled(units=3, scale=0.5)
    y = model(X).numpy()
    if not built:  # a model that never recorded an input shape: weights restored on first call
        model.__dict__["_build_input_shape"] = None
    model.save(tmp_path / "s.keras")
    clone = tf.keras.saving.load_model(tmp_path / "s.keras")
    assert type(clone) is Scaled and clone.scale == 0.5
    np.testing.assert_array_equal(clone(X).numpy(), y)


def test_unregistered_class_loads_with_custom_objects(tmp_path):
    model = Unregistered(units=2)
    y = model(X).numpy()
    model.save(tmp_path / "u.keras")
    with pytest.raises(ValueError, match="custom_objects"):
        tf.keras.models.load_model(tmp_path / "u.keras")
    clone = tf.keras.models.load_model(
        tmp_path / "u.keras", custom_objects={"Unregistered": Unregistered}
    )
    np.testing.assert_array_equal(clone(X).numpy(), y)


def test_lambda_is_refused_in_safe_mode_and_loads_when_trusted(tmp_path):
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(3), tf.keras.layers.Lambda(lambda t: t * 2.0 + 1.0)]
    )
    y = model(X).numpy()
    model.save(tmp_path / "l.keras")
    with pytest.raises(ValueError, match="safe_mode=False"):
        tf.keras.models.load_model(tmp_path / "l.keras")
    clone = tf.keras.models.load_model(tmp_path / "l.keras", safe_mode=False)
    np.testing.assert_allclose(clone(X).numpy(), y, rtol=1e-6)


@needs_h5py
def test_a_keras3_file_loads_with_outputs_and_compile_config():
    model = tf.keras.models.load_model(FIXTURES / "keras_mlp.keras")
    np.testing.assert_allclose(
        model(X).numpy(), np.load(FIXTURES / "keras_mlp_keras_y.npy"), rtol=1e-5, atol=1e-6
    )
    assert [type(layer).__name__ for layer in model.layers] == ["Dense", "Dense"]
    assert type(model.optimizer).__name__ == "Adam"
    assert model.loss == "mse" and model.metrics_names == ["loss", "mae"]


def test_weights_fall_back_to_safetensors_without_h5py(tmp_path, monkeypatch):
    model = trained_mlp()
    monkeypatch.setitem(sys.modules, "h5py", None)
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as z:
        assert "model.weights.safetensors" in z.namelist()
    clone = tf.keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(clone(X).numpy(), model(X).numpy())


def test_bad_files_and_names(tmp_path):
    model = trained_mlp()
    with pytest.raises(ValueError, match=r"\.keras"):
        model.save(tmp_path / "m.npz")  # `.h5` is Keras 2's whole-model HDF5 (issue 11)
    (tmp_path / "junk.keras").write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(WeightsFileError, match="junk.keras"):
        tf.keras.models.load_model(tmp_path / "junk.keras")
    with zipfile.ZipFile(tmp_path / "empty.keras", "w") as z:
        z.writestr("metadata.json", "{}")
    with pytest.raises(WeightsFileError, match="config.json"):
        tf.keras.models.load_model(tmp_path / "empty.keras")
    with zipfile.ZipFile(tmp_path / "badjson.keras", "w") as z:
        z.writestr("config.json", "{not json")
    with pytest.raises(WeightsFileError, match="not valid JSON"):
        tf.keras.models.load_model(tmp_path / "badjson.keras")
    model.save(tmp_path / "ok.keras")
    before = (tmp_path / "ok.keras").read_bytes()
    with pytest.raises(FileExistsError):
        model.save(tmp_path / "ok.keras", overwrite=False)
    assert (tmp_path / "ok.keras").read_bytes() == before


@needs_h5py
def test_a_file_whose_weights_do_not_match_its_config_fails_whole(tmp_path):
    model = trained_mlp()
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as z:
        config = json.loads(z.read("config.json"))
        weights = z.read("model.weights.h5")
    config["config"]["layers"][0]["config"]["units"] = 7
    with zipfile.ZipFile(tmp_path / "edited.keras", "w") as z:
        z.writestr("config.json", json.dumps(config))
        z.writestr("model.weights.h5", weights)
    with pytest.raises(ValueError, match=r"\(4, 7\)"):
        tf.keras.models.load_model(tmp_path / "edited.keras")


def test_facades_name_the_same_functions():
    from layerflow._src.keras.saving import saving_lib as saving

    assert tf.keras.saving.save_model is saving.save_model
    assert tf.keras.saving.load_model is saving.load_model
    assert tf.keras.saving.register_keras_serializable is tf.keras.utils.register_keras_serializable


KERAS_LOADER = """
import os, sys
os.environ["KERAS_BACKEND"] = "tensorflow"
import keras, numpy as np
model = keras.models.load_model(sys.argv[1])
print(type(model.optimizer).__name__, model.loss)
np.save(sys.argv[3], np.asarray(model(np.load(sys.argv[2]))))
"""


@needs_h5py
@peers.needs_peers
def test_layerflow_sequential_keras_file_loads_in_real_keras(tmp_path):
    import os
    import subprocess

    model = trained_mlp()
    model.save(tmp_path / "m.keras")
    (tmp_path / "loader.py").write_text(KERAS_LOADER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    args = [str(peers.python()), str(tmp_path / "loader.py"), str(tmp_path / "m.keras"),
            str(FIXTURES / "x.npy"), str(tmp_path / "y.npy")]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["Adam", "mse"]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), model(X).numpy(), rtol=1e-5, atol=1e-6)
