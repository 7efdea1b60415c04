"""cifar10/cifar100/imdb/reuters/boston_housing: small files of the real formats, from a temp
`$KERAS_HOME` or served from 127.0.0.1; expected values were produced by tf_keras 2.21 on the
same files."""

import hashlib
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.datasets import (
    boston_housing,
    cifar10,
    cifar100,
    imdb,
    keras_cache,
    reuters,
    safe_load,
)


def _obj(seqs):
    a = np.empty(len(seqs), dtype=object)
    a[:] = seqs
    return a


def _imdb_reuters(folder):
    np.savez(
        folder / "imdb.npz",
        x_train=_obj([[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [11]]),
        y_train=np.array([0, 1, 1, 0]),
        x_test=_obj([[2, 2], [12, 1, 3]]),
        y_test=np.array([1, 0]),
    )
    np.savez(
        folder / "reuters.npz",
        x=_obj([[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [11], [3, 3], [9, 1]]),
        y=np.array([0, 1, 2, 3, 4, 5]),
    )


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def text_home(keras_home, monkeypatch):
    folder = keras_home / "datasets"
    folder.mkdir(parents=True)
    _imdb_reuters(folder)
    # A cached file is verified against Keras's hash (and re-downloaded on a mismatch), so the
    # small stand-ins are registered under their own hashes.
    monkeypatch.setattr(imdb, "SHA256", _sha256(folder / "imdb.npz"))
    monkeypatch.setattr(reuters, "SHA256", _sha256(folder / "reuters.npz"))
    return keras_home


def _lists(a):
    return [list(map(int, s)) for s in a]


CASES = [
    (
        {},
        ([[1, 14], [1, 9, 10, 11, 12, 13], [1, 4, 5, 6], [1, 7, 8]], [0, 1, 0, 1],
         [[1, 2, 4, 6], [1, 5, 5]], [0, 1]),
        ([[1, 7, 8], [1, 4, 5, 6], [1, 2], [1, 9, 10, 11, 12, 13]], [1, 0, 3, 2],
         [[1, 6, 6], [1, 12, 4]], [4, 5]),
    ),
    (
        {"num_words": 6, "skip_top": 1, "maxlen": 5},
        ([[1, 2], [1, 4, 5, 2], [1, 2, 2]], [0, 0, 1], [[1, 2, 4, 2], [1, 5, 5]], [0, 1]),
        ([[1, 2, 2], [1, 4, 5, 2], [1, 2]], [1, 0, 3], [[1, 2, 2], [1, 2, 4]], [4, 5]),
    ),
    (
        {"start_char": None, "oov_char": None, "index_from": 1, "num_words": 8},
        ([[], [7], [2, 3, 4], [5, 6]], [0, 1, 0, 1], [[2, 4], [3, 3]], [0, 1]),
        ([[5, 6], [2, 3, 4], [], [7]], [1, 0, 3, 2], [[4, 4], [2]], [4, 5]),
    ),
]  # fmt: skip


@pytest.mark.parametrize("kwargs,want_imdb,want_reuters", CASES)
def test_imdb_and_reuters_match_keras(text_home, kwargs, want_imdb, want_reuters):
    (a, b), (c, d) = tf.keras.datasets.imdb.load_data(**kwargs)
    assert (_lists(a), list(b), _lists(c), list(d)) == tuple(map(list, want_imdb))
    assert a.dtype == object and a.ndim == 1
    (a, b), (c, d) = tf.keras.datasets.reuters.load_data(test_split=0.3, **kwargs)
    assert (_lists(a), list(b), _lists(c), list(d)) == tuple(map(list, want_reuters))


def test_imdb_maxlen_too_small_and_unknown_kwargs(text_home):
    with pytest.raises(ValueError, match="Increase maxlen"):
        tf.keras.datasets.imdb.load_data(maxlen=1)
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        tf.keras.datasets.imdb.load_data(bogus=1)
    (a, _), _ = tf.keras.datasets.imdb.load_data(nb_words=6)  # the legacy name still works
    assert max(max(s) for s in a) < 6


def test_boston_housing_matches_keras(keras_home, monkeypatch):
    (keras_home / "datasets").mkdir(parents=True)
    rng = np.random.RandomState(0)
    path = keras_home / "datasets" / "boston_housing.npz"
    np.savez(path, x=rng.rand(10, 13), y=rng.rand(10) * 50)
    monkeypatch.setattr(boston_housing, "SHA256", _sha256(path))
    (a, b), (c, d) = tf.keras.datasets.boston_housing.load_data(test_split=0.3, seed=5)
    assert a.shape == (7, 13) and c.shape == (3, 13) and b.shape == (7,)
    np.testing.assert_allclose([a.sum(), d.sum()], [46.4304582394896, 76.23554224036492])
    with pytest.raises(ValueError, match="test_split"):
        tf.keras.datasets.boston_housing.load_data(test_split=1.0)


def test_reuters_label_names_and_word_indices(keras_home, monkeypatch):
    monkeypatch.setattr(imdb, "WORD_INDEX_MD5", None)
    monkeypatch.setattr(reuters, "WORD_INDEX_MD5", None)
    names = tf.keras.datasets.reuters.get_label_names()
    assert len(names) == 46 and names[:3] == ("cocoa", "grain", "veg-oil")
    (keras_home / "datasets").mkdir(parents=True)
    (keras_home / "datasets" / "mine.json").write_text('{"the": 1, "cat": 2}')
    assert tf.keras.datasets.imdb.get_word_index("mine.json") == {"the": 1, "cat": 2}
    (keras_home / "datasets" / "bad.json").write_text('["not", "a", "dict"]')
    with pytest.raises(ValueError, match="word index"):
        tf.keras.datasets.reuters.get_word_index("bad.json")


def _cifar_pickle(path, n, label_key, seed, extra=None):
    rng = np.random.RandomState(seed)
    d = {b"batch_label": b"x", b"data": rng.randint(0, 256, (n, 3072)).astype(np.uint8)}
    d[label_key.encode()] = [int(v) for v in rng.randint(0, 10, n)]
    d.update(extra or {})
    with open(path, "wb") as f:
        pickle.dump(d, f, protocol=2)
    return d


def _cifar10_tree(root):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    batches = [_cifar_pickle(folder / f"data_batch_{i}", 3, "labels", i) for i in range(1, 6)]
    test = _cifar_pickle(folder / "test_batch", 2, "labels", 9)
    return folder, batches, test


def test_cifar10_reads_the_keras_cache(keras_home):
    _, batches, test = _cifar10_tree(keras_home / "datasets")
    (x, y), (xt, yt) = tf.keras.datasets.cifar10.load_data()
    assert x.shape == (15, 32, 32, 3) and x.dtype == np.uint8 and y.shape == (15, 1)
    want = np.concatenate([b[b"data"] for b in batches]).reshape(15, 3, 32, 32)
    np.testing.assert_array_equal(x, want.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(y[:, 0], sum((b[b"labels"] for b in batches), []))
    assert xt.shape == (2, 32, 32, 3) and yt.dtype == np.uint8
    np.testing.assert_array_equal(yt[:, 0], test[b"labels"])


def test_cifar100_downloads_from_a_local_server_and_checks_label_mode(
    http_folder, keras_home, tmp_path, monkeypatch
):
    served, url, hits = http_folder
    src = tmp_path / "build" / "cifar-100-python"
    src.mkdir(parents=True)
    train = _cifar_pickle(src / "train", 4, "fine_labels", 1, {b"coarse_labels": [0, 1, 2, 3]})
    _cifar_pickle(src / "test", 2, "fine_labels", 2, {b"coarse_labels": [5, 6]})
    with tarfile.open(served / "c100.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="cifar-100-python")
    digest = hashlib.sha256((served / "c100.tar.gz").read_bytes()).hexdigest()
    monkeypatch.setattr(cifar100, "ORIGIN", f"{url}/c100.tar.gz")
    monkeypatch.setattr(cifar100, "SHA256", digest)
    (x, y), (_, yt) = tf.keras.datasets.cifar100.load_data()
    assert hits == ["/c100.tar.gz"] and x.shape == (4, 32, 32, 3)
    np.testing.assert_array_equal(y[:, 0], train[b"fine_labels"])
    (_, y), (_, yt) = tf.keras.datasets.cifar100.load_data(label_mode="coarse")
    assert list(y[:, 0]) == [0, 1, 2, 3] and list(yt[:, 0]) == [5, 6] and len(hits) == 1
    assert os.path.isfile(keras_home / "datasets" / "cifar-100-python.tar.gz")
    with pytest.raises(ValueError, match="label_mode"):
        tf.keras.datasets.cifar100.load_data(label_mode="medium")


def test_cifar10_download_with_a_wrong_hash_is_refused(http_folder, keras_home, monkeypatch):
    served, url, _ = http_folder
    _cifar10_tree(served / "src")
    with tarfile.open(served / "c10.tar.gz", "w:gz") as tar:
        tar.add(served / "src" / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    monkeypatch.setattr(cifar10, "ORIGIN", f"{url}/c10.tar.gz")
    with pytest.raises(ValueError, match="file hash"):
        tf.keras.datasets.cifar10.load_data()  # the real SHA-256 does not match the sample
    assert not (keras_home / "datasets" / "cifar-10-batches-py").exists()


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/should-not-exist",))


def test_a_cifar_pickle_naming_code_is_refused(keras_home, tmp_path):
    folder, _, _ = _cifar10_tree(keras_home / "datasets")
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": _Boom(), b"labels": [1]}, f, protocol=2)
    with pytest.raises(ValueError, match="refusing to load the global"):
        tf.keras.datasets.cifar10.load_data()


@pytest.mark.parametrize(
    "payload, match",
    [
        ({b"data": np.zeros((2, 10), np.uint8), b"labels": [1, 2]}, "3072"),
        ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [1]}, "2 integers"),
        ({b"data": np.zeros((2, 3072), np.float32), b"labels": [1, 2]}, "uint8"),
        ({b"labels": [1]}, "CIFAR batch"),
        ([1, 2], "CIFAR batch"),
    ],
)
def test_malformed_cifar_batches_are_refused(keras_home, payload, match):
    folder, _, _ = _cifar10_tree(keras_home / "datasets")
    with open(folder / "data_batch_3", "wb") as f:
        pickle.dump(payload, f, protocol=2)
    with pytest.raises(ValueError, match=match):
        tf.keras.datasets.cifar10.load_data()


def test_restricted_unpickler_refuses_object_arrays_of_objects_and_other_types():
    with pytest.raises(pickle.UnpicklingError):
        safe_load.restricted_loads(pickle.dumps(np.ma.masked_array([1, 2])))
    with pytest.raises(pickle.UnpicklingError):
        safe_load.restricted_loads(pickle.dumps(_Boom()))
    ok = safe_load.restricted_loads(pickle.dumps({"a": np.arange(3), "b": np.float32(2.5)}))
    np.testing.assert_array_equal(ok["a"], [0, 1, 2]) and float(ok["b"]) == 2.5


def test_npz_object_arrays_naming_code_are_refused(keras_home, monkeypatch):
    (keras_home / "datasets").mkdir(parents=True)
    path = keras_home / "datasets" / "imdb.npz"
    np.savez(path, x_train=_obj([_Boom()]), y_train=[0], x_test=_obj([[1]]), y_test=[0])
    monkeypatch.setattr(imdb, "SHA256", _sha256(path))
    with pytest.raises(ValueError, match="refusing to load the global"):
        tf.keras.datasets.imdb.load_data()


def test_npz_header_claiming_more_data_than_it_holds_is_refused(tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.zeros(4, np.float64))
    raw = buf.getvalue().replace(b"(4,)", b"(10000000000,)".ljust(4)[:14], 1)
    import zipfile

    path = tmp_path / "big.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", raw)
    with pytest.raises(ValueError, match="header says shape"):
        safe_load.load_npz(path)


def test_the_keras_cache_homes(monkeypatch, tmp_path):
    monkeypatch.setattr(imdb, "SHA256", None)
    monkeypatch.setattr(reuters, "SHA256", None)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    assert keras_cache.homes() == [str(tmp_path / "kh"), str(tmp_path / ".keras")]
    monkeypatch.delenv("KERAS_HOME")
    assert keras_cache.homes() == [str(tmp_path / ".keras")]
    (tmp_path / ".keras" / "datasets").mkdir(parents=True)
    _imdb_reuters(tmp_path / ".keras" / "datasets")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))  # empty: ~/.keras is read next
    (x, _), _ = imdb.load_data()
    assert len(x) == 4 and reuters.load_data()[0][0].shape == (4,)
    assert boston_housing.SHA256.startswith("f553886a")
