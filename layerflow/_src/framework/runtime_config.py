"""Runtime settings of `tf.config` (threading, optimizer, experimental) with TF's defaults,
validation and round trips.

What each setting does here:
- `set_intra_op_parallelism_threads(n)` caps NumPy's BLAS/OpenMP thread pools at n through
  threadpoolctl when it is installed (0 lifts the cap); without it the value is recorded only.
- inter-op threads: layerflow runs ops one after another, so the value is recorded only.
- `set_jit` / optimizer options: there is no XLA or graph optimizer here; TF's values are kept
  and returned, and change nothing.
- op determinism: layerflow's ops are deterministic already (NumPy; CuPy reductions are
  ordered), so enabling it changes nothing but is remembered.
- TensorFloat-32: kept for GPUs (on by default, as in TF); CPUs compute in full float32.
- device policy and synchronous execution: layerflow copies between devices silently (TF's
  'silent') and runs each op to completion before the next on the CPU; the values are kept.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.backend import device_info

_settings: dict[str, Any] = {
    "intra_op": 0,
    "inter_op": 0,
    "jit": "",
    "optimizer": {},
    "determinism": False,
    "tf32": True,
    "device_policy": "silent",
    "synchronous": True,
}

# --- threading -----------------------------------------------------------------------------------


def _threads(n: Any, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(
            f"{what}: num_threads must be an integer >= 0 (0: the system picks), got {n!r}."
        )
    return n


def get_intra_op_parallelism_threads() -> int:
    return _settings["intra_op"]


def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Threads one op may use: caps the BLAS pools (threadpoolctl), 0 restores the default."""
    n = _threads(num_threads, "set_intra_op_parallelism_threads")
    device_info.limit_blas_threads(n)
    _settings["intra_op"] = n


def get_inter_op_parallelism_threads() -> int:
    return _settings["inter_op"]


def set_inter_op_parallelism_threads(num_threads: int) -> None:
    _settings["inter_op"] = _threads(num_threads, "set_inter_op_parallelism_threads")


# --- optimizer -----------------------------------------------------------------------------------

_OPTIMIZER_OPTIONS = frozenset({
    "layout_optimizer", "constant_folding", "shape_optimization", "remapping",
    "arithmetic_optimization", "dependency_optimization", "loop_optimization",
    "function_optimization", "debug_stripper", "disable_model_pruning",
    "scoped_allocator_optimization", "pin_to_host_optimization", "implementation_selector",
    "auto_mixed_precision", "disable_meta_optimizer", "min_graph_nodes",
})  # fmt: skip


def get_jit() -> str:
    return _settings["jit"]


def set_jit(enabled: Any) -> None:
    """TF's values: True or 'autoclustering' turn XLA autoclustering on, False off."""
    if enabled not in (True, False, "autoclustering"):
        raise ValueError(
            f"set_jit: enabled must be True, False or 'autoclustering', got {enabled!r}."
        )
    _settings["jit"] = "autoclustering" if enabled else ""


def get_experimental_options() -> dict[str, Any]:
    out = dict(_settings["optimizer"])
    for key in ("disable_model_pruning", "disable_meta_optimizer"):
        out.setdefault(key, False)
    return out


def set_experimental_options(options: dict[str, Any]) -> None:
    unknown = set(options) - _OPTIMIZER_OPTIONS
    if unknown:
        raise ValueError(
            f"set_experimental_options: unknown options {sorted(unknown)}; known: "
            f"{sorted(_OPTIMIZER_OPTIONS)}."
        )
    _settings["optimizer"].update(options)


# --- experimental ----------------------------------------------------------------------------


def enable_op_determinism() -> None:
    _settings["determinism"] = True


def is_op_determinism_enabled() -> bool:
    return _settings["determinism"]


def enable_tensor_float_32_execution(enabled: bool) -> None:
    _settings["tf32"] = bool(enabled)


def tensor_float_32_execution_enabled() -> bool:
    return _settings["tf32"]


_POLICIES = (None, "warn", "explicit", "silent", "silent_for_int32")


def get_device_policy() -> str:
    return _settings["device_policy"]


def set_device_policy(device_policy: str | None) -> None:
    if device_policy not in _POLICIES:
        raise ValueError(
            f"Invalid argument `device_policy`: {device_policy!r}. Use one of {list(_POLICIES)}."
        )
    _settings["device_policy"] = "silent" if device_policy is None else device_policy


def get_synchronous_execution() -> bool:
    return _settings["synchronous"]


def set_synchronous_execution(enable: bool) -> None:
    _settings["synchronous"] = bool(enable)


def get_soft_device_placement() -> bool:
    return True  # a missing device always falls back to the CPU (see backend.parse_device)


def get_memory_info(device: str) -> dict[str, int]:
    """{'current', 'peak'} bytes on `device` ('CPU:0' reports zeros, as TF does)."""
    return device_info.memory_info(device)


def get_memory_usage(device: str) -> int:
    """Deprecated in TF for `get_memory_info(device)['current']`."""
    return device_info.memory_info(device)["current"]


def reset_memory_stats(device: str) -> None:
    device_info.reset_memory_stats(device)


def get_device_details(device: Any) -> dict[str, Any]:
    return device_info.device_details(device)
