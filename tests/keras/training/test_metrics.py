"""Metrics against hand-computed values (Keras' documented examples where they exist)."""

import numpy as np
import pytest

import layerflow as tf

M = tf.keras.metrics


def test_mean_sum_weighted_and_reset():
    m = M.Mean()
    m.update_state([1.0, 3.0, 5.0, 7.0], sample_weight=[1, 1, 0, 0])
    assert float(m.result()) == 2.0
    m.update_state([10.0])
    assert float(m.result()) == pytest.approx(14 / 3)
    assert all(not v.trainable for v in m.variables)
    m.reset_state()
    assert float(m.result()) == 0.0
    s = M.Sum()
    s.update_state([1.0, 2.0])
    s.update_state(np.array([3.0]))
    assert float(s.result()) == 6.0


def test_accuracies():
    m = M.Accuracy()
    m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
    assert float(m.result()) == 0.75
    m = M.SparseCategoricalAccuracy()
    m.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
    assert float(m.result()) == 0.5
    m = M.CategoricalAccuracy()
    m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert float(m.result()) == 0.5
    m = M.BinaryAccuracy()
    m.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    assert float(m.result()) == 0.75
    m = M.TopKCategoricalAccuracy(k=1)
    m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert float(m.result()) == 0.5
    m = M.TopKCategoricalAccuracy(k=2)
    m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert float(m.result()) == 1.0


def test_precision_recall():
    p = M.Precision()
    p.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert float(p.result()) == pytest.approx(2 / 3)
    r = M.Recall()
    r.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert float(r.result()) == pytest.approx(2 / 3)
    p2 = M.Precision(thresholds=[0.3, 0.9])
    p2.update_state([1, 0, 1], [0.5, 0.4, 0.95])
    np.testing.assert_allclose(p2.result().numpy(), [2 / 3, 1.0], rtol=1e-6)
    p3 = M.Precision(top_k=1)
    p3.update_state([[0, 1, 1]], [[0.2, 0.9, 0.5]])
    assert float(p3.result()) == 1.0


def test_auc_matches_exact_roc_area():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    scores = np.clip(y * 0.3 + rng.random(400) * 0.7, 0, 1)
    pos, neg = scores[y == 1], scores[y == 0]
    exact = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    m = M.AUC(num_thresholds=1000)
    m.update_state(y[:200], scores[:200])
    m.update_state(y[200:], scores[200:])
    assert float(m.result()) == pytest.approx(exact, abs=5e-3)
    m3 = M.AUC(num_thresholds=3)
    m3.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert float(m3.result()) == pytest.approx(0.75)
    pr = M.AUC(curve="PR")
    pr.update_state([0, 1], [0.1, 0.9])
    assert float(pr.result()) == pytest.approx(1.0, abs=1e-2)


def test_mse_metric_and_get():
    m = M.MeanSquaredError()
    m.update_state([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]])
    assert float(m.result()) == 0.25
    assert isinstance(M.get("accuracy"), M.Accuracy)
    with pytest.raises(ValueError, match="Unknown metric"):
        M.get("f17")
    assert tf.metrics.Mean is M.Mean
