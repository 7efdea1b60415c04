"""No covered TF name disappears: every name of TF 2.21's public API checklist
(../shared/api/tensorflow-2.21-api.tsv, scopes core and later) resolves on layerflow the way
../shared/api/coverage.py resolves it, except the names below, which are absent on purpose (each
raises an AttributeError that says why) or not done yet (listed, so that doing one is noticed
too: the test then asks for it to be removed from the list)."""

import pathlib

import pytest

import layerflow as tf

TABLE = pathlib.Path(__file__).resolve().parents[1].parent / "shared/api/tensorflow-2.21-api.tsv"

# Core: absent on purpose (tf.feature_column, which it consumes, is deprecated and not provided).
ABSENT_CORE = {"tf.keras.layers.DenseFeatures"}

# Later: absent with a reason given on access, or not done yet.
ABSENT_LATER = {
    "tf.data.experimental.DatasetInitializer",  # no tf.lookup tables
    "tf.data.experimental.index_table_from_dataset",
    "tf.data.experimental.table_from_dataset",
    "tf.data.experimental.from_variant",  # no variant tensors
    "tf.data.experimental.to_variant",
    "tf.data.experimental.distributed_save",  # needs the tf.data service
    "tf.data.experimental.make_saveable_from_iterator",  # TF 1 Saver
    "tf.test.assert_equal_graph_def",  # no GraphDefs
    "tf.test.create_local_cluster",  # no gRPC servers
    "tf.keras.export",  # writes TF SavedModels: no TF graph runtime
    "tf.keras.export.ExportArchive",
    # TF's SavedModel graph quantizer (MLIR passes and calibration on TF's runtime)
    "tf.quantization.experimental",
    "tf.quantization.experimental.QuantizationComponentSpec",
    "tf.quantization.experimental.QuantizationMethod",
    "tf.quantization.experimental.QuantizationOptions",
    "tf.quantization.experimental.TfRecordRepresentativeDatasetSaver",
    "tf.quantization.experimental.UnitWiseQuantizationSpec",
    "tf.quantization.experimental.quantize_saved_model",
}


def _rows():
    if not TABLE.exists():
        pytest.skip(f"the API checklist is not beside the repository ({TABLE})")
    lines = TABLE.read_text().splitlines()
    return [line.split("\t") for line in lines if line and not line.startswith("name\t")]


def _resolves(name: str, kind: str) -> bool:
    parts = name.split(".")
    try:
        if kind in ("method", "property"):
            owner = ".".join(parts[:-1])
            cls = type(tf.constant(1.0)) if owner == "tf.Tensor" else _resolve(owner)
            return hasattr(cls, parts[-1])
        _resolve(name)
        return True
    except AttributeError:
        return False


def _resolve(dotted: str):
    obj = tf
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("scope", ["core", "later"])
def test_every_listed_name_resolves(scope):
    absent = ABSENT_CORE if scope == "core" else ABSENT_LATER
    missing, done_now = [], []
    for name, kind, row_scope in _rows():
        if row_scope != scope:
            continue
        expected_absent = name in absent
        ok = _resolves(name, kind)
        if not ok and not expected_absent:
            missing.append(name)
        elif ok and name in absent:
            done_now.append(name)
    assert not missing, f"{len(missing)} covered names no longer resolve: {missing[:20]}"
    assert not done_now, f"now provided, remove from the absent list: {done_now}"


@pytest.mark.parametrize(
    "name, why",
    [
        ("tf.quantization.experimental", "MLIR quantization passes"),
        ("tf.keras.export", "no TF graph runtime"),
    ],
)
def test_absent_namespaces_say_why(name, why):
    with pytest.raises(AttributeError, match=why):
        _resolve(name)
