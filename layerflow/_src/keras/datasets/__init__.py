"""`tf.keras.datasets`: MNIST-style datasets read from IDX files (see idx.py)."""
