"""Keras 2's whole-model HDF5 (`model.save("m.h5")`, `load_model("m.h5")`), issue 11: our
files load in tf_keras, tf_keras's load here (a committed fixture), and hostile files are
refused before anything is assigned."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.saving.weights_file import WeightsFileError

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "saving"))
import peers  # noqa: E402

h5py = pytest.importorskip("h5py")
L = tf.keras.layers
FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _masked_model():
    tf.keras.utils.set_random_seed(0)
    tokens = tf.keras.Input((6,), dtype="int32")
    h = L.Bidirectional(L.LSTM(3))(L.Embedding(10, 4, mask_zero=True)(tokens))
    model = tf.keras.Model(tokens, L.Dense(2, activation="softmax")(tf.nn.relu(h) * 2.0))
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _x():
    x = np.random.default_rng(0).integers(1, 10, (4, 6)).astype("int32")
    x[:, 4:] = 0
    return x


def test_round_trip_keeps_architecture_weights_and_compile(tmp_path):
    model = _masked_model()
    model.fit(_x(), np.array([0, 1, 0, 1]), verbose=0)
    path = tmp_path / "m.h5"
    model.save(path)
    with h5py.File(path, "r") as f:
        document = json.loads(f.attrs["model_config"])
        assert document["class_name"] == "Functional"
        assert json.loads(f.attrs["training_config"])["loss"] == "sparse_categorical_crossentropy"
        raw = f["model_weights"].attrs["layer_names"]
        names = [n.decode() if isinstance(n, bytes) else n for n in raw]
        assert names == [layer.name for layer in model.layers]
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(_x(), verbose=0), model.predict(_x(), verbose=0),
                               rtol=1e-6)  # fmt: skip
    assert isinstance(loaded.optimizer, tf.keras.optimizers.Adam) and loaded.metrics_names
    seq = tf.keras.Sequential([L.Dense(3), L.BatchNormalization(), L.Dense(1)])
    seq(np.ones((2, 4), np.float32))  # built by a call: the config keeps build_input_shape
    seq.save(tmp_path / "s.h5")
    again = tf.keras.models.load_model(tmp_path / "s.h5", compile=False)
    np.testing.assert_allclose(again(np.ones((2, 4), np.float32)).numpy(),
                               seq(np.ones((2, 4), np.float32)).numpy(), rtol=1e-6)  # fmt: skip


def test_loads_a_model_saved_by_tf_keras():
    # Made by make_h5_fixture.py with tf_keras 2.21: Embedding(mask_zero) -> LSTM, a nested
    # Sequential, TFOpLambda layers, two inputs, compiled with Adam and accuracy.
    model = tf.keras.models.load_model(FIXTURES / "tf_keras_model.h5")
    io = np.load(FIXTURES / "tf_keras_model_io.npz")
    got = model.predict([io["tokens"], io["extra"]], verbose=0)
    np.testing.assert_allclose(got, io["expected"], atol=1e-5)
    assert isinstance(model.optimizer, tf.keras.optimizers.Adam)
    history = model.fit([io["tokens"], io["extra"]], np.zeros(6), verbose=0)
    assert set(history.history) == {"loss", "accuracy"}


@peers.needs_peers
def test_tf_keras_loads_our_file(tmp_path):
    model = _masked_model()
    path = tmp_path / "ours.h5"
    model.save(path)
    np.save(tmp_path / "x.npy", _x())
    np.save(tmp_path / "y.npy", model.predict(_x(), verbose=0))
    script = (
        "import sys, numpy as np, tf_keras as keras\n"
        "d = sys.argv[1]\n"
        "m = keras.models.load_model(d + '/ours.h5')\n"
        "got = m.predict(np.load(d + '/x.npy'), verbose=0)\n"
        "assert np.allclose(got, np.load(d + '/y.npy'), atol=1e-5), got\n"
        "assert type(m.optimizer).__name__ == 'Adam'\n"
        "print('OK')\n"
    )
    done = subprocess.run([str(peers.python()), "-c", script, str(tmp_path)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr[-3000:]


def _saved(tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((4,)), L.Dense(3, name="d")])
    path = tmp_path / "m.h5"
    model.save(path)
    return model, path


def test_weights_that_do_not_fit_are_reported_and_nothing_is_assigned(tmp_path):
    _, path = _saved(tmp_path)
    with h5py.File(path, "r+") as f:
        group = f["model_weights/d"]
        del group["d/kernel:0"]
        group.create_dataset("d/kernel:0", data=np.ones((5, 3), np.float32))
    with pytest.raises(WeightsFileError, match=r"shape \(5, 3\).*Nothing was assigned"):
        tf.keras.models.load_model(path)


def test_hostile_files_are_refused(tmp_path):
    _, path = _saved(tmp_path)
    with h5py.File(path, "r+") as f:  # a soft link reads elsewhere in the file
        f["model_weights/d"]["alias"] = h5py.SoftLink("/model_weights/d/d/bias:0")
    with pytest.raises(WeightsFileError, match="soft link"):
        tf.keras.models.load_model(path)
    _, path = _saved(tmp_path)
    with h5py.File(path, "r+") as f:  # a weight name that leaves its layer's group
        f["model_weights/d"].attrs["weight_names"] = [b"/model_weights/d/d/kernel:0",
                                                      b"d/bias:0"]  # fmt: skip
    with pytest.raises(WeightsFileError, match="not a member name"):
        tf.keras.models.load_model(path)
    _, path = _saved(tmp_path)
    with h5py.File(path, "r+") as f:  # a config naming code
        config = json.loads(f.attrs["model_config"])
        config["config"]["layers"][1]["class_name"] = "os.system"
        f.attrs["model_config"] = json.dumps(config)
    with pytest.raises(ValueError, match="Unknown layer"):
        tf.keras.models.load_model(path)
    _, path = _saved(tmp_path)
    with h5py.File(path, "r+") as f:  # JSON nested past the limit
        f.attrs["model_config"] = "[" * 5000 + "]" * 5000
    with pytest.raises(WeightsFileError, match="deeper"):
        tf.keras.models.load_model(path)
    _, path = _saved(tmp_path)
    with h5py.File(path, "r+") as f:
        del f.attrs["model_config"]
    with pytest.raises(WeightsFileError, match="no 'model_config'"):
        tf.keras.models.load_model(path)


def test_unbuilt_and_subclassed_models_say_why(tmp_path):
    with pytest.raises(ValueError, match="not built"):
        tf.keras.Sequential([L.Dense(2)]).save(tmp_path / "u.h5")

    class Sub(tf.keras.Model):
        def __init__(self, width):
            super().__init__()
            self.d = L.Dense(width)

        def call(self, x):
            return self.d(x)

    sub = Sub(2)
    sub(np.ones((1, 2), np.float32))
    with pytest.raises(NotImplementedError, match="save only its weights"):
        sub.save(tmp_path / "s.h5")
