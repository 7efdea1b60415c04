"""`tf.keras.utils.get_file` against a 127.0.0.1 server: cache, hashes, safe extraction."""

import hashlib
import io
import os
import pathlib
import tarfile
import zipfile

import pytest

import layerflow as tf
from layerflow._src.keras.utils import data_utils


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_downloads_into_keras_home_and_then_uses_the_cache(http_folder, keras_home, capsys):
    folder, url, hits = http_folder
    (folder / "data.csv").write_bytes(b"a,b\n1,2\n")
    path = tf.keras.utils.get_file(origin=f"{url}/data.csv", file_hash=_sha256(b"a,b\n1,2\n"))
    assert path == os.path.join(str(keras_home), "datasets", "data.csv")
    assert pathlib.Path(path).read_bytes() == b"a,b\n1,2\n"
    assert sorted(os.listdir(keras_home / "datasets")) == ["data.csv"]  # no temp file left
    assert f"Downloading data from {url}/data.csv" in capsys.readouterr().out
    again = tf.keras.utils.get_file("data.csv", origin=f"{url}/data.csv")
    assert again == path and hits == ["/data.csv"]  # the second call did not download


def test_home_defaults_to_dot_keras_and_cache_subdir_and_dir_are_honoured(
    http_folder, tmp_path, monkeypatch
):
    folder, url, _ = http_folder
    (folder / "x.bin").write_bytes(b"xyz")
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tf.keras.utils.get_file("x.bin", f"{url}/x.bin", cache_subdir="sub")
    assert path == str(tmp_path / "home" / ".keras" / "sub" / "x.bin")
    other = tf.keras.utils.get_file("y.bin", f"{url}/x.bin", cache_dir=tmp_path / "c")
    assert other == str(tmp_path / "c" / "datasets" / "y.bin")


def test_unwritable_cache_falls_back_to_tmp_keras(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    assert data_utils._writable_base(str(tmp_path)) == os.path.join("/tmp", ".keras")


def test_a_wrong_hash_raises_and_leaves_nothing(http_folder, keras_home):
    folder, url, _ = http_folder
    (folder / "f.txt").write_bytes(b"payload")
    with pytest.raises(ValueError, match="file hash"):
        tf.keras.utils.get_file("f.txt", f"{url}/f.txt", file_hash="0" * 64)
    assert os.listdir(keras_home / "datasets") == []


def test_md5_and_auto_hashes_and_a_stale_cached_file_is_replaced(http_folder, keras_home):
    folder, url, hits = http_folder
    (folder / "f.txt").write_bytes(b"new")
    (keras_home / "datasets").mkdir(parents=True)
    (keras_home / "datasets" / "f.txt").write_bytes(b"old")
    md5 = hashlib.md5(b"new").hexdigest()
    path = tf.keras.utils.get_file("f.txt", f"{url}/f.txt", file_hash=md5)  # auto: 32 -> md5
    assert pathlib.Path(path).read_bytes() == b"new" and len(hits) == 1
    tf.keras.utils.get_file("f.txt", f"{url}/f.txt", md5_hash=md5)
    assert len(hits) == 1  # valid now: not downloaded again
    with pytest.raises(ValueError, match="hash_algorithm"):
        tf.keras.utils.get_file("f.txt", f"{url}/f.txt", file_hash=md5, hash_algorithm="sha1")


def test_http_errors_name_the_url(http_folder, keras_home):
    _, url, _ = http_folder
    with pytest.raises(OSError, match="URL fetch failure on .*missing.bin: 404"):
        tf.keras.utils.get_file("m.bin", f"{url}/missing.bin")
    assert not (keras_home / "datasets" / "m.bin").exists()
    with pytest.raises(ValueError, match="origin"):
        tf.keras.utils.get_file("m.bin")
    with pytest.raises(ValueError, match="file name"):
        tf.keras.utils.get_file(origin=f"{url}/")


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)


def _file(name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_untar_and_extract(http_folder, keras_home):
    folder, url, _ = http_folder
    _tar(folder / "pack.tar.gz", [_file("pack/a.txt", b"A"), _file("pack/sub/b.txt", b"B")])
    path = tf.keras.utils.get_file("pack", f"{url}/pack.tar.gz", untar=True)
    assert path == str(keras_home / "datasets" / "pack")
    assert pathlib.Path(os.path.join(path, "sub", "b.txt")).read_bytes() == b"B"
    with zipfile.ZipFile(folder / "z.zip", "w") as z:
        z.writestr("zdir/c.txt", "C")
    zpath = tf.keras.utils.get_file("z.zip", f"{url}/z.zip", extract=True)
    assert pathlib.Path(os.path.join(os.path.dirname(zpath), "zdir", "c.txt")).read_text() == "C"
    assert not any(n.startswith(".extract-") for n in os.listdir(keras_home / "datasets"))


def _symlink(name, target):
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, None


@pytest.mark.parametrize(
    "member",
    [
        _file("../escape.txt", b"x"),
        _file("/abs/escape.txt", b"x"),
        _file("ok/../../escape.txt", b"x"),
        _symlink("ok/link", "/etc/passwd"),
        _symlink("ok/inner", "a.txt"),
    ],
    ids=["dotdot", "absolute", "nested-dotdot", "symlink-out", "symlink-in"],
)
def test_unsafe_tar_members_are_refused_and_nothing_is_extracted(
    http_folder, keras_home, tmp_path, member
):
    folder, url, _ = http_folder
    _tar(folder / "bad.tar.gz", [_file("ok/a.txt", b"A"), member])
    with pytest.raises(ValueError, match="Refusing to extract"):
        tf.keras.utils.get_file("bad.tar.gz", f"{url}/bad.tar.gz", extract=True)
    datadir = keras_home / "datasets"
    assert sorted(os.listdir(datadir)) == ["bad.tar.gz"]  # neither ok/ nor the escapee
    assert not (keras_home / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()


def test_unsafe_zip_members_are_refused(tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("fine.txt", "ok")
        z.writestr("../evil.txt", "x")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="outside"):
        data_utils.extract_archive(str(bad), str(out))
    assert os.listdir(out) == [] and not (tmp_path / "evil.txt").exists()
    assert data_utils.extract_archive(str(bad), str(out), archive_format=None) is False
    plain = tmp_path / "plain.txt"
    plain.write_text("not an archive")
    assert data_utils.extract_archive(str(plain), str(out)) is False
