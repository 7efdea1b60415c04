"""`tf.test`: `TestCase` with TF's assertions, `compute_gradient`, device queries, benchmarks."""

from layerflow._src.testing.case import TestCase
from layerflow._src.testing.tools import (
    Benchmark,
    benchmark_config,
    compute_gradient,
    disable_with_predicate,
    gpu_device_name,
    is_built_with_cuda,
    is_built_with_gpu_support,
    is_built_with_rocm,
    is_built_with_xla,
    is_cpu_target_available,
    is_gpu_available,
    main,
    with_eager_op_as_function,
)
from layerflow.test import experimental

_ABSENT = {
    "create_local_cluster": "it starts in-process gRPC servers for TF's distributed runtime, "
    "which layerflow does not have (tf.distribute runs in one process, or across processes "
    "with MPI).",
    "assert_equal_graph_def": "it compares GraphDef protocol buffers, and layerflow builds no "
    "GraphDefs; compare results with TestCase.assertAllClose instead.",
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    why = _ABSENT.get(name)
    if why is not None:
        raise AttributeError(f"layerflow has no tf.test.{name}: {why}")
    raise AttributeError(f"module 'layerflow.test' has no attribute {name!r}")


__all__ = [
    "Benchmark", "TestCase", "benchmark_config", "compute_gradient", "disable_with_predicate",
    "experimental", "gpu_device_name", "is_built_with_cuda", "is_built_with_gpu_support",
    "is_built_with_rocm", "is_built_with_xla", "is_cpu_target_available", "is_gpu_available",
    "main", "with_eager_op_as_function",
]  # fmt: skip
