"""`tf.keras.preprocessing.text` against real tf_keras outputs."""

import collections
import hashlib
import json

import numpy as np
import pytest

import layerflow as tf

text = tf.keras.preprocessing.text


def _config(json_string):
    """The to_json config with its JSON-string fields parsed; word_docs/index_docs are filled
    from `set` iteration (hash-salted order, in tf_keras too), so they compare as dicts."""
    config = json.loads(json_string)["config"]
    for key in ("word_counts", "word_index", "index_word"):
        config[key] = list(json.loads(config[key]).items())  # ordered
    for key in ("word_docs", "index_docs"):
        config[key] = json.loads(config[key])
    return config


def test_text_to_word_sequence_matches_tf_keras(ref):
    assert [text.text_to_word_sequence(t) for t in ref["corpus"]] == ref["words"]
    assert text.text_to_word_sequence("A-b c.D", filters="-", lower=False) == ref["words_custom"]


def test_text_to_word_sequence_rejects_bytes():
    with pytest.raises(TypeError, match="decode"):
        text.text_to_word_sequence(b"abc")


def test_hashing_trick_md5_matches_tf_keras(ref):
    assert [text.hashing_trick(t, 17, hash_function="md5") for t in ref["corpus"]] == ref["md5"]
    assert text.hashing_trick("the cat the", 10, hash_function="md5") == ref["md5_doc"]


def test_hashing_trick_default_and_one_hot_use_python_hash():
    words = text.text_to_word_sequence("The cat sat on THE mat")
    expect = [hash(w) % 9 + 1 for w in words]
    assert text.hashing_trick("The cat sat on THE mat", 10) == expect
    assert text.one_hot("The cat sat on THE mat", 10) == expect
    assert text.hashing_trick("a b", 5, hash_function=len) == [2, 2]
    assert text.one_hot("x,y", 4, analyzer=lambda s: s.split(",")) == [
        hash("x") % 3 + 1,
        hash("y") % 3 + 1,
    ]


def test_hashing_trick_bad_arguments():
    with pytest.raises(ValueError, match=">= 2"):
        text.hashing_trick("a", 1)
    with pytest.raises(ValueError, match="md5"):
        text.hashing_trick("a", 5, hash_function="sha1")


@pytest.mark.parametrize(
    "name", ["plain", "num_words", "oov", "oov_num_words", "char", "nolower", "split"]
)
def test_tokenizer_matches_tf_keras(ref, name):
    r = ref["tokenizer"][name]
    t = text.Tokenizer(**r["kwargs"])
    t.fit_on_texts(r["corpus"])
    assert t.word_index == r["word_index"]
    assert list(t.word_index) == list(r["word_index"])
    assert list(t.word_counts.items()) == [tuple(p) for p in r["word_counts"]]
    assert dict(t.word_docs) == r["word_docs"]
    assert {str(k): v for k, v in t.index_docs.items()} == r["index_docs"]
    assert t.index_word == {v: k for k, v in r["word_index"].items()}
    assert t.document_count == r["document_count"]
    seqs = t.texts_to_sequences(r["query"])
    assert seqs == r["sequences"]
    assert list(t.texts_to_sequences_generator(r["query"])) == r["sequences"]
    assert t.sequences_to_texts(seqs + [[1, 2, 99, 3]]) == r["texts"]
    for mode in ("binary", "count", "tfidf", "freq"):
        got = t.texts_to_matrix(r["query"] + r["corpus"][:1], mode=mode)
        np.testing.assert_allclose(got, r[mode], rtol=1e-12, err_msg=mode)
    assert json.loads(t.to_json())["class_name"] == "Tokenizer"
    assert _config(t.to_json()) == _config(r["json"])


def test_tokenizer_from_json_round_trips_tf_keras_json(ref):
    r = ref["tokenizer"]["oov_num_words"]
    t = text.tokenizer_from_json(r["json"])  # written by tf_keras
    assert isinstance(t, text.Tokenizer)
    assert t.num_words == 4 and t.oov_token == "<OOV>"
    assert t.texts_to_sequences(r["query"]) == r["sequences"]
    np.testing.assert_allclose(t.texts_to_matrix(r["query"] + r["corpus"][:1], "tfidf"), r["tfidf"])
    assert t.index_word[1] == "<OOV>"
    assert _config(text.tokenizer_from_json(t.to_json()).to_json()) == _config(r["json"])


def test_tokenizer_from_json_bad_string():
    with pytest.raises(ValueError, match="to_json"):
        text.tokenizer_from_json('{"config": {}}')


def test_tokenizer_lists_of_tokens_and_fit_on_sequences(ref):
    t = text.Tokenizer()
    t.fit_on_texts([["Hello", "World"], ["hello"]])
    assert t.word_index == ref["tokenizer"]["lists"]["word_index"]
    assert t.texts_to_sequences([["HELLO", "x", "world"]]) == ref["tokenizer"]["lists"]["seq"]
    t = text.Tokenizer(num_words=6)
    t.fit_on_sequences([[1, 2, 2], [3], [2, 5]])
    got = t.sequences_to_matrix([[1, 2, 2, 7], [5]], mode="tfidf")
    np.testing.assert_allclose(got, ref["tokenizer"]["fit_seq"]["tfidf"], rtol=1e-12)


def test_tokenizer_errors_and_generators():
    with pytest.raises(ValueError, match="num_words"):
        text.Tokenizer().texts_to_matrix(["a"])
    t = text.Tokenizer(num_words=3)
    with pytest.raises(ValueError, match="tfidf"):
        t.sequences_to_matrix([[1]], mode="tfidf")
    with pytest.raises(ValueError, match="vectorization mode"):
        t.sequences_to_matrix([[1]], mode="onehot")
    with pytest.raises(TypeError, match="bogus"):
        text.Tokenizer(bogus=1)
    with pytest.raises(TypeError, match="list"):
        t.fit_on_texts("one string")
    assert t.document_count == 0
    t.fit_on_texts(s for s in ["b a", "b"])  # a generator is read once
    assert t.word_index == {"b": 1, "a": 2} and t.document_count == 2
    with pytest.warns(UserWarning, match="num_words"):
        assert text.Tokenizer(nb_words=7).num_words == 7


def test_tokenizer_tfidf_formula():
    t = text.Tokenizer()
    t.fit_on_texts(["a a b", "a"])
    m = t.texts_to_matrix(["a a b"], mode="tfidf")
    assert m.dtype == np.float64
    idf_a = np.log(1 + 2 / (1 + 2))
    idf_b = np.log(1 + 2 / (1 + 1))
    np.testing.assert_allclose(m[0], [0, (1 + np.log(2)) * idf_a, idf_b])
    assert isinstance(t.word_counts, collections.OrderedDict)
    assert int(hashlib.md5(b"a").hexdigest(), 16) % 4 + 1 == text.hashing_trick("A", 5, "md5")[0]
