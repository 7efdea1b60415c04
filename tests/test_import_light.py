"""`import layerflow` stays light: heavy optional packages and rarely used op modules load on
first use, and the op-name registry still names those ops as eager imports would."""

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "google.protobuf", "PIL", "h5py", "cupy", "matplotlib", "tensorboard",
         "tensorboardX", "mpi4py", "tqdm", "ml_dtypes")  # fmt: skip
LAZY = (
    "layerflow.keras",
    "layerflow._src.autograph.conversion",  # the AutoGraph converter
    "layerflow._src.distribute.distribute_lib",
    "layerflow._src.ops.sparse_embedding_ops",
    "layerflow._src.ops.sparse_ops",
    "layerflow._src.ops.ctc_ops",
    "layerflow._src.ops.string_ops",
    "layerflow._src.ops.ragged.ragged_tensor",
    "layerflow._src.ops.structured.structured_tensor",
    "layerflow._src.ops.linalg_lu_ops",
    "layerflow._src.ops.linalg_decomp_ops",
    "layerflow._src.ops.conv_transpose_ops",
    "layerflow._src.ops.functional_ops",
    "layerflow._src.ops.bessel_ops",
    "layerflow._src.ops.random_generator",
    "layerflow.math.special",
    "layerflow._src.ops.candidate_sampling_ops",
    "layerflow._src.ops.nn_extra_ops",
)


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_or_rarely_used_module():
    loaded = _run("import sys, json, layerflow; print(json.dumps(sorted(sys.modules)))")
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
    assert [m for m in LAZY if m in loaded] == []


@pytest.mark.parametrize("expr,name", [
    ("tf.nn.ctc_loss", "tf.nn.ctc_loss"),
    ("tf.nn.compute_average_loss", "tf.nn.compute_average_loss"),
    ("tf.linalg.svd", "tf.linalg.svd"),
    ("tf.linalg.lu", "tf.linalg.lu"),
    ("tf.math.unsorted_segment_max", "tf.math.unsorted_segment_max"),
    ("tf.strided_slice", "tf.strided_slice"),
    ("tf.nn.relu", "tf.nn.relu"),
    ("tf.linalg.eig", "tf.linalg.eig"),
    ("tf.random.all_candidate_sampler", "tf.nn.all_candidate_sampler"),
])  # fmt: skip
def test_lazy_names_keep_their_public_names(expr, name):
    # A fresh process: the first lookup imports the lazy names and registers them in order.
    code = (
        "import json, layerflow as tf\n"
        "from layerflow._src.autodiff import dispatch\n"
        f"fn = {expr}\n"
        f"print(json.dumps([dispatch.name_of(fn), dispatch.function_named({name!r}) is fn]))"
    )
    assert _run(code) == [name, True]


def test_lazy_names_are_listed_and_resolve():
    import layerflow as tf

    for module in (tf, tf.nn, tf.linalg, tf.math, tf.random):
        for name in module._LAZY_NAMES:
            assert name in dir(module)
            assert getattr(module, name) is not None
    assert tf.math.special.bessel_j0 is not None and tf.random.experimental.Generator is not None
    assert tf.nn.experimental.stateless_dropout is not None
    with pytest.raises(AttributeError, match="no attribute 'nonexistent_op'"):
        tf.nn.nonexistent_op  # noqa: B018
