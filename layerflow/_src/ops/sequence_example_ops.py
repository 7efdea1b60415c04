"""`tf.io.parse_sequence_example` and `tf.io.parse_single_sequence_example`: serialized
`tf.train.SequenceExample`s to tensors.

The context is parsed like an Example's features. Each feature list is a sequence of steps:
a `FixedLenSequenceFeature` stacks steps of a fixed shape into `[steps] + shape` (a batch is
zero-padded to its longest sequence, and the lengths are returned), a `VarLenFeature` gives a
SparseTensor `[steps, longest step]`, a `RaggedFeature` a RaggedTensor `[steps, (values)]`
(its partitions split each step's values by the same step of the partition feature lists).

>>> import layerflow as tf
>>> ints = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
>>> se = tf.train.SequenceExample(
...     context=tf.train.Features(feature={"n": ints([2])}),
...     feature_lists=tf.train.FeatureLists(feature_list={
...         "tok": tf.train.FeatureList(feature=[ints([1]), ints([2])])}))
>>> ctx, seq = tf.io.parse_single_sequence_example(
...     se.SerializeToString(), {"n": tf.io.FixedLenFeature([], tf.int64)},
...     {"tok": tf.io.FixedLenSequenceFeature([], tf.int64)})
>>> int(ctx["n"]), seq["tok"].numpy().tolist()
(2, [1, 2])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.ops import example_proto
from layerflow._src.ops.example_features import (
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
)
from layerflow._src.ops.example_parsing_ops import (
    EMPTY,
    Spec,
    decode_all,
    drop_batch,
    feature_values,
    invalid,
    names_of,
    pad_rows,
    parse_feature_maps,
    prepare,
    ragged_depth,
    ragged_one,
    stack_rows,
    to_ragged,
    var_len,
)
from layerflow._src.ops.string_ops import as_tensor, strings_of

_OP = "ParseSequenceExample"
_EMPTY_STEPS: list = []


def _specs(context_features: Any, sequence_features: Any,
           op: str) -> tuple[list[Spec], list[Spec]]:  # fmt: skip
    if not context_features and not sequence_features:
        raise ValueError("Both context_features and sequence_features are None, but at least "
                         "one should have values.")  # fmt: skip
    context = prepare(context_features or {}, op)
    for spec in context:
        if isinstance(spec.config, FixedLenSequenceFeature):
            raise ValueError(f"Unsupported FixedLenSequenceFeature {spec.config!r} for context "
                             f"key {spec.key!r}; a context feature is FixedLenFeature, "
                             "VarLenFeature, SparseFeature or RaggedFeature.")  # fmt: skip
    sequence = prepare(sequence_features or {}, op)
    for spec in sequence:
        config = spec.config
        if not isinstance(config, FixedLenSequenceFeature | VarLenFeature | RaggedFeature):
            what = type(config).__name__
            raise ValueError(f"Unsupported {what} {config!r} for key {spec.key!r}; a sequence "
                             "feature is FixedLenSequenceFeature, VarLenFeature or "
                             "RaggedFeature.")  # fmt: skip
        if isinstance(config, FixedLenSequenceFeature) and config.default_value is not None:
            raise ValueError(f"Value feature_list.dense_defaults[{spec.key}] must be None: "
                             "sequences are padded with zeros.")  # fmt: skip
    return context, sequence


def _where(key: str, index: int, names: list | None) -> str:
    if names is None:
        return f"Feature list: {key}"
    return f"Name: {names[index] or '<unknown>'}, Feature list: {key}, Index: {index}"


def _steps(spec: Spec, example: Any, index: int, names: list | None) -> list | None:
    """The steps (arrays, None for a step without values) of one feature list, or None."""
    lists = example.feature_lists.feature_list
    flist = lists.get(spec.key)
    if flist is None:
        return None
    at = _where(spec.key, index, names)
    return [feature_values(step, spec.dtype, f"{at}, Step: {t}")
            for t, step in enumerate(flist.feature)]  # fmt: skip


def _fixed(spec: Spec, steps: list, index: int, names: list | None) -> np.ndarray:
    """One example's steps of a FixedLenSequenceFeature, flattened (each checked)."""
    size = math.prod(spec.shape)
    for t, values in enumerate(steps):
        n = 0 if values is None else values.size
        if n != size:
            raise invalid(f"{_where(spec.key, index, names)}, Step: {t}.  Number of values != "
                          f"expected.  values size: {n} but output shape: "
                          f"{list(spec.shape)}", _OP)  # fmt: skip
    parts = [v for v in steps if v is not None and v.size]
    return np.concatenate(parts) if parts else EMPTY[spec.dtype.name]


def _feature_lists(specs: list[Spec], examples: list, names: list | None,
                   single: bool) -> tuple[dict, dict]:  # fmt: skip
    out: dict[str, Any] = {}
    lengths: dict[str, Any] = {}
    for spec in specs:
        key, config = spec.key, spec.config
        per = ([_steps(spec, e, i, names) for i, e in enumerate(examples)]
               if not isinstance(config, RaggedFeature) else [])  # fmt: skip
        if isinstance(config, FixedLenSequenceFeature):
            rows = []
            for i, steps in enumerate(per):
                if steps is None and not config.allow_missing:
                    raise invalid(f"{'Name: ' + (names[i] or '<unknown>') + ', ' if names else ''}"
                                  f"Feature list '{key}' is required but could not be found.  "
                                  "Set allow_missing=True in its FixedLenSequenceFeature to "
                                  "parse a missing list as zero steps.", _OP)  # fmt: skip
                rows.append(_fixed(spec, steps or _EMPTY_STEPS, i, names))
            arr, n = pad_rows(spec, rows, lambda i, key=key: _where(key, i, names))
            out[key] = as_tensor(arr[0, ...] if single else arr)
            lengths[key] = as_tensor(n)
        elif isinstance(config, VarLenFeature):
            out[key] = _var_len_steps(spec, per, single)
        else:
            out[key] = _ragged_steps(spec, examples, names, single)
    return out, lengths


def _var_len_steps(spec: Spec, per: list, single: bool) -> SparseTensor:
    """`[batch, steps, longest step]` (without the batch for one example)."""
    flat_rows: list = []
    owners: list[int] = []
    counts = []
    for i, steps in enumerate(per):
        steps = steps or _EMPTY_STEPS
        flat_rows.extend(steps)
        owners.extend([i] * len(steps))
        counts.append(len(steps))
    inner = var_len(flat_rows, spec.dtype)  # [all steps, longest]
    idx = inner.indices.numpy()
    owner = np.asarray(owners, dtype=np.int64)
    starts = np.cumsum(counts, dtype=np.int64) - np.asarray(counts, dtype=np.int64)
    step_of = idx[:, 0]
    batch = owner[step_of] if len(owners) else np.zeros(0, dtype=np.int64)
    indices = np.stack([batch, step_of - starts[batch] if len(batch) else batch, idx[:, 1]], 1)
    shape = [len(per), max(counts, default=0), int(inner.dense_shape.numpy()[1])]
    sp = SparseTensor(indices, inner.values, shape)
    return drop_batch(sp) if single else sp


class _Step:
    """Step `t` of every feature list, looked up like an Example's features."""

    __slots__ = ("_lists", "_t")

    def __init__(self, lists: Any, t: int) -> None:
        self._lists, self._t = lists, t

    def get(self, key: str) -> Any:
        flist = self._lists.get(key)
        if flist is None or self._t >= len(flist.feature):
            return None
        return flist.feature[self._t]


def _ragged_steps(spec: Spec, examples: list, names: list | None, single: bool) -> Any:
    """`[batch, (steps), partitions..., (values)]` (without the batch for one example): each
    step is split by its own partition steps, as an Example's values are."""
    config, key = spec.config, spec.key
    depth = ragged_depth(config)
    per_example = []
    for i, example in enumerate(examples):
        lists = example.feature_lists.feature_list
        flist = lists.get(config.value_key or key)
        steps = []
        for t in range(0 if flist is None else len(flist.feature)):
            at_key = lambda k, t=t, i=i: f"{_where(k, i, names)}, Step: {t}"  # noqa: E731
            steps.append(ragged_one(config, key, _Step(lists, t), at_key))
        per_example.append(stack_rows(config, steps, depth))
    if single:
        return to_ragged(config, *per_example[0])
    return to_ragged(config, *stack_rows(config, per_example, depth + 1))


def _parse(serialized: np.ndarray, context_features: Any, sequence_features: Any,
           names: list | None, single: bool, op: str) -> tuple[dict, dict, dict]:  # fmt: skip
    example_proto.require_protobuf()
    context, sequence = _specs(context_features, sequence_features, op)
    examples = decode_all(serialized.reshape(-1), "SequenceExample", _OP)
    maps = [e.context.feature for e in examples]
    ctx = parse_feature_maps(context, maps, names, single) if context else {}
    lists, lengths = _feature_lists(sequence, examples, names, single)
    return ctx, lists, lengths


def parse_sequence_example(serialized: Any, context_features: Any = None,
                           sequence_features: Any = None, example_names: Any = None,
                           name: Any = None) -> tuple[dict, dict, dict]:  # fmt: skip
    """Parse a batch (1-D string tensor) of serialized `tf.train.SequenceExample`s.

    Returns `(context, feature_lists, feature_list_lengths)`: the context features with a
    batch dimension, the feature lists `[batch, steps, ...]` (FixedLenSequenceFeature
    zero-padded to the longest sequence), and each FixedLenSequenceFeature's lengths.
    """
    arr = strings_of(serialized, "parse_sequence_example")
    if arr.ndim != 1:
        raise ValueError(f"parse_sequence_example: serialized must be a vector (a batch), got "
                         f"shape {list(arr.shape)}; use tf.io.parse_single_sequence_example "
                         "for one.")  # fmt: skip
    names = names_of(example_names, arr.shape[0], "parse_sequence_example")
    return _parse(arr, context_features, sequence_features, names, False,
                  "parse_sequence_example")  # fmt: skip


def parse_single_sequence_example(serialized: Any, context_features: Any = None,
                                  sequence_features: Any = None, example_name: Any = None,
                                  name: Any = None) -> tuple[dict, dict]:  # fmt: skip
    """Parse one serialized `tf.train.SequenceExample` (a scalar string): returns
    `(context, feature_lists)`, each feature list `[steps, ...]`."""
    arr = strings_of(serialized, "parse_single_sequence_example")
    if arr.ndim != 0:
        raise ValueError(f"Input serialized must be a scalar, got shape {list(arr.shape)}; use "
                         "tf.io.parse_sequence_example for a batch.")  # fmt: skip
    ctx, lists, _ = _parse(arr, context_features, sequence_features, None, True,
                           "parse_single_sequence_example")  # fmt: skip
    return ctx, lists
