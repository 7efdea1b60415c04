"""Physical and logical devices, the device scope, and copies between devices.

A physical device is a CPU or a CUDA GPU (through CuPy, imported only when GPUs are first asked
about). Logical devices split a physical one, as `tf.config.set_logical_device_configuration`
does; on a CPU-only machine that is how multi-device code runs and is tested.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

_log = logging.getLogger("layerflow")

_PREFIX = "/job:localhost/replica:0/task:0/device:"


# Named tuples, as TF's (and no dataclasses: `import layerflow` stays without inspect and ast).
class PhysicalDevice(NamedTuple):
    """A physical device, as `tf.config.list_physical_devices` returns it."""

    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A logical device, as `tf.config.list_logical_devices` returns it."""

    name: str
    device_type: str


class LogicalDeviceConfiguration(NamedTuple):
    """One logical device carved out of a physical one (`memory_limit` in MiB, GPUs only)."""

    memory_limit: int | None = None
    experimental_priority: int | None = None
    experimental_device_ordinal: int | None = None


class Device:
    """A logical device: where arrays live and which array module (`xp`) computes on them."""

    __slots__ = ("kind", "index", "physical_index", "name", "short_name", "xp", "ndarray")

    def __init__(self, kind: str, index: int, physical_index: int, xp: ModuleType) -> None:
        self.kind = kind
        self.index = index
        self.physical_index = physical_index
        self.short_name = f"{kind}:{index}"
        self.name = _PREFIX + self.short_name
        self.xp = xp
        self.ndarray = xp.ndarray  # read by every op to check what the forward returned

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


class _Registry:
    """Process-wide device state: GPUs found, logical configurations, the built device list."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.gpu_count: int | None = None
        self.cupy: ModuleType | None = None
        self.configs: dict[tuple[str, int], list[LogicalDeviceConfiguration]] = {}
        self.devices: dict[str, list[Device]] | None = None
        self.warned: set[str] = set()

    def detect_gpus(self) -> int:
        if self.gpu_count is None:
            try:
                import cupy

                count = int(cupy.cuda.runtime.getDeviceCount())
                self.cupy = cupy if count else None
                self.gpu_count = count
            except Exception:  # no CuPy, no driver, or no device: the CPU is all there is
                self.gpu_count = 0
        return self.gpu_count

    def build(self) -> dict[str, list[Device]]:
        if self.devices is None:
            with self.lock:
                if self.devices is None:
                    self.devices = self._build()
        return self.devices

    def _build(self) -> dict[str, list[Device]]:
        devices: dict[str, list[Device]] = {"CPU": [], "GPU": []}
        n_cpu_logical = len(self.configs.get(("CPU", 0), [None]))
        for i in range(n_cpu_logical):
            devices["CPU"].append(Device("CPU", i, 0, np))
        for p in range(self.detect_gpus()):
            for _ in self.configs.get(("GPU", p), [None]):
                devices["GPU"].append(Device("GPU", len(devices["GPU"]), p, self.cupy))
        flags.multi_device = len(devices["CPU"]) + len(devices["GPU"]) > 1
        flags.refresh()
        return devices


class _Flags:
    """Read on the hot path of every op.

    `multi_device`: is more than one logical device configured? `tracer`: the `tf.function`
    trace running in THIS thread (None outside one; set by the function layer), so that other
    threads keep executing eagerly. `general`: more than one device, or a trace running in
    some thread, i.e. the op wrappers must leave their fast path (and the slow path asks
    `tracer`). `autocast`: the floating dtype the variables made for autocasting are read in,
    in THIS thread (a mixed-precision Keras layer's call; None otherwise); while one is set in
    some thread, `general` is set too, so that the slow path applies it.
    """

    multi_device = False
    general = False

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._tracing = 0  # threads now tracing
        self._autocasting = 0  # threads now in an autocast scope

    @property
    def tracer(self) -> Any:
        return getattr(self._local, "tracer", None)

    @tracer.setter
    def tracer(self, value: Any) -> None:
        before = self.tracer is not None
        self._local.tracer = value
        with self._lock:
            self._tracing += (value is not None) - before
            self.refresh()

    @property
    def autocast(self) -> Any:
        return getattr(self._local, "autocast", None)

    @autocast.setter
    def autocast(self, value: Any) -> None:
        before = self.autocast is not None
        self._local.autocast = value
        with self._lock:
            self._autocasting += (value is not None) - before
            self.refresh()

    def refresh(self) -> None:
        self.general = self.multi_device or self._tracing > 0 or self._autocasting > 0


flags = _Flags()
_registry = _Registry()
_scope = threading.local()


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The physical devices of this machine, optionally of one type (`"CPU"` or `"GPU"`).

    >>> list_physical_devices("CPU")
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    """
    out = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    out += [
        PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(_registry.detect_gpus())
    ]
    return _filter(out, device_type)


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The logical devices, after any split by `set_logical_device_configuration`."""
    built = _registry.build()
    out = [LogicalDevice(d.name, d.kind) for kind in ("CPU", "GPU") for d in built[kind]]
    return _filter(out, device_type)


def _filter(devices: list[Any], device_type: str | None) -> list[Any]:
    if device_type is None:
        return devices
    kind = device_type.upper()
    return [d for d in devices if d.device_type == kind]


def set_logical_device_configuration(
    device: PhysicalDevice, logical_devices: list[LogicalDeviceConfiguration] | None
) -> None:
    """Split a physical device into logical ones; only before the devices are first used."""
    if not isinstance(device, PhysicalDevice):
        raise TypeError(
            "set_logical_device_configuration expects a PhysicalDevice from "
            f"tf.config.list_physical_devices(), got {type(device).__name__}."
        )
    if _registry.devices is not None:
        raise RuntimeError(
            "Virtual devices cannot be modified after being initialized: configure logical "
            "devices before creating the first tensor."
        )
    index = int(device.name.rsplit(":", 1)[1])
    key = (device.device_type, index)
    if logical_devices is None:
        _registry.configs.pop(key, None)
        return
    configs = list(logical_devices)
    if not configs:
        raise ValueError(
            f"set_logical_device_configuration for {device.name} got an empty list; pass at "
            "least one LogicalDeviceConfiguration, or None to keep the device whole."
        )
    _registry.configs[key] = configs


def get_logical_device_configuration(
    device: PhysicalDevice,
) -> list[LogicalDeviceConfiguration] | None:
    index = int(device.name.rsplit(":", 1)[1])
    return _registry.configs.get((device.device_type, index))


def _reset_for_tests() -> None:
    """Forget the built device list and the logical configuration (tests only)."""
    _registry.devices = None
    flags.multi_device = False
    flags.refresh()
    _registry.configs.clear()
    _registry.warned.clear()
    _scope.__dict__.clear()


_SPEC = re.compile(
    r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?([A-Za-z_]+)(?::(\d+))?$"
)


def parse_device(spec: str | Device | None) -> Device | None:
    """Resolve a TF device string to a logical device, falling back to the CPU like TF's soft
    placement when the device does not exist. `None` and `""` mean "no preference"."""
    if spec is None or isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"A device must be a string such as '/GPU:0', got {type(spec).__name__}.")
    text = spec.strip()
    if not text:
        return None
    m = _SPEC.match(text)
    if m is None:
        raise ValueError(
            f"Cannot parse device {spec!r}: expected a TF device string such as '/CPU:0', "
            "'/device:GPU:1', 'gpu:0' or '/job:localhost/replica:0/task:0/device:CPU:0'."
        )
    kind, index = m.group(1).upper(), int(m.group(2) or 0)
    if kind in ("XLA_GPU", "CUDA"):
        kind = "GPU"
    if kind not in ("CPU", "GPU"):
        raise ValueError(f"Unknown device type {m.group(1)!r} in {spec!r}: expected CPU or GPU.")
    devices = _registry.build()[kind]
    if index < len(devices):
        return devices[index]
    if spec not in _registry.warned:
        _registry.warned.add(spec)
        _log.debug("Device %s does not exist; placing on %s (soft placement).", spec, cpu_device())
    return _registry.build()["CPU"][0]


def cpu_device() -> Device:
    return _registry.build()["CPU"][0]


def default_device() -> Device:
    """Where ops run with no device scope: the first GPU when there is one, else the CPU."""
    built = _registry.build()
    return built["GPU"][0] if built["GPU"] else built["CPU"][0]


def current_device() -> Device:
    stack = getattr(_scope, "stack", None)
    if stack:
        return stack[-1]
    return default_device()


def scoped_device() -> Device | None:
    """The device of the innermost `tf.device` scope, or None outside any scope."""
    stack = getattr(_scope, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def device_scope(spec: str | Device | None) -> Iterator[Device | None]:
    device = parse_device(spec)
    stack = getattr(_scope, "stack", None)
    if stack is None:
        stack = _scope.stack = []
    stack.append(device if device is not None else (stack[-1] if stack else default_device()))
    try:
        yield device
    finally:
        stack.pop()


class DeviceContext:
    """What `tf.device(name)` returns: a reusable, nestable context manager."""

    def __init__(self, spec: str | None) -> None:
        self.spec = spec
        self._device = parse_device(spec)
        self._saved: list[Any] = []

    def __enter__(self) -> Device | None:
        cm = device_scope(self._device)
        self._saved.append(cm)
        return cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._saved.pop().__exit__(*exc)

    def __repr__(self) -> str:
        target = self._device.name if self._device else None
        return f"<layerflow device context {self.spec!r} -> {target}>"


def to_device(array: Any, device: Device) -> Any:
    """The array on `device` (the same object when it is already there)."""
    if device.kind == "CPU":
        return to_host(array)
    cupy = device.xp
    with cupy.cuda.Device(device.physical_index):
        if isinstance(array, cupy.ndarray) and array.device.id == device.physical_index:
            return array
        return cupy.asarray(array)


def to_host(array: Any) -> np.ndarray:
    """A NumPy array with the same values (no copy when it already is one)."""
    if isinstance(array, np.ndarray):
        return array
    get = getattr(array, "get", None)
    if get is not None:
        return get()
    return np.asarray(array)


def special_functions(xp: Any) -> ModuleType:
    """SciPy's special functions for arrays of module `xp` (`cupyx.scipy.special` for CuPy).

    SciPy is an optional dependency (the `special` extra): imported on first use, so that
    `import layerflow` stays fast, with an ImportError that says how to install it.
    """
    name = "scipy.special" if xp is np else "cupyx.scipy.special"
    try:
        if xp is np:
            import scipy.special as special
        else:
            import cupyx.scipy.special as special
        return special
    except ImportError as err:
        raise ImportError(
            f"This op needs {name} (special functions), which is not installed. Install it with "
            "`pip install scipy` (or `pip install layerflow[special]`)."
        ) from err


def sparse_matrices(xp: Any) -> ModuleType:
    """SciPy's sparse matrices for arrays of module `xp` (`cupyx.scipy.sparse` for CuPy);
    optional like `special_functions` (imported on first use)."""
    name = "scipy.sparse" if xp is np else "cupyx.scipy.sparse"
    try:
        if xp is np:
            import scipy.sparse as sparse
        else:
            import cupyx.scipy.sparse as sparse
        return sparse
    except ImportError as err:
        raise ImportError(
            f"This op needs {name} (sparse matrices), which is not installed. Install it with "
            "`pip install scipy` (or `pip install layerflow[special]`)."
        ) from err


def array_device(array: Any) -> Device:
    """The logical device an array lives on (the first logical device of its physical one)."""
    if isinstance(array, np.ndarray | np.generic):
        return cpu_device()
    physical = array.device.id
    for d in _registry.build()["GPU"]:
        if d.physical_index == physical:
            return d
    return cpu_device()


_memory_growth: dict[str, bool] = {}


def set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    """Recorded for API compatibility; CuPy's pool already grows on demand."""
    _memory_growth[device.name] = bool(enable)


def get_memory_growth(device: PhysicalDevice) -> bool:
    return _memory_growth.get(device.name, False)


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    return list_physical_devices(device_type)


def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    """Accepted for API compatibility: every physical device stays visible."""
    if _registry.devices is not None:
        raise RuntimeError("Visible devices cannot be modified after being initialized.")


def set_soft_device_placement(enabled: bool) -> None:
    """Soft placement is always on: a missing device falls back to the CPU."""
