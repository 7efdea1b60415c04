"""The legacy `tf.keras.preprocessing` API of tf_keras (text, sequence, image), NumPy only."""
