"""EinsumDense: a dense layer whose contraction is an einsum equation (Keras 2's rules).

The kernel's and bias's shapes follow from the equation, the input shape and `output_shape`
exactly as `tf_keras`'s `_analyze_einsum_string` derives them, so weights move between the two
unchanged. The arithmetic is `tf.einsum` (one op with its gradient); the layer adds no gradient.
"""

from __future__ import annotations

import re
from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, constraints, initializers, regularizers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.layers.weight_options import set_weight_options
from layerflow._src.ops import linalg_ops

__all__ = ["EinsumDense"]


def _invalid(equation: str) -> ValueError:
    return ValueError(
        f"EinsumDense: invalid einsum equation {equation!r}. Equations must be in the form "
        "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]...."
    )


def analyze_einsum_string(equation: str, bias_axes: str | None, input_shape: Any,
                          output_shape: Any) -> tuple[list, list | None, list]:  # fmt: skip
    """(kernel shape, bias shape or None, full output shape) for `equation` (Keras's rule).

    >>> analyze_einsum_string("abc,cd->abd", "d", (None, 5, 4), (None, 3))
    ([4, 3], [3], [None, 5, 3])
    >>> analyze_einsum_string("...b,bc->...c", None, (2, 5, 4), 3)
    ([4, 3], None, [2, 5, 3])
    """
    dots = re.sub(r"\.\.\.", "0", equation.replace(" ", ""))
    input_shape = TensorShape(input_shape).as_list()
    for pattern, left in (
        ("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", False),
        ("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", True),
        ("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", False),
    ):
        match = re.match(pattern, dots)
        if match:
            return _analyze_split(match, bias_axes, input_shape, output_shape, left)
    raise _invalid(equation)


def _analyze_split(match: Any, bias_axes: str | None, input_shape: list, output_shape: Any,
                   left_elided: bool) -> tuple[list, list | None, list]:  # fmt: skip
    input_spec, weight_spec, output_spec = match.group(1), match.group(2), match.group(3)
    elided = len(input_shape) - len(input_spec)
    out = [output_shape] if isinstance(output_shape, int) else list(output_shape)
    out.insert(0, input_shape[0])
    if elided > 0 and left_elided:
        for i in range(1, elided):
            out.insert(1, input_shape[i])
    elif elided > 0:
        out.extend(input_shape[len(input_shape) - elided :])
    if left_elided:
        in_map = {d: i + elided - len(input_shape) for i, d in enumerate(input_spec)}
        out_map = {d: i + elided for i, d in enumerate(output_spec)}
    else:
        in_map = {d: i for i, d in enumerate(input_spec)}
        out_map = {d: i for i, d in enumerate(output_spec)}
    if len(out) != len(output_spec) + max(elided, 0):
        raise ValueError(
            f"EinsumDense: output_shape {output_shape!r} does not fit the output spec "
            f"{output_spec!r} of the equation for inputs of shape {tuple(input_shape)}; give one "
            "size for each output axis after the batch axis."
        )
    for d in input_spec:
        if d in out_map:
            want, got = out[out_map[d]], input_shape[in_map[d]]
            if want is not None and got is not None and want != got:
                raise ValueError(
                    f"EinsumDense: input shape {tuple(input_shape)} and output shape {out} "
                    f"disagree on dimension {d!r}: {got} vs {want}."
                )
    for d in output_spec:
        if d in in_map and out[out_map[d]] is None:
            out[out_map[d]] = input_shape[in_map[d]]  # a None output size is the input's
        if d not in input_spec and d not in weight_spec:
            raise ValueError(
                f"EinsumDense: dimension {d!r} of the output spec {output_spec!r} is in neither "
                f"the input spec {input_spec!r} nor the weight spec {weight_spec!r}."
            )
    kernel = []
    for d in weight_spec:
        if d in in_map:
            kernel.append(input_shape[in_map[d]])
        elif d in out_map:
            kernel.append(out[out_map[d]])
        else:
            raise ValueError(
                f"EinsumDense: weight dimension {d!r} is in neither the input spec "
                f"{input_spec!r} nor the output spec {output_spec!r}; the kernel must be fully "
                "specified."
            )
    if any(k is None for k in kernel):
        raise ValueError(
            f"EinsumDense: the kernel shape {kernel} has unknown sizes; inputs of shape "
            f"{tuple(input_shape)} must have the contracted axes known."
        )
    bias = None
    if bias_axes:
        for c in bias_axes:
            if c not in output_spec:
                raise ValueError(
                    f"EinsumDense: bias axis {c!r} is not part of the output spec {output_spec!r}."
                )
        sizes = {c: out[out_map[c]] for c in output_spec}
        first = min(output_spec.find(c) for c in bias_axes)
        bias = [sizes[c] if c in bias_axes else 1 for c in output_spec[first:]]
        if not left_elided:
            bias.extend([1] * max(elided, 0))
    return kernel, bias, out


class EinsumDense(Layer):
    """`activation(einsum(equation, inputs, kernel) + bias)` with shapes read off `equation`.

    >>> import layerflow as tf
    >>> layer = tf.keras.layers.EinsumDense("abc,cd->abd", output_shape=(None, 4), bias_axes="d")
    >>> layer(tf.ones((2, 3, 5))).shape, [tuple(w.shape) for w in layer.weights]
    (TensorShape([2, 3, 4]), [(5, 4), (4,)])
    """

    def __init__(self, equation: str, output_shape: Any, activation: Any = None,
                 bias_axes: str | None = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(equation, str) or "->" not in equation:
            raise _invalid(str(equation))
        self.equation = equation
        if isinstance(output_shape, int):
            self.partial_output_shape = [output_shape]
        else:
            self.partial_output_shape = list(output_shape)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        set_weight_options(
            self, "kernel", kernel_initializer, kernel_regularizer, kernel_constraint
        )
        set_weight_options(self, "bias", bias_initializer, bias_regularizer, bias_constraint)

    def build(self, input_shape: Any) -> None:
        kernel, bias, full = analyze_einsum_string(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape
        )
        self.full_output_shape = full
        self.kernel = self.add_weight(
            "kernel",
            shape=kernel,
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if bias is not None:
            self.bias = self.add_weight(
                "bias",
                shape=bias,
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )

    def call(self, inputs: Any) -> Any:
        out = linalg_ops.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            out = out + self.bias
        if self.activation is not activations.linear:
            out = self.activation(out)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        _, _, full = analyze_einsum_string(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape
        )
        return TensorShape(full)

    def get_config(self) -> dict[str, Any]:
        def ser(fn: Any, value: Any) -> Any:
            return None if value is None else fn(value)

        return {
            **super().get_config(),
            "output_shape": self.partial_output_shape,
            "equation": self.equation,
            "activation": activations.serialize(self.activation),
            "bias_axes": self.bias_axes,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": ser(regularizers.serialize, self.kernel_regularizer),
            "bias_regularizer": ser(regularizers.serialize, self.bias_regularizer),
            "activity_regularizer": ser(regularizers.serialize, self._activity_regularizer),
            "kernel_constraint": ser(constraints.serialize, self.kernel_constraint),
            "bias_constraint": ser(constraints.serialize, self.bias_constraint),
        }
