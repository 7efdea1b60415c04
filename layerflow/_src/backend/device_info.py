"""What a device reports about itself (details, memory), DLPack exchange, and the BLAS thread
cap: the parts of `tf.config` and `tf.experimental.dlpack` that must know NumPy from CuPy.

Memory: TF tracks no CPU allocations and reports `{'current': 0, 'peak': 0}` for a CPU device;
so does layerflow. For a GPU, `current` is the bytes CuPy's memory pool has handed out and
`peak` the bytes the pool holds (it keeps freed blocks cached, so this is the high-water mark
of use since the last `reset_memory_stats`, which releases the cached blocks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.backend import devices as _devices


def _device(name: str, what: str) -> _devices.Device:
    if not isinstance(name, str):
        raise TypeError(f"{what}: device must be a string such as 'GPU:0', got {name!r}.")
    found = None
    text = name.split("device:")[-1].lstrip("/").upper()
    for kind in ("CPU", "GPU"):
        for d in _devices._registry.build()[kind]:
            if d.short_name == text:
                found = d
    if found is None:
        raise ValueError(f"No matching devices found for '{name}'")
    return found


def memory_info(name: str) -> dict[str, int]:
    device = _device(name, "get_memory_info")
    if device.kind == "CPU":
        return {"current": 0, "peak": 0}
    pool = device.xp.get_default_memory_pool()
    with device.xp.cuda.Device(device.physical_index):
        return {"current": int(pool.used_bytes()), "peak": int(pool.total_bytes())}


def reset_memory_stats(name: str) -> None:
    device = _device(name, "reset_memory_stats")
    if device.kind == "GPU":
        with device.xp.cuda.Device(device.physical_index):
            device.xp.get_default_memory_pool().free_all_blocks()


def device_details(physical: Any) -> dict[str, Any]:
    """TF's `get_device_details`: {} for a CPU; a GPU's name and compute capability."""
    kind = getattr(physical, "device_type", None)
    if kind not in ("CPU", "GPU"):
        raise ValueError(
            f"get_device_details expects a PhysicalDevice from "
            f"tf.config.list_physical_devices(), got {physical!r}."
        )
    if kind == "CPU":
        return {}
    index = int(physical.name.rsplit(":", 1)[-1])
    gpu = next(d for d in _devices._registry.build()["GPU"] if d.physical_index == index)
    props = gpu.xp.cuda.runtime.getDeviceProperties(index)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    return {"device_name": name, "compute_capability": (props["major"], props["minor"])}


# --- DLPack ----------------------------------------------------------------------------------

_KDL_CPU, _KDL_CUDA = 1, 2


class _Capsule:
    """A bare DLPack capsule (as `to_dlpack` returns) with the protocol NumPy's importer needs."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CPU, 0)


def to_dlpack(array: Any) -> Any:
    return array.__dlpack__()


def from_dlpack(value: Any) -> tuple[Any, _devices.Device]:
    """(array, device) for an object with `__dlpack__` or a DLPack capsule (zero-copy)."""
    kind = value.__dlpack_device__()[0] if hasattr(value, "__dlpack_device__") else None
    if kind == _KDL_CUDA or (kind is None and _devices._registry.build()["GPU"]):
        try:
            gpu = _devices._registry.build()["GPU"][0]
            array = gpu.xp.from_dlpack(value)
            return array, _devices.array_device(array)
        except Exception:  # a CPU capsule handed to CuPy: fall through to NumPy
            if kind == _KDL_CUDA:
                raise
    if kind is None:
        value = _Capsule(value)
    return np.from_dlpack(value), _devices.cpu_device()


# --- BLAS threads ------------------------------------------------------------------------------

_thread_limits: list[Any] = []


def limit_blas_threads(n: int) -> bool:
    """Cap NumPy's BLAS (and OpenMP) pools at n threads (0: lift the cap) through threadpoolctl;
    False when threadpoolctl is not installed (then nothing changes)."""
    try:
        import threadpoolctl
    except ImportError:
        return False
    while _thread_limits:
        _thread_limits.pop().restore_original_limits()
    if n > 0:
        _thread_limits.append(threadpoolctl.threadpool_limits(limits=n))
    return True


# --- GPU build and synchronization (tf.test) ---------------------------------------------------


def gpu_support_installed() -> bool:
    """Whether layerflow can run on a GPU here at all: CuPy is importable (a GPU may be absent)."""
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


def synchronize_devices() -> None:
    """Block until the work queued on every GPU has finished (CPU work is synchronous)."""
    for gpu in _devices._registry.build()["GPU"]:
        gpu.xp.cuda.Device(gpu.physical_index).synchronize()  # every stream of the device
