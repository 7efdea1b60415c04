"""The added Keras 2 metrics against NumPy oracles: streaming over several updates, sample
weights, reset, configs and name lookup."""

import warnings

import numpy as np
import pytest

import layerflow as tf

M = tf.keras.metrics
RNG = np.random.default_rng(11)
EPS = 1e-7

T01 = (RNG.random((6, 3)) > 0.5).astype("float32")
LOGITS = RNG.standard_normal((6, 3)).astype("float32")
ONEHOT = np.eye(3, dtype="float32")[[0, 2, 1, 1, 0, 2]]
PROBS = RNG.uniform(0.05, 1.0, (6, 3)).astype("float32")
PROBS /= PROBS.sum(1, keepdims=True)
POS = RNG.uniform(0.1, 3.0, (6, 3)).astype("float32")
POS2 = RNG.uniform(0.1, 3.0, (6, 3)).astype("float32")
W = np.array([1.0, 0.5, 2.0, 0.0, 1.0, 3.0], "float32")


def streaming(metric, t, p, w):
    """Two weighted updates equal one update on the concatenation."""
    metric.update_state(t[:3], p[:3], sample_weight=w[:3])
    metric.update_state(t[3:], p[3:], sample_weight=w[3:])
    return metric.result().numpy()


def wmean(v, w):
    return (v * w).sum() / w.sum()


MEAN_CASES = [
    (M.Hinge, {}, T01, LOGITS, lambda t, p: np.maximum(1 - (2 * t - 1) * p, 0).mean(-1)),
    (M.SquaredHinge, {}, T01, LOGITS,
     lambda t, p: (np.maximum(1 - (2 * t - 1) * p, 0) ** 2).mean(-1)),
    (M.CategoricalHinge, {}, ONEHOT, LOGITS,
     lambda t, p: np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0)),
    (M.KLDivergence, {}, PROBS, ONEHOT * 0.7 + 0.1,
     lambda t, p: (t * np.log(t / p)).sum(-1)),
    (M.Poisson, {}, POS, POS2, lambda t, p: (p - t * np.log(p + EPS)).mean(-1)),
    (M.LogCoshError, {}, POS, POS2, lambda t, p: np.log(np.cosh(p - t)).mean(-1)),
    (M.CosineSimilarity, {}, LOGITS, POS,
     lambda t, p: (t * p).sum(-1) / np.linalg.norm(t, axis=-1) / np.linalg.norm(p, axis=-1)),
    (M.MeanAbsolutePercentageError, {}, POS, POS2,
     lambda t, p: 100 * (np.abs(t - p) / np.abs(t)).mean(-1)),
    (M.MeanSquaredLogarithmicError, {}, POS, POS2,
     lambda t, p: ((np.log1p(p) - np.log1p(t)) ** 2).mean(-1)),
    (M.BinaryCrossentropy, {"from_logits": True}, T01, LOGITS,
     lambda t, p: (np.maximum(p, 0) - p * t + np.log1p(np.exp(-np.abs(p)))).mean(-1)),
    (M.CategoricalCrossentropy, {}, ONEHOT, PROBS, lambda t, p: -(t * np.log(p)).sum(-1)),
    (M.SparseCategoricalCrossentropy, {"from_logits": True}, ONEHOT.argmax(1), LOGITS,
     lambda t, p: np.log(np.exp(p).sum(-1)) - p[np.arange(len(t)), t.astype(int)]),
]  # fmt: skip
MEAN_IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(MEAN_CASES)]


@pytest.mark.parametrize("cls,kwargs,t,p,oracle", MEAN_CASES, ids=MEAN_IDS)
def test_mean_metrics_stream_with_sample_weights(cls, kwargs, t, p, oracle):
    want = oracle(t.astype(np.float64), p.astype(np.float64))
    m = cls(**kwargs)
    m.update_state(t, p)
    np.testing.assert_allclose(m.result().numpy(), want.mean(), rtol=2e-5, atol=1e-6)
    m.reset_state()
    np.testing.assert_allclose(streaming(m, t, p, W), wmean(want, W), rtol=2e-5, atol=1e-6)
    again = cls.from_config(m.get_config())
    assert again.get_config() == m.get_config()
    assert type(M.deserialize(M.serialize(m))) is cls


def test_root_mean_squared_error_and_mean_relative_error():
    m = M.RootMeanSquaredError()
    got = streaming(m, POS, POS2, W)
    np.testing.assert_allclose(got, np.sqrt(wmean((POS - POS2) ** 2, W[:, None] + 0 * POS)),
                               rtol=1e-5)  # fmt: skip
    n = np.array([1.0, 2.0, 0.0], "float32")
    r = M.MeanRelativeError(normalizer=n)
    rel = np.where(n != 0, np.abs(POS - POS2) / np.where(n != 0, n, 1), 0)
    np.testing.assert_allclose(streaming(r, POS, POS2, W), wmean(rel, W[:, None] + 0 * rel),
                               rtol=1e-5)  # fmt: skip
    assert M.MeanRelativeError.from_config(r.get_config()).normalizer.tolist() == n.tolist()


def test_mean_tensor():
    m = M.MeanTensor()
    m.update_state(POS[0])
    m.update_state(POS[1], sample_weight=np.array([1.0, 0.0, 3.0], "float32"))
    w = np.array([[1, 1, 1], [1, 0, 3]], "float32")
    np.testing.assert_allclose(m.result().numpy(), (POS[:2] * w).sum(0) / w.sum(0), rtol=1e-6)
    with pytest.raises(ValueError, match="same shape"):
        m.update_state(POS[:2])
    with pytest.raises(ValueError, match="before its first update_state"):
        M.MeanTensor().result()


# --- confusion counts and constrained rates ------------------------------------------------------

Y = (RNG.random(60) > 0.5).astype("float32")
S = np.clip(Y * 0.3 + RNG.random(60) * 0.7, 0, 1).astype("float32")
W60 = RNG.uniform(0, 2, 60).astype("float32")


def np_counts(y, s, w, th):
    pred = s[None, :] > np.asarray(th, np.float64)[:, None]
    pos = y[None, :] > 0.5
    return [((a & b) * w).sum(1) for a, b in ((pred, pos), (pred, ~pos), (~pred, ~pos),
                                              (~pred, pos))]  # fmt: skip


@pytest.mark.parametrize(
    "cls,index", [(M.TruePositives, 0), (M.FalsePositives, 1), (M.TrueNegatives, 2),
                  (M.FalseNegatives, 3)],
)  # fmt: skip
def test_confusion_counts(cls, index):
    m = cls()
    np.testing.assert_allclose(streaming(m, Y, S, W60), np_counts(Y, S, W60, [0.5])[index][0],
                               rtol=1e-5)  # fmt: skip
    m = cls(thresholds=[0.2, 0.7])
    m.update_state(Y, S)
    np.testing.assert_allclose(m.result().numpy(), np_counts(Y, S, 1.0, [0.2, 0.7])[index])
    assert cls.from_config(m.get_config()).thresholds == [0.2, 0.7]
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        m.update_state([1.0], [1.5])


def _grid(n):
    return [0.0] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1.0]


def _best(constrained, dependent, value):
    ok = constrained >= value
    return dependent[ok].max() if ok.any() else 0.0


@pytest.mark.parametrize(
    "cls,value,constrained,dependent",
    [
        (M.PrecisionAtRecall, 0.6, "rec", "prec"),
        (M.RecallAtPrecision, 0.55, "prec", "rec"),
        (M.SensitivityAtSpecificity, 0.5, "spec", "rec"),
        (M.SpecificityAtSensitivity, 0.7, "rec", "spec"),
    ],
)
def test_rate_at_rate_metrics(cls, value, constrained, dependent):
    m = cls(value, num_thresholds=50)
    got = streaming(m, Y, S, W60)
    tp, fp, tn, fn = np_counts(Y, S, W60, _grid(50))
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = {"rec": np.nan_to_num(tp / (tp + fn)), "prec": np.nan_to_num(tp / (tp + fp)),
                 "spec": np.nan_to_num(tn / (tn + fp))}  # fmt: skip
    np.testing.assert_allclose(got, _best(rates[constrained], rates[dependent], value), rtol=1e-5)
    config = m.get_config()
    assert config["num_thresholds"] == 50 and cls.from_config(config).get_config() == config
    with pytest.raises(ValueError, match=r"range \[0, 1\]"):
        cls(1.5)


# --- IoU family -------------------------------------------------------------------------------

LAB = RNG.integers(0, 3, 40)
PRED = np.where(RNG.random(40) > 0.4, LAB, RNG.integers(0, 3, 40))
W40 = RNG.uniform(0, 2, 40).astype("float32")


def np_iou(t, p, w, n, ids):
    cm = np.zeros((n, n))
    np.add.at(cm, (t, p), w)
    tp = np.diag(cm)
    den = cm.sum(0) + cm.sum(1) - tp
    tp, den = tp[ids], den[ids]
    return (tp[den > 0] / den[den > 0]).sum() / max((den > 0).sum(), 1)


def test_iou_family():
    m = M.IoU(3, target_class_ids=[0, 2])
    np.testing.assert_allclose(streaming(m, LAB, PRED, W40), np_iou(LAB, PRED, W40, 3, [0, 2]),
                               rtol=1e-5)  # fmt: skip
    m = M.MeanIoU(3, ignore_class=1)
    m.update_state(LAB, PRED)
    keep = LAB != 1
    want = np_iou(LAB[keep], PRED[keep], 1.0, 3, [0, 1, 2])
    np.testing.assert_allclose(m.result().numpy(), want, rtol=1e-5)
    onehot_t, onehot_p = np.eye(3)[LAB], np.eye(3)[PRED] * 0.8 + 0.05
    m = M.OneHotMeanIoU(3)
    m.update_state(onehot_t, onehot_p)
    np.testing.assert_allclose(m.result().numpy(), np_iou(LAB, PRED, 1.0, 3, [0, 1, 2]),
                               rtol=1e-5)  # fmt: skip
    m = M.OneHotIoU(3, target_class_ids=[1])
    m.update_state(onehot_t, onehot_p)
    np.testing.assert_allclose(m.result().numpy(), np_iou(LAB, PRED, 1.0, 3, [1]), rtol=1e-5)
    b = M.BinaryIoU(target_class_ids=[1], threshold=0.4)
    b.update_state(Y, S, sample_weight=W60)
    np.testing.assert_allclose(b.result().numpy(),
                               np_iou(Y.astype(int), (S >= 0.4).astype(int), W60, 2, [1]),
                               rtol=1e-5)  # fmt: skip
    for metric in (M.IoU(3, [1]), M.MeanIoU(3), M.BinaryIoU(), M.OneHotIoU(3, [2]),
                   M.OneHotMeanIoU(3, ignore_class=0)):  # fmt: skip
        config = metric.get_config()
        assert type(metric).from_config(config).get_config() == config
    with pytest.raises(ValueError, match="out of range"):
        M.IoU(2, target_class_ids=[2])
    with pytest.raises(ValueError, match="class ids"):
        M.MeanIoU(2).update_state([0, 3], [0, 1])


# --- F-beta and R2 ------------------------------------------------------------------------------


def np_fbeta(t, p, beta, average, threshold, w):
    if threshold is None:
        pred = (p >= p.max(-1, keepdims=True)) & (np.abs(p) > 1e-12)
    else:
        pred = p > threshold
    pred = pred.astype(np.float64)
    axis = None if average == "micro" else 0
    tp = (pred * t * w[:, None]).sum(axis)
    fp = (pred * (1 - t) * w[:, None]).sum(axis)
    fn = ((1 - pred) * t * w[:, None]).sum(axis)
    prec, rec = tp / (tp + fp + EPS), tp / (tp + fn + EPS)
    f = (1 + beta**2) * prec * rec / (beta**2 * prec + rec + EPS)
    if average == "weighted":
        support = (t * w[:, None]).sum(0)
        return (f * support / (support.sum() + EPS)).sum()
    return f.mean() if average else f


@pytest.mark.parametrize(
    "average,beta,threshold",
    [(None, 1.0, None), ("micro", 1.0, 0.3), ("macro", 2.0, None), ("weighted", 0.5, 0.4)],
)
def test_fbeta_score(average, beta, threshold):
    m = M.FBetaScore(average=average, beta=beta, threshold=threshold)
    np.testing.assert_allclose(streaming(m, ONEHOT, PROBS, W),
                               np_fbeta(ONEHOT, PROBS, beta, average, threshold, W),
                               rtol=1e-5, atol=1e-7)  # fmt: skip
    assert M.FBetaScore.from_config(m.get_config()).get_config() == m.get_config()


def test_f1_score_and_errors():
    m = M.F1Score(average="macro")
    m.update_state(ONEHOT, PROBS)
    want = np_fbeta(ONEHOT, PROBS, 1.0, "macro", None, np.ones(6))
    np.testing.assert_allclose(m.result().numpy(), want, rtol=1e-5)
    assert "beta" not in m.get_config() and m.name == "f1_score"
    with pytest.raises(ValueError, match="average"):
        M.F1Score(average="mean")
    with pytest.raises(ValueError, match="beta"):
        M.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="2D inputs"):
        M.F1Score().update_state([1.0, 0.0], [0.4, 0.6])


@pytest.mark.parametrize("aggregation", ["uniform_average", "variance_weighted_average", None])
def test_r2_score(aggregation):
    m = M.R2Score(class_aggregation=aggregation)
    got = streaming(m, POS, POS2, W)
    w = W[:, None]
    mean = (POS * w).sum(0) / w.sum()
    ss_tot = ((POS - mean) ** 2 * w).sum(0)
    ss_res = ((POS - POS2) ** 2 * w).sum(0)
    raw = 1 - ss_res / ss_tot
    weighted = (ss_tot * raw).sum() / ss_tot.sum()
    want = {"uniform_average": raw.mean(), None: raw, "variance_weighted_average": weighted}
    want = want[aggregation]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_adjusted_r2_and_its_fallback_warning():
    t, p = POS[:, :1], POS2[:, :1]
    m = M.R2Score(num_regressors=2)
    m.update_state(t, p)
    plain = M.R2Score()
    plain.update_state(t, p)
    r2, n = float(plain.result()), 6
    np.testing.assert_allclose(float(m.result()), 1 - (1 - r2) * (n - 1) / (n - 2 - 1), rtol=1e-5)
    big = M.R2Score(num_regressors=10)
    big.update_state(t, p)
    with pytest.warns(UserWarning, match="More independent predictors"):
        np.testing.assert_allclose(float(big.result()), r2, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert M.R2Score.from_config(m.get_config()).get_config() == m.get_config()


def test_names_aliases_and_lookup():
    assert M.KLDivergence().name == "kullback_leibler_divergence"
    assert M.LogCoshError().name == "logcosh"
    assert M.kld is M.KLD is M.kl_divergence is M.kullback_leibler_divergence
    assert M.mape is M.MAPE and M.msle is M.MSLE and M.logcosh is M.log_cosh
    assert M.binary_crossentropy is tf.keras.losses.binary_crossentropy
    assert M.hinge is tf.keras.losses.hinge
    for name, cls in [("hinge", M.Hinge), ("logcosh", M.LogCoshError), ("mape",
                      M.MeanAbsolutePercentageError), ("kld", M.KLDivergence),
                      ("binary_crossentropy", M.BinaryCrossentropy),
                      ("RootMeanSquaredError", M.RootMeanSquaredError)]:  # fmt: skip
        assert type(M.get(name)) is cls


def test_compile_with_new_metrics():
    x = RNG.standard_normal((40, 3)).astype("float32")
    y = (x.sum(1, keepdims=True) > 0).astype("float32")
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(3,))])
    model.compile(optimizer="sgd", loss="binary_crossentropy",
                  metrics=[M.TruePositives(), M.PrecisionAtRecall(0.5), M.BinaryIoU(),
                           "hinge", M.RootMeanSquaredError()])  # fmt: skip
    hist = model.fit(x, y, epochs=2, verbose=0)
    for key in ("true_positives", "precision_at_recall", "binary_io_u", "hinge",
                "root_mean_squared_error"):  # fmt: skip
        assert key in hist.history, hist.history.keys()
