"""`tf.keras.applications`: the Keras image models (implementation; one module per family)."""
