"""`tf.keras.backend` of tf_keras 2.x: thin functions with Keras's argument conventions."""
