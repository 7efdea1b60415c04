"""Regenerate `fixtures/dynamic_embedding_tf.json` with REAL tf_keras 2.21 (not layerflow):

    /work/peers/bin/python tests/keras/layers/make_dynamic_embedding_fixture.py

Runs `DynamicLookup` (string and int64 keys) and `DynamicEmbedding` (string keys) on the fixed
batches below and stores, after every call, the lookups and the internal frequency table, then
`get_top_vocabulary`, and for the embedding layer the vocabulary and embedding matrix after
`update_embeddings` (the embedding matrix is set after the first call; rows of new keys come
from a "zeros" initializer).
"""

import json
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_keras.src.layers.experimental.dynamic_embedding import DynamicEmbedding  # noqa: E402
from tf_keras.src.layers.experimental.dynamic_lookup import DynamicLookup  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent

STRING_VOCAB = ["a", "b", "c", "d", "e"]
STRING_BATCHES = [
    [["a", "x", "c"], ["x", "y", "a"]],
    [["y", "y", "z"], ["a", "b", "q"]],
    [["q", "x", "w"], ["e", "a", "x"]],
    [["d", "d", "d"], ["unk", "x", "y"]],
]
INT_VOCAB = [10, 20, 30, 40]
INT_BATCHES = [[7, 10, 7, 11], [11, 12, 13, 10], [40, 7, 12, 99], [5, 6, 7, 8]]


def plain(a):
    a = np.asarray(a)
    if a.dtype == object:
        return [v.decode() for v in a.reshape(-1)]
    return a.reshape(-1).tolist()


def trace(layer, batches, dtype):
    steps = []
    for batch in batches:
        ids = layer(tf.constant(batch, dtype=dtype))
        steps.append(
            {
                "ids": np.asarray(ids).tolist(),
                "keys": plain(layer.vocabulary_table_keys.numpy()),
                "counts": plain(layer.vocabulary_table_values.numpy()),
            }
        )
    return steps


def main():
    out = {}
    s = DynamicLookup(5, tf.constant(STRING_VOCAB))
    out["string_lookup"] = {
        "steps": trace(s, STRING_BATCHES, tf.string),
        "top3": plain(s.get_top_vocabulary(3).numpy()),
        "vocabulary": plain(s.get_vocabulary().numpy()),
    }
    i = DynamicLookup(4, tf.constant(INT_VOCAB, dtype=tf.int64))
    out["int_lookup"] = {
        "steps": trace(i, INT_BATCHES, tf.int64),
        "top3": plain(i.get_top_vocabulary(3).numpy()),
    }
    e = DynamicEmbedding(
        5, 2, initial_vocabulary=tf.constant(STRING_VOCAB), embedding_initializer="zeros"
    )
    e(tf.constant(STRING_BATCHES[0]))  # builds (tf_keras rebuilds on the first call)
    base = np.arange(12, dtype="float32").reshape(6, 2) + 1.0
    e.embedding_layer.embeddings.assign(base)
    for batch in STRING_BATCHES[1:]:
        e(tf.constant(batch))
    e.update_embeddings(tf.distribute.get_strategy())
    after = e(tf.constant(STRING_BATCHES[0]), learn_vocab=False)
    out["embedding"] = {
        "base_embeddings": base.tolist(),
        "vocabulary": plain(e.get_vocabulary().numpy()),
        "embeddings": e.embedding_layer.embeddings.numpy().tolist(),
        "after_update_output": np.asarray(after).tolist(),
        "keys": plain(e.dynamic_lookup_layer.vocabulary_table_keys.numpy()),
        "counts": plain(e.dynamic_lookup_layer.vocabulary_table_values.numpy()),
    }
    out["inputs"] = {
        "string_vocab": STRING_VOCAB,
        "string_batches": STRING_BATCHES,
        "int_vocab": INT_VOCAB,
        "int_batches": INT_BATCHES,
    }
    path = HERE / "fixtures" / "dynamic_embedding_tf.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
