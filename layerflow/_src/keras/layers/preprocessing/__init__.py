"""Keras preprocessing layers (tf_keras 2 semantics), including the string layers `StringLookup`
and `TextVectorization`."""
