"""Keras preprocessing layers (tf_keras 2 semantics). `StringLookup` and `TextVectorization` wait
on string tensors, which layerflow does not have yet."""
