"""TFRecord files byte-compatible with TF (masked CRC32C framing, GZIP/ZLIB), damaged files as
tf.errors.DataLossError, and FixedLengthRecordDataset."""

import gzip
import os

import pytest

import layerflow as tf
from layerflow._src.data import records

# tf.io.TFRecordWriter (TF 2.21) writing b"hello", b"" and b"\x00\xff" * 3:
TF_BYTES = bytes.fromhex(
    "0500000000000000eab2043e68656c6c6fbb1f1c19000000000000000029039807d8ea82a2060000000000"
    "00007369d53700ff00ff00ff4c812478"
)
# ... and b"hello" with TFRecordOptions(compression_type="ZLIB"):
TF_ZLIB = bytes.fromhex("789c63658080579b58ec32527372f277cbcb48020029610507")


def test_crc32c_vectors():
    assert records.crc32c(b"123456789") == 0xE3069283  # RFC 3720's check value
    assert records.crc32c(bytes(32)) == 0x8A9136AA
    assert records.crc32c(b"\xff" * 32) == 0x62A8AB43


def test_writer_is_byte_identical_to_tf(tmp_path):
    path = str(tmp_path / "a.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(b"hello")
        w.write(tf.constant(b""))
        w.write(b"\x00\xff" * 3)
    assert (tmp_path / "a.tfrecord").read_bytes() == TF_BYTES
    ds = tf.data.TFRecordDataset(path)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert [r.numpy() for r in ds] == [b"hello", b"", b"\x00\xff" * 3]
    with pytest.raises(ValueError, match="writer is closed"):
        w.write(b"late")


def test_reads_tf_files_and_compression(tmp_path):
    (tmp_path / "tf.z").write_bytes(TF_ZLIB)
    got = tf.data.TFRecordDataset(str(tmp_path / "tf.z"), compression_type="ZLIB")
    assert [r.numpy() for r in got] == [b"hello"]
    for kind in ("GZIP", "ZLIB"):
        path = str(tmp_path / f"c.{kind}")
        with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=kind)) as w:
            for i in range(3):
                w.write(bytes([i]) * 70000)
        back = tf.data.TFRecordDataset([path], compression_type=kind)
        assert [r.numpy() for r in back] == [bytes([i]) * 70000 for i in range(3)]
    head = gzip.decompress((tmp_path / "c.GZIP").read_bytes())[:8]
    assert head == (70000).to_bytes(8, "little")
    two = tf.data.TFRecordDataset(tf.data.Dataset.from_tensor_slices(
        [str(tmp_path / "tf.z"), str(tmp_path / "tf.z")]), compression_type="ZLIB")  # fmt: skip
    assert len(list(two)) == 2
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        tf.io.TFRecordOptions(compression_type="BZ2")
    assert tf.io.TFRecordOptions.get_compression_type_string("ZLIB") == "ZLIB"


def test_damaged_files_raise_data_loss(tmp_path):
    path = tmp_path / "bad.tfrecord"
    flipped = bytearray(TF_BYTES)
    flipped[14] ^= 1  # inside the first record's data
    path.write_bytes(bytes(flipped))
    with pytest.raises(tf.errors.DataLossError, match="corrupted record at 0"):
        list(tf.data.TFRecordDataset(str(path)))
    lying = bytearray(TF_BYTES)
    lying[0:8] = (2**62).to_bytes(8, "little")  # a huge length with a valid header CRC
    lying[8:12] = records.masked_crc32c(bytes(lying[0:8])).to_bytes(4, "little")
    path.write_bytes(bytes(lying))
    with pytest.raises(tf.errors.DataLossError, match="truncated record at 0"):
        list(tf.data.TFRecordDataset(str(path)))
    path.write_bytes(TF_BYTES[:10])  # shorter than a header: the end, as in TF
    assert list(tf.data.TFRecordDataset(str(path))) == []


def test_fixed_length_records(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"HDR" + b"abcdefgh" + b"FT")
    ds = tf.data.FixedLengthRecordDataset(str(path), 4, header_bytes=3, footer_bytes=2)
    assert [r.numpy() for r in ds] == [b"abcd", b"efgh"]
    gz = tmp_path / "f.gz"
    gz.write_bytes(gzip.compress(b"abcdefgh"))
    ds = tf.data.FixedLengthRecordDataset(str(gz), 2, compression_type="GZIP")
    assert [r.numpy() for r in ds] == [b"ab", b"cd", b"ef", b"gh"]
    path.write_bytes(b"HDR" + b"abcdefghxy" + b"FT")
    with pytest.raises(tf.errors.InvalidArgumentError, match="not an exact multiple"):
        list(tf.data.FixedLengthRecordDataset(str(path), 4, header_bytes=3, footer_bytes=2))
    assert os.path.exists(path)


def test_text_lines_and_list_files(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"one\r\ntwo\n\nthree")
    (tmp_path / "b.txt").write_bytes(b"x\n")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    lines = tf.data.TextLineDataset(files)
    assert [v.numpy() for v in lines] == [b"one", b"two", b"", b"three", b"x"]  # TF 2.21
    (tmp_path / "c.gz").write_bytes(gzip.compress(b"p\nq\n"))
    zipped = tf.data.TextLineDataset(str(tmp_path / "c.gz"), compression_type="GZIP")
    assert [v.numpy() for v in zipped] == [b"p", b"q"]
    found = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    assert [f.numpy().decode() for f in found] == files
    assert found.element_spec == tf.TensorSpec([], tf.string)
    shuffled = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), seed=1)
    assert sorted(f.numpy().decode() for f in shuffled) == files
    with pytest.raises(tf.errors.InvalidArgumentError, match="No files matched pattern"):
        tf.data.Dataset.list_files(str(tmp_path / "*.zz"))
