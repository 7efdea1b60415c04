"""pad_sequences, to_ordinal, get_source_inputs, warmstart_embedding_matrix, TimedThread,
get_custom_objects, pack/unpack_x_y_sample_weight and utils.legacy (Keras 2 behaviour)."""

import threading

import numpy as np
import pytest

import layerflow as tf


def test_pad_sequences_padding_truncating_value_dtype():
    seqs = [[1, 2, 3], [4]]
    np.testing.assert_array_equal(tf.keras.utils.pad_sequences(seqs), [[1, 2, 3], [0, 0, 4]])
    out = tf.keras.utils.pad_sequences(seqs, maxlen=2, padding="post", truncating="post", value=-1)
    np.testing.assert_array_equal(out, [[1, 2], [4, -1]])
    np.testing.assert_array_equal(tf.keras.utils.pad_sequences(seqs, maxlen=2), [[2, 3], [0, 4]])
    assert tf.keras.utils.pad_sequences(seqs).dtype == np.int32
    floats = tf.keras.utils.pad_sequences([[1.5, 2.5]], dtype="float32", maxlen=3, value=0.5)
    np.testing.assert_array_equal(floats, [[0.5, 1.5, 2.5]])
    assert tf.keras.utils.pad_sequences([[1.5, 2.5]]).tolist() == [[1, 2]]  # int32 truncates
    assert tf.keras.utils.pad_sequences([[]]).shape == (1, 0)
    vecs = tf.keras.utils.pad_sequences([[[1, 1]], [[2, 2], [3, 3]]], padding="post")
    assert vecs.shape == (2, 2, 2) and vecs[0, 1].tolist() == [0, 0]


def test_pad_sequences_strings_and_errors():
    out = tf.keras.utils.pad_sequences([["a", "bb"]], dtype=object, value="x", maxlen=3)
    assert out.tolist() == [["x", "a", "bb"]]
    out = tf.keras.utils.pad_sequences([["a"]], dtype="<U2", value="z", maxlen=2)
    assert out.tolist() == [["z", "a"]]
    with pytest.raises(ValueError, match="dtype=object"):
        tf.keras.utils.pad_sequences([["a"]], value="x")
    with pytest.raises(ValueError, match="Padding type"):
        tf.keras.utils.pad_sequences([[1]], padding="middle")
    with pytest.raises(ValueError, match="Truncating type"):
        tf.keras.utils.pad_sequences([[1]], truncating="middle")
    with pytest.raises(ValueError, match="non-iterable"):
        tf.keras.utils.pad_sequences([1, 2])
    with pytest.raises(ValueError, match="different from expected shape"):
        tf.keras.utils.pad_sequences([[[1, 1]], [[2, 2, 2]]])


def test_to_ordinal():
    np.testing.assert_array_equal(
        tf.keras.utils.to_ordinal([0, 1, 2, 3], 4),
        [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]],
    )
    out = tf.keras.utils.to_ordinal(np.array([[2], [1]]))  # (n, 1) -> (n, classes - 1)
    assert out.shape == (2, 2) and out.dtype == np.float32 and out.tolist() == [[1, 1], [1, 0]]
    assert tf.keras.utils.to_ordinal(tf.constant([[1, 0]]), 3).shape == (1, 2, 2)
    with pytest.raises(ValueError, match="num_classes"):
        tf.keras.utils.to_ordinal([5], 3)


def test_get_source_inputs_walks_the_graph_without_repeats():
    a, b = tf.keras.Input((2,)), tf.keras.Input((2,))
    shared = tf.keras.layers.Dense(2)
    mid = tf.keras.layers.Add()([shared(b), tf.keras.layers.Dense(2)(a)])
    out = tf.keras.layers.Concatenate()([mid, shared(b)])
    sources = tf.keras.utils.get_source_inputs(out)
    assert len(sources) == 2 and sources[0] is b and sources[1] is a
    assert tf.keras.utils.get_source_inputs(a)[0] is a
    x = np.ones(2)
    assert tf.keras.utils.get_source_inputs(x) is x


def test_warmstart_embedding_matrix():
    base = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], "float32")
    out = tf.keras.utils.warmstart_embedding_matrix(
        ["[UNK]", "a", "b"], ["[UNK]", "c", "b"], tf.constant(base),
        new_embeddings_initializer=tf.keras.initializers.Constant(9.0),
    )  # fmt: skip
    assert isinstance(out, tf.Tensor) and out.dtype == tf.float32
    np.testing.assert_array_equal(out.numpy(), [[1, 1], [9, 9], [3, 3]])
    uniform = tf.keras.utils.warmstart_embedding_matrix(["a"], ["z", "a"], base[:1])
    assert np.all(np.abs(uniform.numpy()[0]) <= 0.05) and uniform.numpy()[1].tolist() == [1, 1]
    with pytest.raises(ValueError, match="base_embeddings"):
        tf.keras.utils.warmstart_embedding_matrix(["a", "b"], ["a"], base)


def test_warmstart_reads_a_vocabulary_file(tmp_path):
    (tmp_path / "v.txt").write_text("a\nb\n")
    out = tf.keras.utils.warmstart_embedding_matrix(
        str(tmp_path / "v.txt"), ["b"], np.array([[1.0], [2.0]], "float32")
    )
    assert out.numpy().tolist() == [[2.0]]
    with pytest.raises(ValueError, match="does not exist"):
        tf.keras.utils.warmstart_embedding_matrix(str(tmp_path / "no.txt"), ["b"], [[1.0]])


def test_timed_thread_calls_on_interval_until_stopped():
    calls = threading.Event()
    count = []

    class Tick(tf.keras.utils.TimedThread):
        def on_interval(self):
            count.append(1)
            if len(count) >= 3:
                calls.set()

    with Tick(interval=0.001) as t:
        assert calls.wait(5) and t.is_alive()
    t.thread.join(5)
    assert not t.is_alive() and len(count) >= 3
    assert t.daemon is True and Tick(0.1, daemon=False).daemon is False
    with pytest.raises(ValueError, match="interval"):
        Tick(-1)

    class Bare(tf.keras.utils.TimedThread):
        pass

    with pytest.raises(NotImplementedError):
        Bare(1).on_interval()


def test_get_custom_objects_is_the_global_registry():
    registry = tf.keras.utils.get_custom_objects()
    registry["MyThing"] = dict
    try:
        assert tf.keras.utils.get_registered_object("MyThing") is dict
    finally:
        del registry["MyThing"]


def test_pack_unpack_x_y_sample_weight():
    assert tf.keras.utils.pack_x_y_sample_weight(1) == (1,)
    assert tf.keras.utils.pack_x_y_sample_weight(1, 2, 3) == (1, 2, 3)
    assert tf.keras.utils.unpack_x_y_sample_weight((1, 2)) == (1, 2, None)
    assert tf.keras.utils.unpack_x_y_sample_weight(5) == (5, None, None)
    with pytest.raises(ValueError, match="found a tuple of 4"):
        tf.keras.utils.unpack_x_y_sample_weight((1, 2, 3, 4))


def test_legacy_serialization_round_trip_and_refusal():
    legacy = tf.keras.utils.legacy
    config = legacy.serialize_keras_object(tf.keras.initializers.Constant(2.0))
    assert config == {"class_name": "Constant", "config": {"value": 2.0}}
    assert legacy.serialize_keras_object(tf.keras.activations.relu) == "relu"
    from layerflow._src.keras import initializers

    init = legacy.deserialize_keras_object(
        config, module_objects={"Constant": initializers.Constant}
    )
    assert float(init((1,))[0]) == 2.0
    with pytest.raises(ValueError):
        legacy.deserialize_keras_object({"class_name": "os.system", "config": {}})
