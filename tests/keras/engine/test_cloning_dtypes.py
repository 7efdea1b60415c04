"""clone_model and Sequential keep the declared input dtype (string inputs for text models).

Behaviour checked against tf_keras 2.21: a first layer's `input_shape=` with `dtype=` declares
the input dtype, the clone keeps it, and `Sequential.inputs`/`outputs` list the symbolic input
and output once the model is built symbolically.
"""

import numpy as np

import layerflow as tf

keras = tf.keras
VOCAB = ["the", "cat", "dog"]


def _text_model(first):
    return keras.Sequential(
        first
        + [
            keras.layers.Embedding(20, 3),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1),
        ]
    )


def test_clone_of_string_input_sequential_runs_end_to_end():
    vec = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    vec.adapt(np.array(["the cat sat", "the dog ran far away"]))
    model = _text_model([keras.Input(shape=(1,), dtype=tf.string), vec])
    clone = keras.models.clone_model(model)
    assert [t.dtype for t in clone.inputs] == [tf.string]
    assert clone.input.dtype == tf.string
    x = tf.constant([["the cat"], ["dog far"]])
    clone.compile("adam", "mse")
    history = clone.fit(x, tf.constant([[1.0], [0.0]]), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_first_layer_input_shape_declares_the_dtype():
    vec = keras.layers.TextVectorization(vocabulary=VOCAB, input_shape=(1,), dtype=tf.string)
    model = keras.Sequential([vec])
    assert model.input.dtype == tf.string
    clone = keras.models.clone_model(model)
    assert clone.input.dtype == tf.string
    assert clone(tf.constant([["the dog"]])).numpy().tolist() == [[2, 4]]
    dense = keras.Sequential([keras.layers.Dense(2, input_shape=(3,), dtype="float64")])
    assert dense.input.dtype == tf.float64
    assert keras.models.clone_model(dense).input.dtype == tf.float64


def test_clone_of_a_called_sequential_takes_strings():
    model = keras.Sequential([keras.layers.TextVectorization(vocabulary=VOCAB)])
    model(tf.constant([["the dog"]]))
    clone = keras.models.clone_model(model)
    assert clone(tf.constant([["the dog"]])).numpy().tolist() == [[2, 4]]


def test_sequential_inputs_and_outputs():
    model = keras.Sequential([keras.Input(shape=(3,), dtype="int32"), keras.layers.Embedding(5, 2)])
    assert [(t.dtype, tuple(t.shape)) for t in model.inputs] == [(tf.int32, (None, 3))]
    assert [tuple(t.shape) for t in model.outputs] == [(None, 3, 2)]
    unbuilt = keras.Sequential([keras.layers.Dense(2)])
    assert unbuilt.inputs is None and unbuilt.outputs is None
    unbuilt.build((None, 3))
    assert [tuple(t.shape) for t in unbuilt.inputs] == [(None, 3)]
    assert keras.models.clone_model(model).inputs[0].dtype == tf.int32
