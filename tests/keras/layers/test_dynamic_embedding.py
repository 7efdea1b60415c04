"""tf.keras.layers.experimental.DynamicLookup / DynamicEmbedding against real tf_keras 2.21
(`fixtures/dynamic_embedding_tf.json`, made by `make_dynamic_embedding_fixture.py`)."""

import copy
import json
import pathlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

X = tf.keras.layers.experimental
TF = json.loads(
    (pathlib.Path(__file__).parent / "fixtures" / "dynamic_embedding_tf.json").read_text()
)
INP = TF["inputs"]


def _plain(values):
    return [v.decode() if isinstance(v, bytes) else v for v in np.asarray(values).tolist()]


def test_string_lookup_learns_the_table_as_tf_keras():
    layer = X.DynamicLookup(5, tf.constant(INP["string_vocab"]))
    for batch, step in zip(INP["string_batches"], TF["string_lookup"]["steps"]):
        ids = layer(tf.constant(batch))
        assert ids.dtype == tf.int64
        assert ids.numpy().tolist() == step["ids"]
        assert _plain(layer.vocabulary_table_keys.numpy()) == step["keys"]
        assert layer.vocabulary_table_values.numpy().tolist() == step["counts"]
    assert _plain(layer.get_top_vocabulary(3).numpy()) == TF["string_lookup"]["top3"]
    # The lookup vocabulary itself only changes through DynamicEmbedding.update_embeddings.
    assert _plain(layer.get_vocabulary().numpy()) == TF["string_lookup"]["vocabulary"]


def test_int_lookup_learns_the_table_as_tf_keras():
    layer = X.DynamicLookup(4, tf.constant(INP["int_vocab"], dtype="int64"))
    for batch, step in zip(INP["int_batches"], TF["int_lookup"]["steps"]):
        assert layer(tf.constant(batch, dtype="int64")).numpy().tolist() == step["ids"]
        assert layer.vocabulary_table_keys.numpy().tolist() == step["keys"]
        assert layer.vocabulary_table_values.numpy().tolist() == step["counts"]
    assert layer.get_top_vocabulary(3).numpy().tolist() == TF["int_lookup"]["top3"]


def test_update_embeddings_remaps_rows_as_tf_keras():
    ref = TF["embedding"]
    layer = X.DynamicEmbedding(
        5, 2, initial_vocabulary=tf.constant(INP["string_vocab"]), embedding_initializer="zeros"
    )
    layer(tf.constant(INP["string_batches"][0]))
    layer.embedding_layer.embeddings.assign(np.array(ref["base_embeddings"], "float32"))
    for batch in INP["string_batches"][1:]:
        layer(tf.constant(batch))
    layer.update_embeddings(tf.distribute.get_strategy())
    assert _plain(layer.get_vocabulary().numpy()) == ref["vocabulary"]
    assert layer.embedding_layer.embeddings.numpy().tolist() == ref["embeddings"]
    out = layer(tf.constant(INP["string_batches"][0]), learn_vocab=False)
    assert out.numpy().tolist() == ref["after_update_output"]
    assert _plain(layer.dynamic_lookup_layer.vocabulary_table_keys.numpy()) == ref["keys"]


def test_learn_vocab_false_leaves_the_table_alone():
    layer = X.DynamicLookup(3, ["a", "b", "c"])
    layer(tf.constant(["a"]))
    before = layer.vocabulary_table_values.numpy().tolist()
    assert layer(tf.constant(["a", "zz"]), learn_vocab=False).numpy().tolist() == [0, 3]
    assert layer.vocabulary_table_values.numpy().tolist() == before
    assert layer(tf.constant("b")).numpy().tolist() == 1  # scalars keep their shape


def test_a_batch_with_more_new_keys_than_the_table_evicts_everything():
    # tf_keras fails here (top_k with k > table size); layerflow keeps the first new keys.
    layer = X.DynamicLookup(2, [1, 2])
    layer(tf.constant([9, 8, 7, 6, 5], dtype="int64"))
    assert layer.vocabulary_table_keys.numpy().tolist() == [5, 6]
    assert layer.vocabulary_table_values.numpy().tolist() == [1, 1]


def test_int_keys_update_embeddings():
    # tf_keras cannot concatenate its "UNK" OOV name to integer keys; layerflow updates them.
    layer = X.DynamicEmbedding(2, 3, initial_vocabulary=[1, 2], embedding_initializer="zeros")
    layer(tf.constant([[1, 2]], dtype="int64"))
    layer.embedding_layer.embeddings.assign(np.arange(9, dtype="float32").reshape(3, 3) + 1)
    layer(tf.constant([[2, 7, 7]], dtype="int64"))
    layer.update_embeddings()
    assert layer.get_vocabulary().numpy().tolist() == [2, 7]
    emb = layer.embedding_layer.embeddings.numpy()
    assert emb.tolist() == [[4.0, 5.0, 6.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_random_initial_vocabulary_from_a_dtype():
    for dtype, kind in (("string", object), ("int32", np.int32), ("int64", np.int64)):
        layer = X.DynamicLookup(4, getattr(tf, dtype))
        assert layer.initial_vocabulary.shape == (4,)
        assert layer.initial_vocabulary.dtype == kind
        assert layer(tf.constant([[1, 2]] if dtype != "string" else [["a"]])).shape[0] == 1


def test_errors_name_the_problem_and_change_nothing():
    with pytest.raises(ValueError, match="only supports `LFU`"):
        X.DynamicLookup(3, ["a"], eviction_policy="LRU")
    with pytest.raises(ValueError, match="tf.string, tf.int32, tf.int64"):
        X.DynamicLookup(3, tf.float32)
    with pytest.raises(ValueError, match="dtype float"):
        X.DynamicLookup(3, [1.5, 2.5])
    with pytest.raises(ValueError, match="positive"):
        X.DynamicLookup(0, ["a"])
    with pytest.raises(ValueError, match="1-D"):
        X.DynamicLookup(2, [["a"], ["b"]])
    with pytest.raises(ValueError, match="num_oov_indices"):
        X.DynamicEmbedding(2, 2, initial_vocabulary=["a", "b"], num_oov_indices=0)
    layer = X.DynamicLookup(2, [1, 2])
    layer(tf.constant([1]))
    before = layer.vocabulary_table_keys.numpy().tolist()
    with pytest.raises(TypeError, match="expects integer inputs"):
        layer(tf.constant(["a"]))
    with pytest.raises(TypeError, match="expects string inputs"):
        X.DynamicLookup(2, ["a", "b"])(tf.constant([1]))
    assert layer.vocabulary_table_keys.numpy().tolist() == before


def test_update_before_build_only_logs(caplog):
    layer = X.DynamicEmbedding(2, 2, initial_vocabulary=["a", "b"])
    with caplog.at_level("INFO", logger="layerflow"):
        layer.update_embeddings()
    assert "too small" in caplog.text and not layer.built


def test_layer_harness_and_config():
    run_layer_test(
        X.DynamicLookup,
        {"vocabulary_size": 3, "initial_vocabulary": [1, 2, 3]},
        input_data=np.array([[1, 5], [3, 3]]),
        check_gradients_=False,
        expected_num_weights=3,
    )
    out = run_layer_test(
        X.DynamicEmbedding,
        {"input_dim": 3, "output_dim": 2, "initial_vocabulary": ["a", "b", "c"]},
        input_data=np.array([[b"a", b"q"], [b"c", b"a"]], dtype=object),
        check_gradients_=False,  # the harness casts every weight to float64 (keys are strings)
        expected_num_weights=4,
    )
    assert tuple(out.shape) == (2, 2, 2)
    cfg = X.DynamicEmbedding(3, 2, initial_vocabulary=["a", "b", "c"], input_length=4).get_config()
    assert {k: cfg[k] for k in ("input_dim", "output_dim", "input_length", "num_oov_indices")} == {
        "input_dim": 3, "output_dim": 2, "input_length": 4, "num_oov_indices": 1}  # fmt: skip
    assert cfg["initial_vocabulary"] == ["a", "b", "c"] and cfg["eviction_policy"] == "LFU"


def test_weights_and_keras_file_round_trip(tmp_path):
    x = tf.constant([["a", "q"], ["b", "a"]])
    layer = X.DynamicEmbedding(3, 2, initial_vocabulary=["a", "b", "c"])
    layer(x)
    layer.update_embeddings()
    layer.save_weights(str(tmp_path / "w.weights.h5"))
    fresh = X.DynamicEmbedding.from_config(layer.get_config())
    fresh(x, learn_vocab=False)
    fresh.load_weights(str(tmp_path / "w.weights.h5"))
    assert _plain(fresh.get_vocabulary().numpy()) == ["b", "q", "c"]
    for a, b in zip(fresh.get_weights(), layer.get_weights()):
        assert np.array_equal(a, b)
    inp = tf.keras.Input((2,), dtype="string")
    model = tf.keras.Model(inp, tf.keras.layers.Flatten()(layer(inp, learn_vocab=False)))
    model.save(str(tmp_path / "m.keras"))
    back = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    np.testing.assert_array_equal(back(x).numpy(), model(x).numpy())


def test_gradient_reaches_the_looked_up_rows():
    layer = X.DynamicEmbedding(3, 2, initial_vocabulary=["a", "b", "c"])
    x = tf.constant([["a", "q", "a"], ["c", "zz", "b"]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x))
    (grad,) = tape.gradient(loss, layer.trainable_weights)
    # rows: a twice, b once, c once, the OOV row (index 3) twice
    np.testing.assert_allclose(tf.convert_to_tensor(grad).numpy()[:, 0], [2, 1, 1, 2])
    assert [w.name.split("/")[-1] for w in layer.trainable_weights] == ["embeddings:0"]


def test_deep_copy_has_its_own_table():
    layer = X.DynamicLookup(3, ["a", "b", "c"])
    layer(tf.constant(["a"]))
    twin = copy.deepcopy(layer)
    twin(tf.constant(["b"]))
    assert layer.vocabulary_table_values.numpy().tolist() == [1, 0, 0]
    assert twin.vocabulary_table_values.numpy().tolist() == [1, 1, 0]
