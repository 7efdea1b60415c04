"""Keras 3 `.weights.h5`: fixtures made by real Keras load and reproduce Keras's outputs, our
files load in real Keras, and every mismatch or damage is reported with nothing assigned."""

import os
import pathlib
import subprocess
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import layerflow as tf
from layerflow._src.keras.saving import h5_weights
from layerflow._src.saving.weights_file import WeightsFileError

from . import peers

h5py = pytest.importorskip("h5py")

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
X = np.load(FIXTURES / "x.npy")


def mlp():
    return tf.keras.Sequential(
        [tf.keras.layers.Dense(6, activation="relu"), tf.keras.layers.Dense(3)]
    )


class Block(tf.keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = tf.keras.layers.Dense(5, activation="tanh")
        self.stack = [tf.keras.layers.Dense(5, activation="relu"), tf.keras.layers.Dense(4)]

    def call(self, x):
        x = self.hidden(x)
        for layer in self.stack:
            x = layer(x)
        return x


class Net(tf.keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.block = Block()
        self.head = tf.keras.layers.Dense(2)

    def call(self, x):
        return self.head(self.block(x))


def _weights(model):
    return [w.copy() for w in model.get_weights()]


# --- Keras fixtures -> layerflow ------------------------------------------------------------------
@pytest.mark.parametrize("built", [False, True])
def test_keras_sequential_fixture_reproduces_keras_outputs(built):
    model = mlp()
    if built:
        model.build((None, 4))
    status = model.load_weights(FIXTURES / "keras_mlp.weights.h5")
    y = model(X).numpy()
    np.testing.assert_allclose(y, np.load(FIXTURES / "keras_mlp_y.npy"), rtol=1e-5, atol=1e-6)
    status.assert_consumed()
    assert sorted(status.loaded) == [
        "layers/dense/vars/0", "layers/dense/vars/1",
        "layers/dense_1/vars/0", "layers/dense_1/vars/1",
    ]  # fmt: skip


@pytest.mark.parametrize("built", [False, True])
def test_keras_subclassed_fixture_with_nested_list_reproduces_keras_outputs(built):
    net = Net()
    if built:
        net(X)
    status = net.load_weights(FIXTURES / "keras_sub.weights.h5")
    assert len(status.pending) == (0 if built else 8)
    np.testing.assert_allclose(
        net(X).numpy(), np.load(FIXTURES / "keras_sub_y.npy"), rtol=1e-5, atol=1e-6
    )
    status.assert_consumed()


def test_layout_follows_keras_naming():
    net = Net()
    net(X)
    paths = [(e.path, len(e.variables)) for e in h5_weights.layout(net)]
    assert paths == [("", 0), ("block", 0), ("block/hidden", 2), ("block/stack/dense", 2),
                     ("block/stack/dense_1", 2), ("head", 2)]  # fmt: skip
    with h5py.File(FIXTURES / "keras_sub.weights.h5") as f:
        for path, n in paths:
            group = f[f"{path}/vars" if path else "vars"]
            assert len(group) == n


def test_optimizer_state_in_a_keras_file_is_reported_not_loaded(tmp_path):
    import zipfile

    with zipfile.ZipFile(FIXTURES / "keras_mlp.keras") as z:
        (tmp_path / "model.weights.h5").write_bytes(z.read("model.weights.h5"))
    model = mlp()
    model.build((None, 4))
    status = model.load_weights(tmp_path / "model.weights.h5")
    assert len(status.loaded) == 4
    assert status.unexpected and all(p.startswith("optimizer/") for p in status.unexpected)
    with pytest.raises(AssertionError, match="optimizer/vars/0"):
        status.assert_consumed()


# --- layerflow round trip ----------------------------------------------------------------------
def test_round_trip_into_an_unbuilt_clone(tmp_path):
    net = Net()
    y = net(X).numpy()
    path = tmp_path / "net.weights.h5"
    net.save_weights(path)
    clone = Net()
    clone.load_weights(path)
    np.testing.assert_array_equal(clone(X).numpy(), y)
    with h5py.File(path) as f:
        assert f["vars"].attrs["name"] == net.name
        assert f["head/vars"].attrs["name"] == net.head.name
        np.testing.assert_array_equal(f["head/vars/0"][()], net.head.kernel.numpy())


def test_shared_layer_is_stored_once_and_restored(tmp_path):
    shared = tf.keras.layers.Dense(4, activation="relu")
    model = tf.keras.Sequential([tf.keras.layers.Dense(4), shared, shared])
    y = model(X).numpy()
    model.save_weights(tmp_path / "t.h5")
    with h5py.File(tmp_path / "t.h5") as f:
        assert sorted(f["layers"]) == ["dense", "dense_1"]
    shared2 = tf.keras.layers.Dense(4, activation="relu")
    clone = tf.keras.Sequential([tf.keras.layers.Dense(4), shared2, shared2])
    clone.load_weights(tmp_path / "t.h5")
    np.testing.assert_array_equal(clone(X).numpy(), y)


def test_every_mismatch_is_listed_and_nothing_is_assigned(tmp_path):
    mlp_a = mlp()
    mlp_a.build((None, 4))
    mlp_a.save_weights(tmp_path / "a.weights.h5")
    other = tf.keras.Sequential(
        [tf.keras.layers.Dense(7), tf.keras.layers.Dense(3), tf.keras.layers.Dense(2)]
    )
    other.build((None, 4))
    before = _weights(other)
    with pytest.raises(ValueError) as err:
        other.load_weights(tmp_path / "a.weights.h5")
    msg = str(err.value)
    assert "4 problem(s), nothing was assigned" in msg
    assert "'layers/dense/vars/1'" in msg and "(7,)" in msg
    assert "'layers/dense/vars/0'" in msg and "(4, 7)" in msg and "(4, 6)" in msg
    assert "'layers/dense_1/vars/0'" in msg and "(7, 3)" in msg and "(6, 3)" in msg
    assert "'layers/dense_2/vars'" in msg and "no such group" in msg
    for a, b in zip(before, other.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_skip_mismatch_loads_what_matches_and_reports_the_rest(tmp_path):
    src = tf.keras.Sequential([tf.keras.layers.Dense(6), tf.keras.layers.Dense(3)])
    src.build((None, 4))
    src.save_weights(tmp_path / "s.weights.h5")
    dst = tf.keras.Sequential([tf.keras.layers.Dense(6), tf.keras.layers.Dense(2)])
    dst.build((None, 4))
    status = dst.load_weights(tmp_path / "s.weights.h5", skip_mismatch=True)
    np.testing.assert_array_equal(dst.layers[0].kernel.numpy(), src.layers[0].kernel.numpy())
    assert sorted(status.loaded) == ["layers/dense/vars/0", "layers/dense/vars/1"]
    skipped = sorted(p for p, _ in status.skipped)
    assert skipped == ["layers/dense_1/vars/0", "layers/dense_1/vars/1"]


def test_by_name_matches_layer_names(tmp_path):
    a = tf.keras.layers.Dense(3, name="lf_h5_alpha")
    b = tf.keras.layers.Dense(3, name="lf_h5_beta")
    src = tf.keras.Sequential([a, b])
    src.build((None, 3))
    src.save_weights(tmp_path / "n.weights.h5")
    # Reversed order: structural paths would swap them; names put them back.
    dst = tf.keras.Sequential([tf.keras.layers.Dense(3, name="lf_h5_beta_2")])
    dst.layers[0]._name = "lf_h5_beta"
    dst.build((None, 3))
    status = dst.load_weights(tmp_path / "n.weights.h5", by_name=True)
    np.testing.assert_array_equal(dst.layers[0].kernel.numpy(), b.kernel.numpy())
    assert "layers/dense/vars/0" in status.unexpected


def test_unbuilt_clone_with_wrong_architecture_fails_when_built(tmp_path):
    src = mlp()
    src.build((None, 4))
    src.save_weights(tmp_path / "m.weights.h5")
    wrong = tf.keras.Sequential([tf.keras.layers.Dense(6), tf.keras.layers.Dense(4)])
    wrong.load_weights(tmp_path / "m.weights.h5")
    with pytest.raises(ValueError, match="shape"):
        wrong(X)


# --- damage -------------------------------------------------------------------------------------
def test_non_hdf5_and_legacy_files_raise_the_documented_error(tmp_path):
    model = mlp()
    model.build((None, 4))
    (tmp_path / "junk.h5").write_bytes(b"not an hdf5 file at all" * 10)
    with pytest.raises(WeightsFileError, match="junk.h5"):
        model.load_weights(tmp_path / "junk.h5")
    with h5py.File(tmp_path / "legacy.h5", "w") as f:
        f.attrs["layer_names"] = [b"dense"]
    with pytest.raises(WeightsFileError, match="Keras 2"):
        model.load_weights(tmp_path / "legacy.h5")
    with pytest.raises(FileNotFoundError, match="nothing.h5"):
        model.load_weights(tmp_path / "nothing.h5")


def test_a_header_claiming_a_huge_shape_is_refused(tmp_path):
    with h5py.File(tmp_path / "big.h5", "w") as f:
        f.create_group("layers/dense/vars").create_dataset("0", shape=(10**6, 10**4), dtype="f4")
    model = mlp()
    model.build((None, 4))
    with pytest.raises(WeightsFileError, match="claims shape"):
        model.load_weights(tmp_path / "big.h5")


_GOOD = None


def _good_bytes(tmp_path_factory):
    global _GOOD
    if _GOOD is None:
        path = tmp_path_factory.mktemp("h5") / "good.weights.h5"
        model = mlp()
        model.build((None, 4))
        model.save_weights(path)
        _GOOD = path.read_bytes()
    return _GOOD


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_damaged_files_raise_one_error_class_and_assign_nothing(tmp_path_factory, data):
    good = _good_bytes(tmp_path_factory)
    if data.draw(st.booleans(), label="truncate"):
        cut = data.draw(st.integers(0, len(good) - 1), label="cut")
        bad = good[:cut]
    else:
        bad = bytearray(good)
        for _ in range(data.draw(st.integers(1, 8), label="flips")):
            i = data.draw(st.integers(0, len(bad) - 1))
            bad[i] ^= data.draw(st.integers(1, 255))
        bad = bytes(bad)
    path = tmp_path_factory.mktemp("bad") / "bad.weights.h5"
    path.write_bytes(bad)
    model = mlp()
    model.build((None, 4))
    before = _weights(model)
    try:
        model.load_weights(path)
    except (WeightsFileError, ValueError) as e:
        # Either the file is damaged, or its (still readable) structure no longer matches.
        assert "bad.weights.h5" in str(e)
        for a, b in zip(before, model.get_weights()):
            np.testing.assert_array_equal(a, b)
    # A flip inside tensor data loads: HDF5 keeps no checksums (documented).


# --- atomic writes, missing h5py --------------------------------------------------------------
def test_overwrite_false_and_failed_saves_keep_the_old_file(tmp_path, monkeypatch):
    model = mlp()
    model.build((None, 4))
    path = tmp_path / "m.weights.h5"
    model.save_weights(path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        model.save_weights(path, overwrite=False)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(h5py.Group, "create_dataset", boom)
    with pytest.raises(OSError, match="disk full"):
        model.save_weights(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.weights.h5"]


def test_missing_h5py_says_how_to_install(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "h5py", None)
    model = mlp()
    model.build((None, 4))
    with pytest.raises(ImportError, match=r"layerflow\[h5\]"):
        model.save_weights(tmp_path / "m.weights.h5")


# --- layerflow -> real Keras --------------------------------------------------------------------
# Runs under the peers' Python with real Keras; the models are make_fixtures.py's own.
KERAS_READER = textwrap.dedent(
    """
    import sys
    path, x_path, out, here = sys.argv[1:5]
    sys.path.insert(0, here)
    import numpy as np
    from make_fixtures import Net, keras_mlp
    x = np.load(x_path)
    if "mlp" in path:
        model = keras_mlp()
    else:
        model = Net()
        model(x)
    model.load_weights(path)
    np.save(out, np.asarray(model(x)))
    """
)


@peers.needs_peers
@pytest.mark.parametrize("kind", ["mlp", "sub"])
def test_layerflow_weights_load_in_real_keras(tmp_path, kind):
    model = mlp() if kind == "mlp" else Net()
    y = model(X).numpy()
    path = tmp_path / f"{kind}.weights.h5"
    model.save_weights(path)
    script = tmp_path / "reader.py"
    script.write_text(KERAS_READER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    done = subprocess.run(
        [str(peers.python()), str(script), str(path), str(FIXTURES / "x.npy"),
         str(tmp_path / "y.npy"), str(FIXTURES.parent)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), y, rtol=1e-5, atol=1e-6)
