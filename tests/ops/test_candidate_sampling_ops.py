"""Candidate samplers, compute_accidental_hits, nce_loss and sampled_softmax_loss: the sampling
distributions and expected counts, and the losses against NumPy with numerical gradients (loss
values also checked against TF 2.21)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(37)
TRUE = np.array([[0], [0], [0], [0], [1]], np.int64)


def test_non_unique_expected_counts_and_distribution():
    tf.random.set_seed(3)
    s, t, e = tf.random.log_uniform_candidate_sampler(TRUE, 1, 20000, False, 10, seed=4)
    c = np.arange(10)
    p = (np.log(c + 2) - np.log(c + 1)) / np.log(11)
    assert s.dtype == tf.int64 and t.dtype == tf.float32 and t.shape == (5, 1)
    np.testing.assert_allclose(t.numpy()[:, 0], 20000 * p[TRUE[:, 0]], rtol=1e-5)
    np.testing.assert_allclose(e.numpy(), 20000 * p[s.numpy()], rtol=1e-5)
    freq = np.bincount(s.numpy(), minlength=10) / 20000
    np.testing.assert_allclose(freq, p, atol=0.01)
    s, t, _ = tf.random.uniform_candidate_sampler(TRUE, 1, 8, False, 4, seed=1)
    assert set(s.numpy().tolist()) <= {0, 1, 2, 3}
    np.testing.assert_allclose(t.numpy(), 2.0)


def test_unique_sampling_expected_counts():
    s, t, e = tf.random.log_uniform_candidate_sampler(TRUE, 1, 6, True, 10, seed=2)
    ids = s.numpy()
    assert len(set(ids.tolist())) == 6
    c = np.arange(10)
    p = (np.log(c + 2) - np.log(c + 1)) / np.log(11)
    # Expected counts are p * 6 without rejections, else 1 - (1 - p) ** tries for one tries.
    tries = np.log1p(-e.numpy().astype(np.float64)) / np.log1p(-p[ids])
    if not np.allclose(e.numpy(), 6 * p[ids], rtol=1e-5):
        assert np.allclose(tries, np.round(tries[0]), atol=1e-3) and tries[0] > 6
    with pytest.raises(tf.errors.InvalidArgumentError, match="unique"):
        tf.random.uniform_candidate_sampler(TRUE, 1, 5, True, 4)


def test_same_seed_same_candidates():
    tf.random.set_seed(9)
    a = tf.random.uniform_candidate_sampler(TRUE, 1, 5, True, 50, seed=1)[0].numpy()
    tf.random.set_seed(9)
    b = tf.random.uniform_candidate_sampler(TRUE, 1, 5, True, 50, seed=1)[0].numpy()
    np.testing.assert_array_equal(a, b)


def test_learned_unigram_learns_between_calls_with_a_seed():
    tf.random.set_seed(11)
    _, t1, _ = tf.random.learned_unigram_candidate_sampler(TRUE, 1, 4, False, 5, seed=1)
    _, t2, _ = tf.random.learned_unigram_candidate_sampler(TRUE, 1, 4, False, 5, seed=1)
    # TF 2.21 gives these: uniform at first, then counts 1 + seen (0: 5, 1: 2, others 1).
    np.testing.assert_allclose(t1.numpy()[:, 0], [0.8] * 5)
    np.testing.assert_allclose(t2.numpy()[:, 0], [2.0, 2.0, 2.0, 2.0, 0.8])
    _, t3, _ = tf.random.learned_unigram_candidate_sampler(TRUE, 1, 4, False, 5)
    np.testing.assert_allclose(t3.numpy()[:, 0], [0.8] * 5)  # no op seed: no shared state


def test_fixed_unigram_reserved_distortion_and_shards(tmp_path):
    s, t, e = tf.random.fixed_unigram_candidate_sampler(
        TRUE, 1, 400, False, 5, unigrams=[1, 4, 9, 16], distortion=0.5, num_reserved_ids=1, seed=1
    )
    assert 0 not in s.numpy()  # reserved ids have weight 0
    np.testing.assert_allclose(t.numpy()[:, 0], [0, 0, 0, 0, 40.0])
    np.testing.assert_allclose(e.numpy(), 400 * np.array([0, 0.1, 0.2, 0.3, 0.4])[s.numpy()])
    _, t, _ = tf.random.fixed_unigram_candidate_sampler(
        TRUE, 1, 2, False, 3, unigrams=[1, 2, 3, 4, 5, 6], num_shards=2, shard=1, seed=1
    )
    np.testing.assert_allclose(t.numpy()[:, 0], [2 / 6] * 4 + [4 / 6], rtol=1e-6)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a,1\nb,3\n")
    _, t, _ = tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 4, False, 2,
                                                        vocab_file=str(vocab))  # fmt: skip
    np.testing.assert_allclose(t.numpy()[:, 0], [1.0] * 4 + [3.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="range is 6"):
        tf.random.fixed_unigram_candidate_sampler(TRUE, 1, 2, True, 6, unigrams=[1, 2, 3],
                                                  num_shards=2)  # fmt: skip


def test_all_candidate_sampler_and_accidental_hits():
    s, t, e = tf.random.all_candidate_sampler(TRUE, 1, 4, True)
    assert s.numpy().tolist() == [0, 1, 2, 3] and (t.numpy() == 1).all() and (e.numpy() == 1).all()
    assert tf.nn.all_candidate_sampler is tf.random.all_candidate_sampler
    hits = tf.nn.compute_accidental_hits(np.array([[1, 2], [3, 4]]), [2, 3, 1, 5], 2)
    assert hits.indices.numpy().tolist() == [0, 0, 1] and hits.indices.dtype == tf.int32
    assert hits.ids.numpy().tolist() == [2, 0, 1] and hits.ids.dtype == tf.int64
    np.testing.assert_array_equal(hits.weights.numpy(), np.finfo(np.float32).min)


def _logits_ref(w, b, labels, x, sampled, t_exp, s_exp, remove_hits):
    true = (x[:, None, :] * w[labels]).sum(-1) + b[labels] - np.log(t_exp)
    samp = x @ w[sampled].T + b[sampled] - np.log(s_exp)
    if remove_hits:
        samp = np.where(sampled[None, :] == labels[:, :1], samp + np.finfo(np.float32).min, samp)
    return np.concatenate([true, samp], 1)


SV = (
    np.array([3, 1, 7]),
    np.array([[0.5], [0.6]], "float32"),
    np.array([0.3, 0.4, 0.2], "float32"),
)
LABELS = np.array([[1], [2]])


@pytest.mark.parametrize("remove_hits", [False, True])
def test_nce_loss(remove_hits):
    w, b, x = rng.standard_normal((10, 3)), rng.standard_normal(10), rng.standard_normal((2, 3))

    def ref(w, b, x):
        z = _logits_ref(w, b, LABELS, x, SV[0], SV[1], SV[2], remove_hits)
        y = np.zeros_like(z)
        y[:, 0] = 1
        return (np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).sum(1)

    check_op(lambda w, b, x: tf.nn.nce_loss(w, b, LABELS, x, 3, 10, sampled_values=SV,
                                            remove_accidental_hits=remove_hits),
             [w, b, x], ref, rtol=1e-5)  # fmt: skip


def test_sampled_softmax_loss_and_tf_values():
    w, b, x = rng.standard_normal((10, 3)), rng.standard_normal(10), rng.standard_normal((2, 3))

    def ref(w, b, x):
        z = _logits_ref(w, b, LABELS, x, SV[0], SV[1], SV[2], True)
        z = z - z.max(1, keepdims=True)
        return -(z[:, 0] - np.log(np.exp(z).sum(1)))

    check_op(lambda w, b, x: tf.nn.sampled_softmax_loss(w, b, LABELS, x, 3, 10, sampled_values=SV),
             [w, b, x], ref, rtol=1e-5)  # fmt: skip
    r = np.random.default_rng(0)
    w, b, x = r.standard_normal((10, 3)), r.standard_normal(10), r.standard_normal((2, 3))
    sv64 = (SV[0], SV[1].astype("float64"), SV[2].astype("float64"))
    # TF 2.21's values for these inputs (float64).
    np.testing.assert_allclose(tf.nn.nce_loss(w, b, LABELS, x, 3, 10, sampled_values=sv64),
                               [4.41770192, 4.52635597], rtol=1e-7)  # fmt: skip
    np.testing.assert_allclose(tf.nn.sampled_softmax_loss(w, b, LABELS, x, 3, 10,
                                                          sampled_values=sv64),
                               [2.5433618, 1.12300584], rtol=1e-7)  # fmt: skip
    # Without sampled_values the log-uniform sampler draws num_sampled unique candidates.
    loss = tf.nn.sampled_softmax_loss(w, b, LABELS, x, 4, 10, seed=3)
    assert loss.shape == (2,) and np.isfinite(loss.numpy()).all()
