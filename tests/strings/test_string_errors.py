"""Behaviour of tf.strings beyond the TF fixtures: RE2 constructs Python's `re` cannot run,
invalid UTF-8 in regexes, and tf.data.TextLineDataset."""

import gzip

import pytest

import layerflow as tf


@pytest.mark.parametrize("pattern", [r"\p{L}+", r"[[:alpha:]]", r"\Qa.b\E"])
def test_re2_only_constructs_are_rejected_clearly(pattern):
    with pytest.raises(tf.errors.InvalidArgumentError, match="Python's `re`"):
        tf.strings.regex_full_match("abc", pattern)


def test_regex_keeps_invalid_utf8_bytes():
    out = tf.strings.regex_replace(tf.constant([b"a\xffb"]), "b", "c")
    assert out.numpy().tolist() == [b"a\xffc"]


def test_text_line_dataset_streams_lines(tmp_path):
    a = tmp_path / "a.txt"
    a.write_bytes(b"one\r\ntwo\n\nthree")
    g = tmp_path / "b.gz"
    with gzip.open(g, "wb") as f:
        f.write(b"g1\ng2\n")
    ds = tf.data.TextLineDataset([str(a), str(g)], compression_type=None)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert [t.numpy() for t in tf.data.TextLineDataset(str(a))] == [b"one", b"two", b"", b"three"]
    gz = tf.data.TextLineDataset(str(g), compression_type="GZIP")
    assert [t.numpy() for t in gz] == [b"g1", b"g2"]
    both = tf.data.TextLineDataset([str(a), str(a)], num_parallel_reads=2)
    assert [t.numpy() for t in both][:4] == [b"one", b"one", b"two", b"two"]
    upper = tf.data.TextLineDataset(str(a)).map(tf.strings.upper).batch(2)
    assert [b.numpy().tolist() for b in upper][0] == [b"ONE", b"TWO"]


def test_text_line_dataset_missing_file(tmp_path):
    ds = tf.data.TextLineDataset(str(tmp_path / "nope.txt"))
    with pytest.raises(tf.errors.NotFoundError, match="No such file"):
        list(ds)
