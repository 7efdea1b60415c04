"""`tf.io.gfile`: TF 2.21's behaviour and errors on local files; atomic writes for mode "w"."""

from __future__ import annotations

import os

import pytest

import layerflow as tf

gfile = tf.io.gfile


def test_write_then_read_in_every_way(tmp_path):
    p = str(tmp_path / "a.txt")
    with gfile.GFile(p, "w") as f:
        f.write("hello\nworld\n")
        assert f.tell() == 12
    assert gfile.GFile(p).read() == "hello\nworld\n"
    assert gfile.GFile(p, "rb").read() == b"hello\nworld\n"
    assert gfile.GFile(p).readlines() == ["hello\n", "world\n"]
    assert list(gfile.GFile(p, "rb")) == [b"hello\n", b"world\n"]
    f = gfile.GFile(p)
    assert (f.read(3), f.tell(), f.readline(), f.tell()) == ("hel", 3, "lo\n", 6)
    f.seek(0)
    assert (f.tell(), f.size(), f.name, f.mode) == (0, 12, p, "r")
    f.seek(offset=2, whence=0)
    assert f.read() == "llo\nworld\n" and f.read() == ""
    f.close()
    assert f.read(5) == "hello"  # as TF: a closed reader reopens from the start
    f.close()


def test_modes_accept_str_or_bytes_and_append(tmp_path):
    p = str(tmp_path / "b.bin")
    with gfile.GFile(p, "wb") as f:
        f.write("é")
        f.write(b"\x00")
    with gfile.GFile(p, "a") as f:
        f.write(b"z")
    with gfile.GFile(p, "ab") as f:
        f.write("y")
    assert gfile.GFile(p, "rb").read() == "é".encode() + b"\x00zy"


def test_mode_w_is_atomic_and_discarded_on_error(tmp_path):
    p = str(tmp_path / "c.txt")
    with gfile.GFile(p, "w") as f:
        f.write("old")
    f = gfile.GFile(p, "w")
    f.write("new")
    f.flush()
    # Until close, readers see the old file; the data is in a temporary file beside it.
    assert gfile.GFile(p).read() == "old"
    assert len(os.listdir(tmp_path)) == 2
    f.close()
    assert gfile.GFile(p).read() == "new" and os.listdir(tmp_path) == ["c.txt"]
    with pytest.raises(RuntimeError), gfile.GFile(p, "w") as f:
        f.write("half")
        raise RuntimeError("crash")
    assert gfile.GFile(p).read() == "new" and os.listdir(tmp_path) == ["c.txt"]


def test_unclosed_writer_is_committed_when_collected(tmp_path):
    p = str(tmp_path / "d.txt")
    gfile.GFile(p, "w").write("one-liner")
    assert gfile.GFile(p).read() == "one-liner"


def test_gfile_errors_as_tf(tmp_path):
    missing = str(tmp_path / "missing")
    f = gfile.GFile(missing)  # lazy, as TF: the error comes on first read
    with pytest.raises(tf.errors.NotFoundError, match="No such file"):
        f.read()
    p = str(tmp_path / "e.txt")
    gfile.GFile(p, "w").write("x")
    with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for writing"):
        gfile.GFile(p).write("y")
    with gfile.GFile(p, "w") as w:
        with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for reading"):
            w.read()
        with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for reading"):
            w.seek(0)
        w.write("z")
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode 'x'"):
        gfile.GFile(p, "x")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.GFile(str(tmp_path / "no" / "f"), "w").write("x")


def test_folders_listing_walk_and_glob(tmp_path):
    d = str(tmp_path)
    gfile.makedirs(gfile.join(d, "s", "t"))
    gfile.makedirs(gfile.join(d, "s"))  # exists: fine
    gfile.mkdir(gfile.join(d, "s"))  # exists: fine in TF 2.21 too
    gfile.GFile(gfile.join(d, "s", "t", "z"), "w").write("")
    gfile.GFile(gfile.join(d, "a.txt"), "w").write("abc")
    gfile.GFile(gfile.join(d, ".hidden.txt"), "w").write("")
    assert gfile.listdir(d) == [".hidden.txt", "a.txt", "s"]
    assert gfile.isdir(gfile.join(d, "s")) and not gfile.isdir(gfile.join(d, "a.txt"))
    assert not gfile.isdir(gfile.join(d, "nope")) and gfile.exists(d)
    rel = [(w.replace(d, "D"), s, f) for w, s, f in gfile.walk(d)]
    assert rel == [("D", ["s"], [".hidden.txt", "a.txt"]), ("D/s", ["t"], []), ("D/s/t", [], ["z"])]
    bottom = [w.replace(d, "D") for w, _, _ in gfile.walk(d, topdown=False)]
    assert bottom == ["D/s/t", "D/s", "D"]
    seen = []
    assert list(gfile.walk(gfile.join(d, "nope"), onerror=seen.append)) == []
    assert len(seen) == 1 and isinstance(seen[0], tf.errors.NotFoundError)
    assert gfile.glob(gfile.join(d, "*.txt")) == [
        gfile.join(d, ".hidden.txt"),
        gfile.join(d, "a.txt"),
    ]
    assert gfile.glob([gfile.join(d, "s", "*"), gfile.join(d, "a*")]) == [
        gfile.join(d, "a.txt"), gfile.join(d, "s", "t")]  # fmt: skip
    assert gfile.glob(gfile.join(d, "nope", "*")) == []
    st = gfile.stat(gfile.join(d, "a.txt"))
    assert (st.length, st.is_directory) == (3, False)
    assert st.mtime_nsec == os.stat(gfile.join(d, "a.txt")).st_mtime_ns
    assert gfile.stat(d).is_directory


def test_folder_errors_as_tf(tmp_path):
    d, p = str(tmp_path), str(tmp_path / "f")
    gfile.GFile(p, "w").write("x")
    with pytest.raises(tf.errors.NotFoundError, match="No such file"):
        gfile.mkdir(gfile.join(d, "x", "y"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="is not a directory"):
        gfile.makedirs(gfile.join(p, "sub"))
    with pytest.raises(tf.errors.NotFoundError, match="Could not find directory"):
        gfile.listdir(p)
    with pytest.raises(tf.errors.NotFoundError, match="not found"):
        gfile.rmtree(gfile.join(d, "nope"))
    with pytest.raises(tf.errors.NotFoundError):
        gfile.remove(gfile.join(d, "nope"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        gfile.remove(d)
    with pytest.raises(tf.errors.NotFoundError):
        gfile.stat(gfile.join(d, "nope"))


def test_copy_rename_remove_rmtree(tmp_path):
    d = str(tmp_path)
    a, b, c = (gfile.join(d, n) for n in "abc")
    gfile.GFile(a, "w").write("A")
    gfile.GFile(b, "w").write("B")
    with pytest.raises(tf.errors.AlreadyExistsError, match="already exists"):
        gfile.copy(a, b)
    assert gfile.GFile(b).read() == "B"
    gfile.copy(a, b, overwrite=True)
    assert gfile.GFile(b).read() == "A"
    with pytest.raises(tf.errors.NotFoundError):
        gfile.copy(c, b, overwrite=True)
    with pytest.raises(tf.errors.InvalidArgumentError):
        gfile.copy(a, d, overwrite=True)
    gfile.GFile(b, "w").write("B")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.rename(b, a)
    gfile.rename(b, c)
    gfile.rename(c, a, overwrite=True)
    assert gfile.listdir(d) == ["a"] and gfile.GFile(a).read() == "B"
    with pytest.raises(tf.errors.NotFoundError):
        gfile.rename(b, c)
    gfile.makedirs(gfile.join(d, "t", "u"))
    gfile.rmtree(gfile.join(d, "t"))
    gfile.remove(a)
    assert gfile.listdir(d) == []


def test_schemes(tmp_path):
    assert gfile.get_registered_schemes() == ["", "file"]
    p = str(tmp_path / "s.txt")
    gfile.GFile("file://" + p, "w").write("via url")
    assert gfile.exists("file://" + p) and gfile.GFile(p).read() == "via url"
    for url in ("gs://bucket/x", "s3://bucket/x", "hdfs://host/x"):
        with pytest.raises(tf.errors.UnimplementedError, match="File system scheme .* not impl"):
            gfile.exists(url)
        with pytest.raises(tf.errors.UnimplementedError):
            gfile.GFile(url)
    assert gfile.join("gs://b", "c") == "gs://b/c"  # joining is pure string work
    assert gfile.join("a", "b", "/c") == "/c"
