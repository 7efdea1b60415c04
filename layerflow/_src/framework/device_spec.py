"""`tf.DeviceSpec`: a parsed, immutable device name (`/job:w/replica:0/task:1/device:GPU:0`)."""

from __future__ import annotations

from typing import Any

_FIELDS = ("job", "replica", "task", "device_type", "device_index")


class DeviceSpec:
    """The parts of a TF device string; any may be None (unspecified).

    >>> spec = DeviceSpec.from_string("/job:w/replica:0/task:1/device:gpu:2")
    >>> spec.device_type, spec.device_index, spec.to_string()
    ('GPU', 2, '/job:w/replica:0/task:1/device:GPU:2')
    >>> spec.replace(device_index=3).to_string()
    '/job:w/replica:0/task:1/device:GPU:3'
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index")

    def __init__(self, job: str | None = None, replica: Any = None, task: Any = None,
                 device_type: str | None = None, device_index: Any = None) -> None:  # fmt: skip
        self._job = None if job is None else str(job)
        self._replica = None if replica is None else int(replica)
        self._task = None if task is None else int(task)
        upper = None if device_type is None else str(device_type).upper()
        # TF keeps the case of types other than CPU and GPU
        self._device_type = upper if upper in ("CPU", "GPU") else device_type
        self._device_index = None if device_index is None else int(device_index)

    job = property(lambda self: self._job)
    replica = property(lambda self: self._replica)
    task = property(lambda self: self._task)
    device_type = property(lambda self: self._device_type)
    device_index = property(lambda self: self._device_index)

    @classmethod
    def from_string(cls, spec: str) -> DeviceSpec:
        return cls(**_parse(spec))

    def parse_from_string(self, spec: str) -> DeviceSpec:
        """A new spec: this one's fields overridden by those named in `spec`."""
        return self.replace(**_parse(spec))

    def make_merged_spec(self, dev: DeviceSpec) -> DeviceSpec:
        """A new spec: this one's fields overridden by the ones `dev` specifies."""
        return self.replace(**{k: v for k, v in dev._as_dict().items() if v is not None})

    def replace(self, **kwargs: Any) -> DeviceSpec:
        unknown = set(kwargs) - set(_FIELDS)
        if unknown:
            raise TypeError(f"DeviceSpec.replace: unknown fields {sorted(unknown)}.")
        return DeviceSpec(**{**self._as_dict(), **kwargs})

    def _as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _FIELDS}

    def to_string(self) -> str:
        out = ""
        if self._job is not None:
            out += f"/job:{self._job}"
        if self._replica is not None:
            out += f"/replica:{self._replica}"
        if self._task is not None:
            out += f"/task:{self._task}"
        if self._device_type is not None:
            index = "*" if self._device_index is None else self._device_index
            out += f"/device:{self._device_type}:{index}"
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={getattr(self, k)}" for k in _FIELDS)
        return f"<DeviceSpec({parts})>"


def _parse(spec: str) -> dict[str, Any]:
    if not isinstance(spec, str):
        raise TypeError(f"A device spec must be a string, got {type(spec).__name__}.")
    out: dict[str, Any] = {}
    for part in (p for p in spec.split("/") if p):
        fields = part.split(":")
        key = fields[0].lower()
        if len(fields) == 2 and key in ("job", "replica", "task"):
            out[key] = fields[1] if key == "job" else int(fields[1])
        elif key == "device" and len(fields) in (2, 3):
            out["device_type"] = fields[1]
            if len(fields) == 3 and fields[2] != "*":
                out["device_index"] = int(fields[2])
        elif len(fields) == 2 and key in ("cpu", "gpu", "tpu"):
            out["device_type"] = fields[0]
            if fields[1] != "*":
                out["device_index"] = int(fields[1])
        else:
            raise ValueError(
                f"Unknown attribute '{fields[0]}' is encountered while parsing the device spec: "
                f"'{spec}'."
            )
    return out
