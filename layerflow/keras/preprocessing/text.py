"""`tf.keras.preprocessing.text`."""

from layerflow._src.keras.preprocessing_legacy.text import (
    Tokenizer,
    hashing_trick,
    one_hot,
    text_to_word_sequence,
    tokenizer_from_json,
)

__all__ = ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence", "tokenizer_from_json"]
