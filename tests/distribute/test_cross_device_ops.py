"""The cross-device reductions: same numbers from every algorithm, own buffers, TF's warnings."""

import logging

import numpy as np
import pytest

import layerflow as tf
from layerflow._src import backend
from layerflow._src.distribute import cross_device_ops as cdo

ALGORITHMS = [
    cdo.ReductionToOneDevice,
    cdo.HierarchicalCopyAllReduce,
    cdo.NcclAllReduce,
]


@pytest.fixture
def cpus(two_cpus):
    return [backend.parse_device("/cpu:0"), backend.parse_device("/cpu:1")]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("reduce_op", ["SUM", "MEAN"])
def test_every_algorithm_reduces_alike_into_separate_buffers(algorithm, reduce_op, cpus):
    arrays = [np.array([1.0, 2.0], np.float32), np.array([3.0, 7.0], np.float32)]
    outs = algorithm().reduce_arrays(reduce_op, arrays, cpus, cpus)
    want = np.array([4.0, 9.0]) / (2 if reduce_op == "MEAN" else 1)
    assert len(outs) == 2
    for out in outs:
        np.testing.assert_allclose(out, want)
    assert not np.shares_memory(outs[0], outs[1])
    np.testing.assert_array_equal(arrays[0], [1.0, 2.0])  # inputs untouched


@pytest.mark.parametrize("reduce_op", ["SUM", "MEAN"])
def test_hierarchical_copy_with_an_odd_number_of_values(reduce_op, cpus):
    three = [np.full(2, float(i), np.float32) for i in (1, 2, 4)]
    sources = [cpus[0], cpus[1], cpus[0]]
    outs = cdo.HierarchicalCopyAllReduce().reduce_arrays(reduce_op, three, sources, cpus)
    want = 7.0 / (3 if reduce_op == "MEAN" else 1)
    for out in outs:
        np.testing.assert_allclose(out, [want, want], rtol=1e-6)


@pytest.mark.parametrize("reduce_op", ["SUM", "MEAN"])
def test_accumulation_fn_then_the_mean(reduce_op, cpus):
    seen = []

    def accumulate(tensors):
        seen.append(len(tensors))
        return tf.add_n(tensors)

    arrays = [np.array([2.0], np.float32), np.array([6.0], np.float32)]
    op = cdo.ReductionToOneDevice(accumulation_fn=accumulate)
    outs = op.reduce_arrays(reduce_op, arrays, cpus, cpus)
    assert seen == [2]
    for out in outs:
        np.testing.assert_allclose(out, [8.0 / (2 if reduce_op == "MEAN" else 1)])


@pytest.mark.parametrize("cls", [cdo.HierarchicalCopyAllReduce, cdo.NcclAllReduce])
def test_all_reduce_algorithms_share_tf_base_and_check_num_packs(cls):
    assert issubclass(cls, cdo.AllReduceCrossDeviceOps)
    assert not issubclass(cdo.ReductionToOneDevice, cdo.AllReduceCrossDeviceOps)
    assert cls(num_packs=3).num_packs == 3
    with pytest.raises(ValueError, match=rf"^{cls.__name__}: num_packs must be >= 0, got -1\."):
        cls(num_packs=-1)


def test_nccl_falls_back_on_cpus_and_warns_once(cpus, caplog):
    op = cdo.NcclAllReduce()
    arrays = [np.ones(2, np.float32), np.ones(2, np.float32)]
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        op.reduce_arrays("SUM", arrays, cpus, cpus)
        op.reduce_arrays("SUM", arrays, cpus, cpus)
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce."
    ]


def test_selection_on_cpus(cpus, caplog):
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        one = cdo.select_cross_device_ops(cpus[:1])
    assert isinstance(one, cdo.ReductionToOneDevice) and caplog.records == []
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        two = cdo.select_cross_device_ops(cpus)
    assert isinstance(two, cdo.ReductionToOneDevice)
    assert [r.getMessage() for r in caplog.records] == [
        "There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce."
    ]
    assert not cdo._nccl_usable(cpus) and not cdo._nccl_usable(cpus[:1])
