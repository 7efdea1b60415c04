import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_shared = ROOT.parent / "shared" / "data"
if "LAYERFLOW_DATASETS" not in os.environ and (_shared / "fashion-mnist").is_dir():
    os.environ["LAYERFLOW_DATASETS"] = str(_shared)
# The real-Keras interop tests (tests/saving/peers.py) run through $LAYERFLOW_PEERS.
_peers = ROOT.parent / "peers" / "bin" / "python"
if "LAYERFLOW_PEERS" not in os.environ and _peers.is_file():
    os.environ["LAYERFLOW_PEERS"] = str(_peers)


@pytest.fixture
def datasets_dir():
    path = os.environ.get("LAYERFLOW_DATASETS")
    if not path or not (pathlib.Path(path) / "fashion-mnist").is_dir():
        pytest.skip("Fashion-MNIST files not found; set LAYERFLOW_DATASETS=../shared/data")
    return pathlib.Path(path)


@pytest.fixture
def two_cpus():
    """The physical CPU split into two logical devices; the single-CPU setup restored after.

    Yields the two logical CPU devices.
    """
    import layerflow as tf
    from layerflow._src.backend import devices

    devices._reset_for_tests()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    yield tf.config.list_logical_devices("CPU")
    devices._reset_for_tests()
    logical = [d.name for d in tf.config.list_logical_devices()]
    if logical != ["/job:localhost/replica:0/task:0/device:CPU:0"]:
        raise RuntimeError(f"two_cpus teardown left logical devices {logical}, not one CPU.")
