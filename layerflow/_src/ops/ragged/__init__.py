"""Ragged tensors: `tf.RaggedTensor` (row-partitioned values) and its helpers."""
