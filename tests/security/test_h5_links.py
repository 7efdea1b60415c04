"""Keras HDF5 weights (`.weights.h5`, and the weights inside `.keras`) read only the file they
were given: external storage, virtual datasets, external and soft links, and link cycles are
refused with an error naming the entry. The hostile files are built here with h5py."""

import os
import shutil
import zipfile

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.saving.weights_file import WeightsFileError

h5py = pytest.importorskip("h5py")

KERNEL = "layers/dense/vars/0"  # the Dense layer's kernel, shape (4, 3)
SECRET = np.arange(12, dtype=np.float32).reshape(4, 3) + 100.0  # "another file's bytes"


def model():
    m = tf.keras.Sequential([tf.keras.layers.Dense(3)])
    m(np.zeros((1, 4), np.float32))
    return m


def saved(tmp_path):
    path = str(tmp_path / "m.weights.h5")
    model().save_weights(path)
    return path


def secret_file(tmp_path):
    path = tmp_path / "secret.bin"
    path.write_bytes(SECRET.tobytes())
    return str(path)


def with_external_storage(tmp_path, path):
    with h5py.File(path, "r+") as f:
        del f[KERNEL]
        f.create_dataset(KERNEL, shape=(4, 3), dtype="<f4",
                         external=[(secret_file(tmp_path), 0, SECRET.nbytes)])  # fmt: skip


def with_external_link(tmp_path, path):
    other = str(tmp_path / "other.h5")
    with h5py.File(other, "w") as g:
        g["data"] = SECRET
    with h5py.File(path, "r+") as f:
        del f[KERNEL]
        f[KERNEL] = h5py.ExternalLink(other, "/data")


def with_virtual_dataset(tmp_path, path):
    other = str(tmp_path / "other.h5")
    with h5py.File(other, "w") as g:
        g["data"] = SECRET
    layout = h5py.VirtualLayout(shape=(4, 3), dtype="<f4")
    layout[:] = h5py.VirtualSource(other, "data", shape=(4, 3))
    with h5py.File(path, "r+") as f:
        del f[KERNEL]
        f.create_virtual_dataset(KERNEL, layout)


def with_soft_link(tmp_path, path):
    with h5py.File(path, "r+") as f:
        f.move(KERNEL, "/elsewhere")
        f[KERNEL] = h5py.SoftLink("/elsewhere")


def with_cycle(tmp_path, path):
    with h5py.File(path, "r+") as f:
        f["layers/dense/loop"] = f["layers"]  # a hard link back to an ancestor


def with_shared_group(tmp_path, path):
    with h5py.File(path, "r+") as f:
        f["zz_alias"] = f["layers/dense"]  # the same group under a second name


HOSTILE = {
    "external storage": (with_external_storage, KERNEL, "keeps its data in other files"),
    "external link": (with_external_link, KERNEL, "is an external link"),
    "virtual dataset": (with_virtual_dataset, KERNEL, "keeps its data in other files"),
    "soft link": (with_soft_link, KERNEL, "is a soft link"),
    "link cycle": (with_cycle, "layers/dense/loop", "is a second link to the group 'layers'"),
    "shared group": (with_shared_group, "zz_alias", "is a second link to the group 'layers/dense'"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_weights_h5_is_refused_naming_the_entry(tmp_path, kind):
    make, entry, what = HOSTILE[kind]
    path = saved(tmp_path)
    make(tmp_path, path)
    target = model()
    before = target.get_weights()
    with pytest.raises(WeightsFileError, match=f"'{entry}' {what}"):
        target.load_weights(path)
    for a, b in zip(before, target.get_weights()):  # nothing assigned
        np.testing.assert_array_equal(a, b)


def test_unbuilt_model_refuses_too(tmp_path):
    path = saved(tmp_path)
    with_external_storage(tmp_path, path)
    with pytest.raises(WeightsFileError, match=f"'{KERNEL}' keeps its data in other files"):
        tf.keras.Sequential([tf.keras.layers.Dense(3)]).load_weights(path)


def test_a_plain_file_still_loads(tmp_path):
    path = saved(tmp_path)
    with h5py.File(path, "r+") as f:
        f[KERNEL][...] = SECRET
    target = model()
    target.load_weights(path)
    np.testing.assert_array_equal(target.get_weights()[0], SECRET)


def test_weights_inside_a_keras_file_are_refused(tmp_path):
    source = model()
    good = str(tmp_path / "m.keras")
    source.save(good)
    work = tmp_path / "unzipped"
    with zipfile.ZipFile(good) as zf:
        zf.extractall(work)
        names = zf.namelist()
    with_external_storage(tmp_path, str(work / "model.weights.h5"))
    bad = str(tmp_path / "bad.keras")
    with zipfile.ZipFile(bad, "w") as zf:
        for name in names:
            zf.write(work / name, name)
    shutil.rmtree(work)
    with pytest.raises(WeightsFileError, match=f"'{KERNEL}' keeps its data in other files"):
        tf.keras.models.load_model(bad)
    assert os.path.exists(tmp_path / "secret.bin")
