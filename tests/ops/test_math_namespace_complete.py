"""tf.math is complete: every core name of TF 2.21's tf.math (from the checklist in
../shared/api, when it is there) resolves on layerflow, and so does each top-level, tf.nn,
tf.linalg and tf.dtypes name this work added, so none can disappear unnoticed."""

import csv
import pathlib

import pytest

import layerflow as tf

TABLE = pathlib.Path(__file__).resolve().parents[2].parent / "shared/api/tensorflow-2.21-api.tsv"

ADDED = """
acos acosh asin asinh atan atan2 atanh complex cosh floor realdiv round saturate_cast scalar_mul
sinh tan truncatediv truncatemod approx_top_k
dtypes.complex dtypes.saturate_cast
nn.approx_max_k nn.approx_min_k nn.batch_normalization nn.crelu nn.depth_to_space
nn.l2_normalize nn.local_response_normalization nn.log_poisson_loss nn.lrn nn.normalize_moments
nn.space_to_depth nn.sufficient_statistics nn.weighted_cross_entropy_with_logits
nn.weighted_moments nn.zero_fraction
linalg.adjoint linalg.cholesky linalg.cholesky_solve linalg.cross linalg.eigh linalg.eigvalsh
linalg.expm linalg.global_norm linalg.l2_normalize linalg.logdet linalg.lstsq linalg.matrix_rank
linalg.normalize linalg.pinv linalg.qr linalg.set_diag linalg.slogdet linalg.solve linalg.svd
linalg.tensor_diag linalg.tensor_diag_part linalg.triangular_solve
""".split()


def _resolve(dotted):
    obj = tf
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", ADDED)
def test_added_names_resolve_to_behaviour(name):
    assert callable(_resolve(name))


def test_every_core_tf_math_name_resolves():
    if not TABLE.exists():
        pytest.skip(f"the API checklist is not at {TABLE}")
    with TABLE.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    names = [r["name"] for r in rows if r["scope"] == "core" and r["name"].startswith("tf.math.")]
    assert len(names) > 100
    missing = []
    for name in names:
        try:
            _resolve(name.removeprefix("tf."))
        except AttributeError:
            missing.append(name)
    assert not missing, f"tf.math names that no longer resolve: {missing}"
