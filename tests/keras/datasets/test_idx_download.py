"""The download path, against a local HTTP server on 127.0.0.1 serving the shared data files."""

import functools
import http.server
import threading

import numpy as np
import pytest

from layerflow._src.keras.datasets import fashion_mnist, idx

# The shared files' SHA-256, from ../shared/data/README.md (they differ from the official ones).
SHARED_SHA256 = {
    "train-images-idx3-ubyte.gz": (
        "aa757c9378dc9d86111980c9a15391726f47dc5439473098c7e504a67ee5b9e9"
    ),
    "train-labels-idx1-ubyte.gz": (
        "49044e0be47f175478d046ff1574c5fea10324690f021484d90c75cb28520b88"
    ),
    "t10k-images-idx3-ubyte.gz": (
        "ce949134a7a11efa10802f882220bb80a85b2e7588b19ab9395cc2d6440d7c8b"
    ),
    "t10k-labels-idx1-ubyte.gz": (
        "437ec043169150f02f53a767be0ce64b90d4309679557f6f828c321ed5332dd3"
    ),
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(datasets_dir):
    handler = functools.partial(_Quiet, directory=str(datasets_dir / "fashion-mnist"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def offline_env(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYERFLOW_DATASETS", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_download_verifies_and_installs_the_files(mirror, offline_env, datasets_dir, capsys):
    cache = offline_env / "cache"
    (x_train, y_train), (x_test, y_test) = idx.load(
        fashion_mnist.SOURCE, mirrors=[mirror], sha256=SHARED_SHA256, cache_dir=cache
    )
    folder = cache / "fashion-mnist"
    assert sorted(p.name for p in folder.iterdir()) == sorted(idx.FILES)  # no temp files left
    for name in idx.FILES:
        assert (folder / name).read_bytes() == (datasets_dir / "fashion-mnist" / name).read_bytes()
    assert x_train.shape == (60000, 28, 28) and y_test.shape == (10000,)
    assert "Downloading train-images-idx3-ubyte.gz" in capsys.readouterr().err  # progress bar
    # A second load finds the files in the cache and does not download again.
    (_, y_again), _ = idx.load(
        fashion_mnist.SOURCE, mirrors=["http://127.0.0.1:9"], cache_dir=cache
    )
    np.testing.assert_array_equal(y_again, y_train)


def test_a_checksum_mismatch_is_refused_and_leaves_no_file(mirror, offline_env):
    cache = offline_env / "cache"
    with pytest.raises(FileNotFoundError, match="checksum mismatch") as err:
        # The official checksums do not match the shared re-split: the download must be refused.
        idx.load(fashion_mnist.SOURCE, mirrors=[mirror], cache_dir=cache, progress=False)
    assert "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84" in str(err.value)
    assert not (cache / "fashion-mnist").exists()


def test_the_next_mirror_is_tried_when_one_fails(mirror, offline_env):
    cache = offline_env / "cache"
    bad = SHARED_SHA256 | {"t10k-labels-idx1-ubyte.gz": "0" * 64}
    with pytest.raises(FileNotFoundError) as err:
        idx.load(fashion_mnist.SOURCE, mirrors=["http://127.0.0.1:9", mirror], sha256=bad,
                 cache_dir=cache, progress=False)  # fmt: skip
    message = str(err.value)
    assert "127.0.0.1:9/t10k-labels" in message and "checksum mismatch" in message
    # The three good files were installed; the bad one left neither a file nor a temp file.
    assert sorted(p.name for p in (cache / "fashion-mnist").iterdir()) == sorted(idx.FILES[:3])
    mirrors = ["http://127.0.0.1:9", mirror]
    (_, _), (_, y_test) = idx.load(
        fashion_mnist.SOURCE, mirrors=mirrors, sha256=SHARED_SHA256, cache_dir=cache, progress=False
    )
    assert y_test.shape == (10000,)


def test_public_load_data_uses_the_mirror_variable(mirror, offline_env, monkeypatch):
    monkeypatch.setenv(idx.ENV_MIRROR, mirror)
    # Official checksums apply to downloads, so the re-split files are refused, named, and
    # nothing is written to the user's cache.
    with pytest.raises(FileNotFoundError, match=f"{mirror}/train-images-idx3-ubyte.gz: checksum"):
        fashion_mnist.load_data()
    assert not (offline_env / "home" / ".layerflow" / "datasets" / "fashion-mnist").exists()
