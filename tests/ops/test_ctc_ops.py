"""CTC: the loss against a brute-force sum over every alignment, its gradient against finite
differences, the decoders against exhaustive search, and the label utilities (values also
checked against TF 2.21)."""

import itertools

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(31)


def collapse(path, blank):
    out, prev = [], None
    for k in path:
        if k != blank and k != prev:
            out.append(k)
        prev = k
    return tuple(out)


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def labeling_logprobs(frames, blank):
    """log p(labeling) for every labeling, by enumerating all paths over the frames [T, C]."""
    lp = log_softmax(frames)
    probs = {}
    for path in itertools.product(range(frames.shape[1]), repeat=frames.shape[0]):
        key = collapse(path, blank)
        probs[key] = np.logaddexp(
            probs.get(key, -np.inf), sum(lp[t, k] for t, k in enumerate(path))
        )
    return probs


def ctc_ref(logits_tm, labels, lab_len, log_len, blank):
    out = []
    for b in range(logits_tm.shape[1]):
        probs = labeling_logprobs(logits_tm[: log_len[b], b], blank)
        out.append(-probs.get(tuple(labels[b][: lab_len[b]]), -np.inf))
    return np.array(out)


@pytest.mark.parametrize("blank", [0, 2, -1])
def test_ctc_loss_and_gradient(blank):
    logits = rng.standard_normal((5, 3, 4))
    c = 4
    b = blank % c
    classes = [k for k in range(c) if k != b]
    labels = np.array([[classes[0], classes[1], classes[1]], [classes[2], 0, 0],
                       [classes[1], classes[1], 0]])  # fmt: skip
    lab_len, log_len = [3, 1, 2], [5, 3, 4]
    check_op(lambda z: tf.nn.ctc_loss(labels, z, lab_len, log_len, blank_index=blank), [logits],
             lambda z: ctc_ref(z, labels, lab_len, log_len, b), rtol=1e-5)  # fmt: skip


def test_ctc_loss_batch_major_default_blank_and_tf_values():
    x = np.random.default_rng(0).standard_normal((6, 2, 4)).astype("float32")
    labels = tf.constant([[1, 2, 0], [3, 3, 0]])
    # TF 2.21's values for these inputs.
    want = [5.5747976, 5.0731544]
    np.testing.assert_allclose(tf.nn.ctc_loss(labels, x, [2, 2], [6, 4]).numpy(), want, rtol=1e-5)
    got = tf.nn.ctc_loss(labels, np.transpose(x, (1, 0, 2)), [2, 2], [6, 4],
                         logits_time_major=False)  # fmt: skip
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    lg = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(lg)
        loss = tf.reduce_sum(tf.nn.ctc_loss(labels, lg, [2, 2], [6, 4]))
    g = tape.gradient(loss, lg).numpy()
    np.testing.assert_allclose(g[:4, 1, 1], [0.17331946, 0.4811987, 0.5821446, 0.40800717],
                               rtol=1e-5)  # fmt: skip
    assert (g[4:, 1] == 0).all()  # frames past logit_length get no gradient


def test_ctc_loss_impossible_and_errors():
    x = np.zeros((3, 1, 3), "float32")
    assert np.isinf(tf.nn.ctc_loss([[1, 1, 1]], x, [3], [3]).numpy()).all()
    with pytest.raises(tf.errors.InvalidArgumentError, match="other than the blank"):
        tf.nn.ctc_loss([[0, 1]], x, [2], [3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="logit_length"):
        tf.nn.ctc_loss([[1]], x, [1], [4])
    with pytest.raises(ValueError, match="label_length is required"):
        tf.nn.ctc_loss([[1]], x, None, [3])
    with pytest.raises(ValueError, match="blank_index"):
        tf.nn.ctc_loss([[1]], x, [1], [3], blank_index=5)


def test_greedy_decoder():
    x = np.random.default_rng(0).standard_normal((6, 2, 4)).astype("float32")
    decoded, neg = tf.nn.ctc_greedy_decoder(x, [6, 4])
    best = x.argmax(-1)
    want = [collapse(best[:6, 0], 3), collapse(best[:4, 1], 3)]
    sp = decoded[0]
    dense = np.zeros(sp.dense_shape.numpy(), np.int64)
    for (b, i), v in zip(sp.indices.numpy(), sp.values.numpy()):
        dense[b, i] = v
    assert [tuple(dense[b, : len(w)]) for b, w in enumerate(want)] == want
    assert sp.dense_shape.numpy().tolist() == [2, max(len(w) for w in want)]
    want_neg = [-x[:6, 0].max(-1).sum(), -x[:4, 1].max(-1).sum()]
    np.testing.assert_allclose(neg.numpy()[:, 0], want_neg, rtol=1e-6)
    # TF 2.21: values [2 3 1 2 1] with blank_index=0; no merging keeps the repeats.
    assert tf.nn.ctc_greedy_decoder(x, [6, 4], blank_index=0)[0][0].values.numpy().tolist() == [
        2, 3, 1, 2, 1]  # fmt: skip
    rep = np.log(np.array([[[0.1, 0.8, 0.1]], [[0.1, 0.8, 0.1]]], "float32"))
    assert tf.nn.ctc_greedy_decoder(rep, [2], merge_repeated=False)[0][
        0
    ].values.numpy().tolist() == [1, 1]


def test_beam_search_with_a_wide_beam_is_exact():
    x = rng.standard_normal((5, 2, 3))
    decoded, logp = tf.nn.ctc_beam_search_decoder(x, [5, 3], beam_width=100, top_paths=3)
    for b, n in enumerate([5, 3]):
        exact = sorted(labeling_logprobs(x[:n, b], 2).items(), key=lambda kv: -kv[1])[:3]
        for j, (seq, lp) in enumerate(exact):
            sp = decoded[j]
            got = [v for (bb, _), v in zip(sp.indices.numpy(), sp.values.numpy()) if bb == b]
            assert tuple(got) == seq
            np.testing.assert_allclose(logp.numpy()[b, j], lp, rtol=1e-6)
    with pytest.raises(ValueError, match="top_paths"):
        tf.nn.ctc_beam_search_decoder(x, [5, 3], beam_width=2, top_paths=3)


def test_collapse_repeated_and_unique_labels():
    out, n = tf.nn.collapse_repeated([[1, 1, 2, 2, 1], [1, 2, 3, 4, 5], [3, 3, 3, 0, 0]], [5, 5, 3])
    assert out.numpy().tolist() == [[1, 2, 1, 0, 0], [1, 2, 3, 4, 5], [3, 0, 0, 0, 0]]
    assert n.numpy().tolist() == [3, 5, 1] and n.dtype == tf.int32
    out, n = tf.nn.collapse_repeated([[1, 1, 2, 2, 1], [1, 1, 3, 3, 5]], [4, 3])
    assert out.numpy().tolist() == [[1, 2], [1, 3]]
    u, i = tf.nn.ctc_unique_labels([[3, 4, 4, 3, 0], [1, 1, 2, 0, 0]])
    assert u.dtype == tf.int64 and i.dtype == tf.int32
    assert u.numpy().tolist() == [[3, 4, 0, 0, 0], [1, 2, 0, 0, 0]]
    assert i.numpy().tolist() == [[0, 1, 1, 0, 2], [0, 0, 1, 2, 2]]
