"""CSV and SQL sources: `tf.data.experimental.CsvDataset`, `make_csv_dataset` and `SqlDataset`.

A CSV record is a line, or several when a quoted field holds a newline (TF's reader); fields
are parsed by `tf.io.decode_csv`'s rules, so a column's dtype, default and `na_value` behave
the same in both. `make_csv_dataset` is TF's pipeline around it: column names from the header,
column types inferred from the first rows (int32 -> int64 -> float32 -> float64 -> string),
files and records shuffled, repeated `num_epochs` times, batched, and each batch a dict of
columns (with the label split off when `label_name` is given).
"""

from __future__ import annotations

import collections
import csv
import gzip
import io
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.data import structure
from layerflow._src.data.dataset import Dataset
from layerflow._src.data.plan import UNKNOWN
from layerflow._src.data.records import _filenames, list_files
from layerflow._src.data.text_sources import _COMPRESSIONS, _lines, _scalar
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.parsing_ops import decode_csv

_CSV_TYPES = ("int32", "int64", "float32", "float64", "string")
_CHUNK = 1024


def _compression(value: Any, what: str) -> str:
    comp = (value or "").upper() if isinstance(value, str) or value is None else value
    if comp not in _COMPRESSIONS:
        raise ValueError(
            f"{what}: compression_type must be one of '', 'GZIP', 'ZLIB', got {value!r}."
        )
    return comp


def _defaults(record_defaults: Any) -> list[Any]:
    """TF's record_defaults: a dtype (a required column), or a one-value list / tensor (the
    value used for an empty field)."""
    out = []
    for k, d in enumerate(record_defaults):
        if isinstance(d, dtypes.DType) or (isinstance(d, str) and d in _CSV_TYPES):
            dt = dtypes.as_dtype(d)
            if dt.name not in _CSV_TYPES:
                raise TypeError(f"CsvDataset: record_defaults[{k}] has dtype {dt.name}; use "
                                f"one of {', '.join(_CSV_TYPES)}.")  # fmt: skip
            out.append(convert_to_tensor(np.zeros([0], dt.np), dtype=dt))
            continue
        t = d if isinstance(d, TensorLike) else convert_to_tensor(d)
        if t.dtype.name not in _CSV_TYPES or int(np.prod(t.shape.as_list())) > 1:
            raise TypeError(
                f"CsvDataset: record_defaults[{k}] must be a dtype or a list of at most one "
                f"value of dtype {', '.join(_CSV_TYPES)}, got {d!r}."
            )
        out.append(t)
    if not out:
        raise ValueError("CsvDataset: record_defaults must not be empty.")
    return out


def csv_records(path: str, compression: str, quoted: bool) -> Iterator[bytes]:
    """The records of one CSV file: lines, joined while a quoted field is still open."""
    pending: bytes | None = None
    for line in _lines(path, compression):
        record = line if pending is None else pending + b"\n" + line
        if quoted and record.count(b'"') % 2 == 1:
            pending = record
            continue
        pending = None
        yield record
    if pending is not None:
        raise errors.InvalidArgumentError(
            None, None, f"CsvDataset: '{path}' ends inside a quoted field."
        )


class CsvDataset(Dataset):
    """Records of CSV files, one tuple of scalars per record (`tf.data.experimental.CsvDataset`).

    >>> import layerflow as tf, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.csv")
    >>> tf.io.write_file(p, "x,y\\n1,2.5\\n3,\\n")
    >>> ds = tf.data.experimental.CsvDataset(p, [tf.int32, [0.0]], header=True)
    >>> [(int(a), float(b)) for a, b in ds]
    [(1, 2.5), (3, 0.0)]
    """

    def __init__(self, filenames: Any, record_defaults: Any, compression_type: Any = None,
                 buffer_size: Any = None, header: bool = False, field_delim: str = ",",
                 use_quote_delim: bool = True, na_value: str = "", select_cols: Any = None,
                 exclude_cols: Any = None) -> None:  # fmt: skip
        self._paths = _filenames(filenames, "CsvDataset")
        self._defaults = _defaults(record_defaults)
        self._compression = _compression(compression_type, "CsvDataset")
        if buffer_size is not None and int(buffer_size) <= 0:
            raise ValueError(f"CsvDataset: buffer_size must be positive, got {buffer_size}.")
        if select_cols is not None and exclude_cols is not None:
            raise errors.InvalidArgumentError(
                None, None, "CsvDataset: set at most one of select_cols and exclude_cols."
            )
        self._select = None if select_cols is None else [int(c) for c in select_cols]
        self._exclude = None if exclude_cols is None else sorted({int(c) for c in exclude_cols})
        for what, cols in (("select_cols", self._select), ("exclude_cols", self._exclude)):
            if cols is not None and (any(c < 0 for c in cols) or cols != sorted(set(cols))):
                raise errors.InvalidArgumentError(
                    None, None,
                    f"CsvDataset: {what} must be non-negative and strictly increasing, got "
                    f"{cols}.",
                )  # fmt: skip
        if self._select is not None and len(self._select) != len(self._defaults):
            raise errors.InvalidArgumentError(
                None, None,
                f"CsvDataset: select_cols should match output size: {len(self._select)} "
                f"columns selected, {len(self._defaults)} record_defaults.",
            )  # fmt: skip
        self._header = bool(header)
        self._delim = field_delim
        self._quoted = bool(use_quote_delim)
        self._na = na_value
        self._skip_bad = False  # make_csv_dataset(ignore_errors=True) drops bad records

    def _columns(self, record: bytes) -> list[int] | None:
        if self._exclude is None:
            return self._select
        n = _field_count(record, self._delim, self._quoted)
        cols = [c for c in range(n) if c not in self._exclude]
        if len(cols) != len(self._defaults):
            raise errors.InvalidArgumentError(
                None, None,
                f"CsvDataset: a record has {n} fields; with exclude_cols {self._exclude} that "
                f"leaves {len(cols)} columns for {len(self._defaults)} record_defaults.",
            )  # fmt: skip
        return cols

    def _decode(self, chunk: list[bytes], cols: list[int] | None) -> Iterator[Any]:
        try:
            rows = self._rows(chunk, cols)
        except errors.InvalidArgumentError:
            if not self._skip_bad:
                raise
            rows = []
            for record in chunk:  # ignore_errors: find and drop the records that fail
                try:
                    rows.extend(self._rows([record], cols))
                except errors.InvalidArgumentError:
                    continue
        yield from rows

    def _rows(self, chunk: list[bytes], cols: list[int] | None) -> list[Any]:
        records = convert_to_tensor(np.array(chunk + [b""], dtype=object)[:-1])
        columns = decode_csv(records, self._defaults, field_delim=self._delim,
                             use_quote_delim=self._quoted, na_value=self._na,
                             select_cols=cols)  # fmt: skip
        arrays = [c.numpy() for c in columns]
        dts = [c.dtype for c in columns]
        return [
            tuple(
                _scalar(a[r]) if d == dtypes.string else convert_to_tensor(a[r], dtype=d)
                for a, d in zip(arrays, dts)
            )  # fmt: skip
            for r in range(len(chunk))
        ]

    def _elements(self) -> Iterator[Any]:
        for path in self._paths:
            records = csv_records(path, self._compression, self._quoted)
            if self._header:
                next(records, None)
            chunk: list[bytes] = []
            cols: list[int] | None = None
            for record in records:
                if not chunk:
                    cols = self._columns(record)
                chunk.append(record)
                if len(chunk) == _CHUNK:
                    yield from self._decode(chunk, cols)
                    chunk = []
            if chunk:
                yield from self._decode(chunk, cols)

    def _cardinality(self) -> int:
        return UNKNOWN

    def _element_spec(self) -> Any:
        return tuple(structure.TensorSpec((), d.dtype) for d in self._defaults)


def _field_count(record: bytes, delim: str, quoted: bool) -> int:
    reader = csv.reader(io.StringIO(record.decode("utf-8", "replace")), delimiter=delim,
                        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE)  # fmt: skip
    return len(next(reader, [""]))


# --- make_csv_dataset -----------------------------------------------------------------------------


def _text_rows(path: str, compression: str, delim: str, quoted: bool) -> Iterator[list[str]]:
    if compression == "ZLIB":
        raise ValueError("make_csv_dataset: compression_type ZLIB is not supported for probing "
                         "columns; pass column_names and column_defaults.")  # fmt: skip
    opener = gzip.open if compression == "GZIP" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        yield from csv.reader(f, delimiter=delim,
                              quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE)  # fmt: skip


def _infer_type(value: str, na_value: str, prev: str | None) -> str | None:
    """TF's rule: the least permissive of int32, int64, float32, float64, string that every
    value of the column so far fits."""
    if value in ("", na_value):
        return prev
    order = _CSV_TYPES
    start = 0 if prev is None else order.index(prev)
    for kind in order[start:]:
        if kind == "string":
            return kind
        try:
            if kind.startswith("int"):
                v = int(value)
                info = np.iinfo(kind)
                if info.min <= v <= info.max:
                    return kind
            elif np.dtype(kind).type(value) < np.inf:
                return kind
        except (ValueError, OverflowError):
            continue
    return "string"


def make_csv_dataset(file_pattern: Any, batch_size: Any, column_names: Any = None,
                     column_defaults: Any = None, label_name: Any = None,
                     select_columns: Any = None, field_delim: str = ",",
                     use_quote_delim: bool = True, na_value: str = "", header: bool = True,
                     num_epochs: Any = None, shuffle: bool = True,
                     shuffle_buffer_size: int = 10000, shuffle_seed: Any = None,
                     prefetch_buffer_size: Any = None, num_parallel_reads: Any = None,
                     sloppy: bool = False, num_rows_for_inference: Any = 100,
                     compression_type: Any = None, ignore_errors: bool = False,
                     encoding: str = "utf-8") -> Dataset:  # fmt: skip
    """Batches of CSV records as dicts of columns (TF's `make_csv_dataset`; see the module
    docstring). `num_epochs=None` repeats forever, as in TF.

    >>> import layerflow as tf, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.csv")
    >>> tf.io.write_file(p, "x,y\\n1,a\\n2,b\\n")
    >>> ds = tf.data.experimental.make_csv_dataset(p, 2, label_name="y", num_epochs=1,
    ...                                            shuffle=False)
    >>> features, label = next(iter(ds))
    >>> features["x"].numpy().tolist(), label.numpy().tolist()
    ([1, 2], [b'a', b'b'])
    """
    filenames = _filenames(list_files(file_pattern, shuffle=False), "make_csv_dataset")
    comp = _compression(compression_type, "make_csv_dataset")
    if column_names is None:
        if not header:
            raise ValueError("make_csv_dataset: expected column_names or header=True; neither "
                             "is given.")  # fmt: skip
        heads = [next(_text_rows(f, comp, field_delim, use_quote_delim), None) for f in filenames]
        if heads[0] is None:
            raise ValueError(f"make_csv_dataset: cannot read the header line of "
                             f"{filenames[0]}. Is it an empty file?")  # fmt: skip
        for f, h in zip(filenames[1:], heads[1:]):
            if h != heads[0]:
                raise ValueError(
                    f"make_csv_dataset: all CSV files must have the same column "
                    f"names in the header row; {f} has {h}, not {heads[0]}."
                )
        column_names = heads[0]
    column_names = list(column_names)
    if len(set(column_names)) != len(column_names):
        dups = sorted({c for c in column_names if column_names.count(c) > 1})
        raise ValueError(f"make_csv_dataset: duplicate column names {dups}.")
    select = None
    if select_columns is not None:
        index = {n: i for i, n in enumerate(column_names)}
        select = []
        for v in select_columns:
            if isinstance(v, int | np.integer) and not isinstance(v, bool):
                if not 0 <= v < len(column_names):
                    raise ValueError(f"make_csv_dataset: column index {v} in select_columns "
                                     f"is outside [0, {len(column_names)}).")  # fmt: skip
                select.append(int(v))
            elif v in index:
                select.append(index[v])
            else:
                raise ValueError(f"make_csv_dataset: column {v!r} in select_columns must be one "
                                 f"of {column_names}.")  # fmt: skip
        if len(set(select)) != len(select):
            raise ValueError(f"make_csv_dataset: select_columns has duplicates: {select_columns}.")
        select = sorted(select)
    if column_defaults is None:
        cols = select if select is not None else list(range(len(column_names)))
        kinds: list[str | None] = [None] * len(cols)
        seen = 0
        for f in filenames:
            rows = _text_rows(f, comp, field_delim, use_quote_delim)
            if header:
                next(rows, None)
            for row in rows:
                if num_rows_for_inference is not None and seen >= num_rows_for_inference:
                    break
                if len(row) != len(column_names):
                    raise ValueError(
                        f"make_csv_dataset: problem inferring types: a row of {f} "
                        f"has {len(row)} fields, expected {len(column_names)}."
                    )
                kinds = [_infer_type(row[c], na_value, k) for c, k in zip(cols, kinds)]
                seen += 1
        column_defaults = [
            [""]
            if (k or "string") == "string"
            else convert_to_tensor(np.zeros([1], k))  # fmt: skip
            for k in kinds
        ]
    if select is not None and len(column_defaults) != len(select):
        raise ValueError(
            f"make_csv_dataset: column_defaults ({len(column_defaults)}) and select_columns "
            f"({len(select)}) must have the same length."
        )
    if select is not None and len(column_names) > len(select):
        column_names = [column_names[i] for i in select]
    if label_name is not None and label_name not in column_names:
        raise ValueError(f"make_csv_dataset: label_name must be one of the columns "
                         f"{column_names}, got {label_name!r}.")  # fmt: skip

    def per_file(path: Any) -> Dataset:
        ds = CsvDataset(path, column_defaults, comp, header=header, field_delim=field_delim,
                        use_quote_delim=use_quote_delim, na_value=na_value,
                        select_cols=select)  # fmt: skip
        ds._skip_bad = bool(ignore_errors)
        return ds

    files = Dataset.from_tensor_slices(filenames)
    if shuffle:
        files = files.shuffle(len(filenames), shuffle_seed)
    reads = 1 if num_parallel_reads is None else num_parallel_reads
    ds = files.interleave(per_file, cycle_length=reads if reads != -1 else len(filenames))
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)

    def to_dict(*columns: Any) -> Any:
        features = collections.OrderedDict(zip(column_names, columns))
        if label_name is not None:
            label = features.pop(label_name)
            return features, label
        return features

    return ds.map(to_dict)


# --- SqlDataset -----------------------------------------------------------------------------------


class SqlDataset(Dataset):
    """The rows of an SQL query on a SQLite database (`tf.data.experimental.SqlDataset`; TF's
    only driver is "sqlite"), one tuple of scalars per row, typed by `output_types`."""

    def __init__(self, driver_name: str, data_source_name: str, query: str,
                 output_types: Any) -> None:  # fmt: skip
        if driver_name != "sqlite":
            raise errors.InvalidArgumentError(
                None, None, f"SqlDataset: driver_name must be 'sqlite' (TF's only driver), got "
                f"{driver_name!r}.",
            )  # fmt: skip
        self._source = _text(data_source_name, "data_source_name")
        self._query = _text(query, "query")
        single = not isinstance(output_types, tuple | list)
        types = [output_types] if single else list(output_types)
        self._types = [dtypes.as_dtype(t) for t in types]
        for t in self._types:
            if t.name not in ("string", "bool", "float32", "float64", "int8", "int16", "int32",
                              "int64", "uint8", "uint16", "uint32", "uint64"):  # fmt: skip
                raise TypeError(f"SqlDataset: output type {t.name} is not supported.")
        self._single = single

    def _elements(self) -> Iterator[Any]:
        try:
            # read-only, and never creating a missing database file
            uri = "file:" + urllib.parse.quote(os.path.abspath(self._source)) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True)
        except sqlite3.Error as err:
            raise errors.NotFoundError(None, None, f"SqlDataset: cannot open "
                                       f"'{self._source}': {err}") from None  # fmt: skip
        try:
            cursor = conn.execute(self._query)
            for row in cursor:
                if len(row) != len(self._types):
                    raise errors.InvalidArgumentError(
                        None, None,
                        f"SqlDataset: the query returns {len(row)} columns but output_types "
                        f"has {len(self._types)}.",
                    )  # fmt: skip
                values = [self._value(v, t, k) for k, (v, t) in enumerate(zip(row, self._types))]
                yield values[0] if self._single else tuple(values)
        except sqlite3.Error as err:
            raise errors.InvalidArgumentError(None, None, f"SqlDataset: {err}") from None
        finally:
            conn.close()

    @staticmethod
    def _value(v: Any, t: dtypes.DType, k: int) -> Any:
        if v is None:
            raise errors.InvalidArgumentError(
                None, None, f"SqlDataset: column {k} is NULL; NULL values are not supported."
            )
        if t.name == "string":
            data = v if isinstance(v, bytes) else str(v).encode("utf-8")
            return convert_to_tensor(np.array(data, dtype=object))
        try:
            arr = np.asarray(v, dtype=t.np)
        except (ValueError, TypeError, OverflowError):
            raise errors.InvalidArgumentError(
                None, None, f"SqlDataset: column {k} value {v!r} is not a valid {t.name}."
            ) from None
        if t.is_integer and arr.item() != v:
            raise errors.InvalidArgumentError(
                None, None, f"SqlDataset: column {k} value {v!r} does not fit {t.name}."
            )
        return convert_to_tensor(arr, dtype=t)

    def _cardinality(self) -> int:
        return UNKNOWN

    def _element_spec(self) -> Any:
        specs = [structure.TensorSpec((), t) for t in self._types]
        return specs[0] if self._single else tuple(specs)


def _text(value: Any, what: str) -> str:
    if isinstance(value, TensorLike):
        value = value.numpy()
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"SqlDataset: {what} must be a string, got {type(value).__name__}.")
    return value


__all__ = ["CsvDataset", "SqlDataset", "csv_records", "make_csv_dataset"]
