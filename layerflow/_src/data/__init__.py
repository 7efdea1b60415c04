"""tf.data: input pipelines (L5). See dataset.py."""
