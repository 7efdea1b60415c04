"""`tf.keras.layers.InputSpec`: what a layer accepts, checked on every call once it is built."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.utils import nest


class InputSpec:
    """The rank, dtype and fixed axes a layer's input must have (Keras's class).

    >>> spec = InputSpec(min_ndim=2, axes={-1: 5})
    >>> spec.axes
    {-1: 5}
    """

    def __init__(
        self,
        dtype: Any = None,
        shape: Any = None,
        ndim: int | None = None,
        max_ndim: int | None = None,
        min_ndim: int | None = None,
        axes: dict[int, int | None] | None = None,
        allow_last_axis_squeeze: bool = False,
        name: str | None = None,
    ) -> None:
        self.dtype = None if dtype is None else str(getattr(dtype, "name", dtype))
        self.shape = None if shape is None else TensorShape(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            top = (self.ndim or self.max_ndim) - 1
            if max(self.axes) > top:
                raise ValueError(
                    f"InputSpec: axis {max(self.axes)} is out of range for ndim {top + 1}."
                )

    def __repr__(self) -> str:
        parts = [
            f"{k}={getattr(self, k)!r}"
            for k in ("dtype", "shape", "ndim", "max_ndim", "min_ndim", "axes")
            if getattr(self, k)
        ]
        return f"InputSpec({', '.join(parts)})"

    def fits(self, shape: tuple[int, ...]) -> bool:
        """A quick yes for a concrete shape; False means "run the full, explaining check"."""
        if self.shape is not None or self.dtype is not None or self.allow_last_axis_squeeze:
            return False
        rank = len(shape)
        if self.ndim is not None and rank != self.ndim:
            return False
        if self.min_ndim is not None and rank < self.min_ndim:
            return False
        if self.max_ndim is not None and rank > self.max_ndim:
            return False
        for axis, value in self.axes.items():
            if value is not None and -rank <= axis < rank and shape[axis] != value:
                return False
        return True

    def get_config(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "shape": None if self.shape is None else tuple(self.shape),
            "ndim": self.ndim,
            "max_ndim": self.max_ndim,
            "min_ndim": self.min_ndim,
            "axes": self.axes,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> InputSpec:
        return cls(**config)


def _who(layer: Any) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


def assert_input_compatibility(input_spec: Any, inputs: Any, layer: Any) -> None:
    """Raise ValueError naming the layer, what it expects and what came, if `inputs` do not fit."""
    if not input_spec:
        return
    specs = nest.flatten(input_spec)
    flat = nest.flatten(inputs)
    if len(specs) != len(flat):
        if len(specs) == 1 and len(flat) > 1:
            raise ValueError(
                f"{_who(layer)} expects 1 input, but it received {len(flat)} input tensors. "
                "Pass a single tensor."
            )
        raise ValueError(
            f"{_who(layer)} expects {len(specs)} inputs, but it received {len(flat)} input tensors."
        )
    for i, (spec, x) in enumerate(zip(specs, flat)):
        if spec is None:
            continue
        shape = getattr(x, "shape", None)
        if shape is None:
            continue
        shape = TensorShape(shape)
        which = f"input {i} of " if len(specs) > 1 else ""
        rank = shape.rank
        if rank is None:
            continue
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and rank != spec.ndim:
            raise ValueError(
                f"{_who(layer)} expects {which}inputs of rank {spec.ndim}, got shape {shape} "
                f"(rank {rank})."
            )
        if spec.max_ndim is not None and rank > spec.max_ndim:
            raise ValueError(
                f"{_who(layer)} expects {which}inputs of rank at most {spec.max_ndim}, got shape "
                f"{shape} (rank {rank})."
            )
        if spec.min_ndim is not None and rank < spec.min_ndim:
            raise ValueError(
                f"{_who(layer)} expects {which}inputs of rank at least {spec.min_ndim}, got shape "
                f"{shape} (rank {rank})."
            )
        if spec.dtype is not None:
            got = getattr(getattr(x, "dtype", None), "name", None)
            if got is not None and got != spec.dtype:
                raise ValueError(
                    f"{_who(layer)} expects {which}inputs of dtype {spec.dtype}, got {got}. "
                    f"Cast them first: tf.cast(x, '{spec.dtype}')."
                )
        for axis, value in spec.axes.items():
            if value is None:
                continue
            if axis >= rank or axis < -rank:
                continue
            got = shape[axis]
            if got is not None and got != value:
                where = "last dimension" if axis == -1 else f"dimension {axis}"
                built = getattr(layer, "_build_input_shape", None)
                hint = f" It was built for inputs of shape {built}." if built is not None else ""
                raise ValueError(
                    f"{_who(layer)} expects {which}inputs with {where} {value}, got shape "
                    f"{shape}.{hint} A built layer keeps its weights' shapes; use a new layer "
                    "for inputs of another size."
                )
        if spec.shape is not None:
            if not spec.shape.is_compatible_with(shape):
                raise ValueError(
                    f"{_who(layer)} expects {which}inputs of shape {spec.shape}, got shape {shape}."
                )
