"""tf.data.experimental's readers and writers: CsvDataset, make_csv_dataset, SqlDataset,
TFRecordWriter, parse_example_dataset and make_batched_features_dataset; expected values are
real TF 2.21's on the same files."""

import gzip
import sqlite3

import numpy as np
import pytest

import layerflow as tf

E = tf.data.experimental
CSV = 'a,b,c\n1,2.5,x\n3,,"y,z"\n,4,"multi\nline"\r\n5,6,w\n'


def _rows(ds):
    return [tuple(np.asarray(v).item() for v in e) for e in ds]


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(CSV.encode())
    return str(path)


def test_csv_dataset_matches_tf(csv_file):
    ds = E.CsvDataset(csv_file, [tf.constant([0]), tf.constant([9.0]), tf.string], header=True)
    assert ds.element_spec == (tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.float32),
                               tf.TensorSpec([], tf.string))  # fmt: skip
    assert isinstance(ds, tf.data.Dataset)
    assert _rows(ds) == [(1, 2.5, b"x"), (3, 9.0, b"y,z"), (0, 4.0, b"multi\nline"),
                         (5, 6.0, b"w")]  # fmt: skip
    assert all(type(e[2].numpy()) is bytes for e in ds)
    sel = E.CsvDataset(csv_file, [[0.0]], header=True, select_cols=[1])
    assert _rows(sel) == [(2.5,), (0.0,), (4.0,), (6.0,)]
    exc = E.CsvDataset(csv_file, [[0], [""]], header=True, exclude_cols=[1])
    assert _rows(exc) == [(1, b"x"), (3, b"y,z"), (0, b"multi\nline"), (5, b"w")]


def test_csv_dataset_required_fields_na_value_and_several_files(tmp_path, csv_file):
    with pytest.raises(tf.errors.InvalidArgumentError, match="Field 0 is required"):
        list(E.CsvDataset(csv_file, [tf.int32, [9.0], tf.string], header=True))
    g = tmp_path / "g.csv"
    g.write_text("1,2\n")
    ds = E.CsvDataset([str(g), str(g)], [[0], [0]], na_value="2")
    assert _rows(ds) == [(1, 0), (1, 0)]
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 1 fields but have 2"):
        list(E.CsvDataset(str(g), [[0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 3 fields but have 2"):
        list(E.CsvDataset(str(g), [[0], [0], [0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="at most one of select_cols"):
        E.CsvDataset(str(g), [[0]], select_cols=[0], exclude_cols=[1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="select_cols should match"):
        E.CsvDataset(str(g), [[0], [0]], select_cols=[0])
    with pytest.raises(TypeError, match="record_defaults\\[0\\]"):
        E.CsvDataset(str(g), [tf.bool])


def test_csv_dataset_gzip_and_custom_delimiter(tmp_path):
    path = tmp_path / "f.csv.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"1;a\n2;b\n")
    ds = E.CsvDataset(str(path), [[0], [""]], compression_type="GZIP", field_delim=";")
    assert _rows(ds) == [(1, b"a"), (2, b"b")]
    with pytest.raises(ValueError, match="compression_type must be one of"):
        E.CsvDataset(str(path), [[0]], compression_type="BZ2")


TITANIC = "age,fare,name,survived\n22,7.25,Bob,0\n38,71.3,Ann,1\n26,,Cid,1\n35,53.1,Dee,0\n"


def test_make_csv_dataset_infers_types_and_splits_the_label(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TITANIC)
    ds = E.make_csv_dataset(str(path), 3, label_name="survived", num_epochs=1, shuffle=False)
    batches = [({k: v.numpy().tolist() for k, v in f.items()}, y.numpy().tolist()) for f, y in ds]
    assert batches == [
        ({"age": [22, 38, 26], "fare": [7.25, np.float32(71.3).item(), 0.0],
          "name": [b"Bob", b"Ann", b"Cid"]}, [0, 1, 1]),
        ({"age": [35], "fare": [np.float32(53.1).item()], "name": [b"Dee"]}, [0]),
    ]  # fmt: skip
    features, label = ds.element_spec
    assert list(features) == ["age", "fare", "name"]
    assert [s.dtype for s in features.values()] == [tf.int32, tf.float32, tf.string]
    assert label.dtype == tf.int32


def test_make_csv_dataset_select_columns_epochs_and_shuffle(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TITANIC)
    ds = E.make_csv_dataset(str(path), 2, select_columns=["fare", "age"], num_epochs=2,
                            shuffle=False)  # fmt: skip
    got = [f["age"].numpy().tolist() for f in ds]
    assert got == [[22, 38], [26, 35], [22, 38], [26, 35]]
    assert list(next(iter(ds))) == ["age", "fare"]
    forever = E.make_csv_dataset(str(path), 3, shuffle=False)  # num_epochs=None repeats
    ages = [f["age"].numpy().tolist() for f in forever.take(3)]
    assert ages == [[22, 38, 26], [35, 22, 38], [26, 35, 22]]  # whole batches only
    shuffled = E.make_csv_dataset(str(path), 4, num_epochs=1, shuffle_seed=5)
    assert sorted(next(iter(shuffled))["age"].numpy().tolist()) == [22, 26, 35, 38]
    typed = E.make_csv_dataset(str(path), 4, num_epochs=1, shuffle=False,
                               column_defaults=[tf.float64, [0.0], [""], [0]])  # fmt: skip
    assert next(iter(typed))["age"].dtype == tf.float64


def test_make_csv_dataset_inference_widens_types(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("i,l,f,s\n1,1,1,1\n2,9999999999,2.5,x\n")
    ds = E.make_csv_dataset(str(path), 2, num_epochs=1, shuffle=False)
    assert [s.dtype for s in ds.element_spec.values()] == [tf.int32, tf.int64, tf.float32,
                                                          tf.string]  # fmt: skip


def test_make_csv_dataset_errors(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TITANIC)
    with pytest.raises(ValueError, match="label_name must be one of the columns"):
        E.make_csv_dataset(str(path), 3, label_name="x")
    with pytest.raises(ValueError, match="column 'zz' in select_columns"):
        E.make_csv_dataset(str(path), 3, select_columns=["zz"])
    with pytest.raises(ValueError, match="duplicate column names \\['a'\\]"):
        E.make_csv_dataset(str(path), 3, column_names=["a", "a", "b", "c"])
    with pytest.raises(ValueError, match="column_names or header=True"):
        E.make_csv_dataset(str(path), 3, header=False)
    with pytest.raises(tf.errors.InvalidArgumentError):
        E.make_csv_dataset(str(tmp_path / "none*.csv"), 3)


def test_sql_dataset_reads_sqlite(tmp_path):
    db = str(tmp_path / "d.sqlite")
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (name TEXT, n INTEGER, x REAL)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [("a", 1, 0.5), ("b", 2, 1.5)])
    conn.commit()
    conn.close()
    ds = E.SqlDataset("sqlite", db, "SELECT name, n, x FROM t ORDER BY n",
                      (tf.string, tf.int32, tf.float64))  # fmt: skip
    assert _rows(ds) == [(b"a", 1, 0.5), (b"b", 2, 1.5)]
    assert ds.element_spec[1] == tf.TensorSpec([], tf.int32)
    single = E.SqlDataset("sqlite", db, "SELECT n FROM t", tf.int64)
    assert [int(v) for v in single] == [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="driver_name must be 'sqlite'"):
        E.SqlDataset("mysql", db, "SELECT 1", tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="returns 2 columns"):
        list(E.SqlDataset("sqlite", db, "SELECT n, x FROM t", tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="no such table"):
        list(E.SqlDataset("sqlite", db, "SELECT * FROM nope", tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="1000 is not a valid int8"):
        list(E.SqlDataset("sqlite", db, "SELECT 1000", tf.int8))
    missing = str(tmp_path / "missing.sqlite")
    with pytest.raises(tf.errors.NotFoundError, match="cannot open"):
        list(E.SqlDataset("sqlite", missing, "SELECT 1", tf.int32))
    assert not (tmp_path / "missing.sqlite").exists()  # never creates a database


def test_tfrecord_writer_writes_a_dataset(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    E.TFRecordWriter(path).write(tf.data.Dataset.from_tensor_slices([b"a", b"bc"]))
    assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == [b"a", b"bc"]
    gz = str(tmp_path / "r.gz")
    E.TFRecordWriter(gz, "GZIP").write(tf.data.Dataset.from_tensors(b"z"))
    assert [r.numpy() for r in tf.data.TFRecordDataset(gz, "GZIP")] == [b"z"]
    with pytest.raises(TypeError, match="scalar `tf.string`"):
        E.TFRecordWriter(path).write(tf.data.Dataset.range(3))
    with pytest.raises(TypeError, match="Expected a `tf.data.Dataset`"):
        E.TFRecordWriter(path).write([b"a"])
    with pytest.raises(ValueError, match="compression_type"):
        E.TFRecordWriter(path, "BZ2")


def _example(i):
    pytest.importorskip("google.protobuf")
    feats = {
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i * 0.5, i])),
        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


FEATURES = {"x": tf.io.FixedLenFeature([2], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}


def test_parse_example_dataset(tmp_path):
    records = tf.data.Dataset.from_tensor_slices([_example(i) for i in range(3)]).batch(2)
    out = list(records.apply(E.parse_example_dataset(FEATURES)))
    assert out[0]["y"].numpy().tolist() == [0, 1] and out[1]["y"].numpy().tolist() == [2]
    assert out[0]["x"].numpy().tolist() == [[0.0, 0.0], [0.5, 1.0]]
    with pytest.raises(TypeError, match="serialized tf.train.Example strings"):
        tf.data.Dataset.range(2).apply(E.parse_example_dataset(FEATURES))
    with pytest.raises(ValueError, match="non-empty dict"):
        E.parse_example_dataset([])


def test_make_batched_features_dataset(tmp_path):
    paths = []
    for k in range(2):
        path = str(tmp_path / f"part-{k}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for i in range(3 * k, 3 * k + 3):
                w.write(_example(i))
        paths.append(path)
    pattern = str(tmp_path / "part-*.tfrecord")
    ds = E.make_batched_features_dataset(pattern, 4, FEATURES, label_key="y", num_epochs=1,
                                         shuffle=False)  # fmt: skip
    batches = [(f["x"].numpy()[:, 1].tolist(), y.numpy().tolist()) for f, y in ds]
    assert batches == [([0, 1, 2, 3], [0, 1, 2, 3]), ([4, 5], [4, 5])]
    forever = E.make_batched_features_dataset(pattern, 4, FEATURES, shuffle_seed=1)
    got = [b["y"].numpy().tolist() for b in forever.take(3)]
    assert all(len(b) == 4 for b in got)  # repeats forever, whole batches only
    assert sorted(got[0] + got[1][:2]) == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="must be one of the `features` keys"):
        E.make_batched_features_dataset(pattern, 4, FEATURES, label_key="z")


def test_make_csv_dataset_ignore_errors_drops_bad_records(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,2\noops,3\n4,5\n")
    kw = dict(column_defaults=[[0], [0]], num_epochs=1, shuffle=False)
    ds = E.make_csv_dataset(str(path), 4, ignore_errors=True, **kw)
    assert next(iter(ds))["a"].numpy().tolist() == [1, 4]
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid int32: oops"):
        list(E.make_csv_dataset(str(path), 4, **kw))
