"""Precision, Recall and AUC after the split into confusion_metrics: names, configs, thresholds,
state reset, and the old import path."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.metrics import confusion as confusion_metrics
from layerflow._src.keras.metrics import core as metrics

M = tf.keras.metrics
Y_TRUE = [0, 1, 1, 1, 0, 1]
Y_PRED = [0.9, 0.2, 0.7, 0.6, 0.4, 0.55]


@pytest.mark.parametrize(("cls", "name"), [(M.Precision, "precision"), (M.Recall, "recall")])
def test_defaults_and_config(cls, name):
    m = cls()
    assert m.name == name and m.thresholds == [0.5]
    assert m.get_config() == {
        "name": name,
        "dtype": "float32",
        "thresholds": None,
        "top_k": None,
        "class_id": None,
    }
    again = cls.from_config(cls(thresholds=[0.3, 0.6], name="p2").get_config())
    assert again.name == "p2" and again.thresholds == [0.3, 0.6]
    with pytest.raises(ValueError, match=rf"^{cls.__name__}: thresholds must be in \[0, 1\]"):
        cls(thresholds=1.5)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.65])
def test_against_numpy_counts(threshold):
    t = np.array(Y_TRUE, bool)
    p = np.array(Y_PRED) > threshold
    tp, fp, fn = (p & t).sum(), (p & ~t).sum(), (~p & t).sum()
    prec, rec = M.Precision(thresholds=threshold), M.Recall(thresholds=threshold)
    prec.update_state(Y_TRUE, Y_PRED)
    rec.update_state(Y_TRUE, Y_PRED)
    np.testing.assert_allclose(float(prec.result()), tp / (tp + fp), rtol=1e-6)
    np.testing.assert_allclose(float(rec.result()), tp / (tp + fn), rtol=1e-6)


def test_auc_reset_and_perfect_ranking():
    auc = M.AUC()
    auc.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    np.testing.assert_allclose(float(auc.result()), 0.75, atol=1e-2)
    auc.reset_state()
    assert float(tf.reduce_sum(auc.true_positives)) == 0.0
    auc.update_state([0, 1], [0.2, 0.9])
    np.testing.assert_allclose(float(auc.result()), 1.0, atol=1e-6)


def test_old_module_path_still_has_everything():
    for name in ("Precision", "Recall", "AUC"):
        assert getattr(metrics, name) is getattr(confusion_metrics, name) is getattr(M, name)
    for name in ("Metric", "Mean", "Sum", "Reduce", "MeanMetricWrapper"):
        assert getattr(metrics, name).__module__ == "layerflow._src.keras.metrics.base_metric"
    assert type(metrics.get("precision")) is M.Precision
    assert metrics.deserialize(metrics.serialize(M.Recall(name="r"))).name == "r"
