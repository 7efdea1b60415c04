"""Saving and loading: weight files, tensors, checkpoints (format-level, below keras)."""
