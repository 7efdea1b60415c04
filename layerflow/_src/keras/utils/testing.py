"""`run_layer_test`: the checks every built-in layer goes through (STYLE.md), and a gradient check.

The harness builds the layer the way users do and checks the Keras layer contract: no weights
before the first call, build on the first call, output shape equal to `compute_output_shape`,
`get_config` round-tripping through `from_config`, gradients with respect to the input and to every
trainable weight equal to float64 central differences (`autodiff.gradcheck.numeric_gradient`,
the package's one finite-difference loop), and the engine's InputSpec error for an
input of the wrong size. A failed check raises AssertionError: this module is test tooling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerflow._src.autodiff.gradcheck import numeric_gradient
from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import serialization
from layerflow._src.ops import array_ops, math_ops
from layerflow._src.utils import nest


def _np(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if isinstance(x, TensorLike) else x)


def _pick(size: int, limit: int, rng: np.random.Generator) -> list[int]:
    if size <= limit:
        return list(range(size))
    return sorted(rng.choice(size, limit, replace=False).tolist())


def _compare(name: str, analytic: Any, numeric: np.ndarray, coords: list[int], rtol: float,
             atol: float) -> None:  # fmt: skip
    if analytic is None:
        if np.allclose(numeric.reshape(-1)[coords], 0.0, atol=atol):
            return
        raise AssertionError(f"gradient w.r.t. {name} is None but finite differences are not 0")
    a = _np(analytic).reshape(-1)[coords]
    n = numeric.reshape(-1)[coords]
    if not np.allclose(a, n, rtol=rtol, atol=atol):
        worst = int(np.argmax(np.abs(a - n)))
        raise AssertionError(
            f"gradient w.r.t. {name} differs from finite differences: max |diff| "
            f"{np.abs(a - n).max():.3g} at flat index {coords[worst]} "
            f"(analytic {a[worst]:.6g}, numeric {n[worst]:.6g})"
        )


def check_gradients(fn: Callable[..., Any], inputs: Sequence[Any], variables: Sequence[Any] = (),
                    seed: int = 0, max_coords: int = 24, rtol: float = 1e-4,
                    atol: float = 1e-6) -> None:  # fmt: skip
    """Check d sum(fn(*inputs) * r) / d(inputs, variables) against float64 central differences.

    `inputs` are float64 arrays or tensors; `variables` are float64 `tf.Variable`s that `fn` reads.

    >>> import layerflow as tf, numpy as np
    >>> check_gradients(lambda x: tf.tanh(x), [np.array([0.3, -1.2])])
    """
    rng = np.random.default_rng(seed)
    xs = [np.array(_np(x), dtype=np.float64) for x in inputs]
    out0 = _np(fn(*[array_ops.constant(x) for x in xs]))
    r = rng.standard_normal(out0.shape)

    def scalar() -> float:
        return float((_np(fn(*[array_ops.constant(x) for x in xs])) * r).sum())

    with GradientTape(persistent=True) as tape:
        ts = [array_ops.constant(x) for x in xs]
        for t in ts:
            tape.watch(t)
        y = fn(*ts)
        loss = math_ops.reduce_sum(y * array_ops.constant(r, dtype=y.dtype))
    grads = tape.gradient(loss, ts + list(variables))
    for i, x in enumerate(xs):
        coords = _pick(x.size, max_coords, rng)

        def f_x(arr: np.ndarray, i: int = i) -> float:
            xs[i][...] = arr
            return scalar()

        base = x.copy()
        num = numeric_gradient(f_x, base.copy(), coords=coords)
        xs[i][...] = base
        _compare(f"input {i}", grads[i], num, coords, rtol, atol)
    for j, v in enumerate(variables):
        original = _np(v).copy()
        coords = _pick(original.size, max_coords, rng)

        def f_v(arr: np.ndarray, v: Any = v) -> float:
            v.assign(arr)
            return scalar()

        num = numeric_gradient(f_v, original.copy(), coords=coords)
        v.assign(original)
        _compare(f"variable {getattr(v, 'name', j)}", grads[len(xs) + j], num, coords, rtol, atol)


def _shape_list(shape: Any) -> list:
    return list(TensorShape(shape).as_list())


def run_layer_test(layer_cls: type, kwargs: dict | None = None, input_shape: Any = (2, 3),
                   input_data: Any = None, input_dtype: str = "float32",
                   expected_output_shape: Any = None, expected_num_weights: int | None = None,
                   training: bool | None = None, check_gradients_: bool = True,
                   check_input_spec: bool = True, custom_objects: dict | None = None,
                   seed: int = 0) -> Any:  # fmt: skip
    """Run the layer contract checks on `layer_cls(**kwargs)`; return the built layer's output.

    `input_data` may be a list of arrays for a multi-input layer (merging layers).

    >>> import layerflow as tf
    >>> out = run_layer_test(tf.keras.layers.Dense, {"units": 3}, input_shape=(2, 4))
    >>> tuple(out.shape)
    (2, 3)
    """
    kwargs = dict(kwargs or {})
    rng = np.random.default_rng(seed)
    if input_data is None:
        data = rng.standard_normal(tuple(input_shape)).astype(input_dtype)
    else:
        data = input_data
    multi = isinstance(data, (list, tuple))
    arrays = [np.asarray(d) for d in data] if multi else [np.asarray(data)]

    def wrap(arrs: list[np.ndarray]) -> Any:
        ts = [array_ops.constant(a) for a in arrs]
        return ts if multi else ts[0]

    def call(layer: Any, arrs: list[np.ndarray]) -> Any:
        return layer(wrap(arrs)) if training is None else layer(wrap(arrs), training=training)

    # 1. No weights before build; build on the first call.
    layer = layer_cls(**kwargs)
    if layer.weights:
        raise AssertionError(f"{layer_cls.__name__} has weights before its first call")
    if getattr(layer, "built", False) and "input_shape" not in kwargs:
        raise AssertionError(f"{layer_cls.__name__} is built before its first call")
    out = call(layer, arrays)
    if not layer.built:
        raise AssertionError(f"{layer_cls.__name__} is not built after its first call")
    if expected_num_weights is not None and len(layer.weights) != expected_num_weights:
        raise AssertionError(
            f"{layer_cls.__name__}: expected {expected_num_weights} weights, got "
            f"{len(layer.weights)}: {[w.name for w in layer.weights]}"
        )

    # 2. Output shape equals compute_output_shape (and the expected one, if given).
    in_shapes = [TensorShape(a.shape) for a in arrays]
    predicted = layer.compute_output_shape(in_shapes if multi else in_shapes[0])
    if _shape_list(predicted) != list(out.shape):
        raise AssertionError(
            f"{layer_cls.__name__}: compute_output_shape gave {predicted}, call gave {out.shape}"
        )
    if expected_output_shape is not None:
        expected = [None if d is None else int(d) for d in expected_output_shape]
        got = list(out.shape)
        if len(expected) != len(got) or any(
            e is not None and e != g for e, g in zip(expected, got)
        ):
            raise AssertionError(
                f"{layer_cls.__name__}: expected output shape {expected}, got {got}"
            )

    # 3. get_config round-trips through from_config, and the copy computes the same function.
    config = layer.get_config()
    with serialization.custom_object_scope(custom_objects):
        clone = layer_cls.from_config(config)
    if clone.get_config() != config:
        raise AssertionError(
            f"{layer_cls.__name__}: get_config does not round-trip:\n{config}\n!=\n"
            f"{clone.get_config()}"
        )
    if training is not True:
        call(clone, arrays)
        clone.set_weights(layer.get_weights())
        again = call(clone, arrays)
        ref = call(layer, arrays)
        if not np.allclose(_np(again), _np(ref), rtol=1e-5, atol=1e-6):
            raise AssertionError(
                f"{layer_cls.__name__}: a from_config copy with the same weights computes "
                "different outputs"
            )

    # 4. Gradients w.r.t. inputs and trainable weights match float64 finite differences.
    if check_gradients_:
        g_layer = layer_cls(**{**kwargs, "dtype": "float64"})
        floats = [np.issubdtype(a.dtype, np.floating) for a in arrays]
        arr64 = [a.astype(np.float64) if fl else a for a, fl in zip(arrays, floats)]
        call(g_layer, arr64)
        if training is None:
            g_layer.set_weights([w.astype(np.float64) for w in layer.get_weights()])
        float_idx = [i for i, fl in enumerate(floats) if fl]

        def fn(*float_inputs: Any) -> Any:
            full: list[Any] = list(arr64)
            for i, t in zip(float_idx, float_inputs):
                full[i] = t
            full = [t if isinstance(t, TensorLike) else array_ops.constant(t) for t in full]
            x = full if multi else full[0]
            return g_layer(x) if training is None else g_layer(x, training=training)

        check_gradients(fn, [arr64[i] for i in float_idx], g_layer.trainable_weights, seed=seed)

    # 5. A wrong input size gives the engine's InputSpec error, naming the layer.
    specs = [s for s in nest.flatten(layer.input_spec) if s is not None]
    if check_input_spec and not multi and any(getattr(s, "axes", None) for s in specs):
        bad = np.concatenate([arrays[0], arrays[0][..., :1]], axis=-1)
        try:
            call(layer, [bad])
        except ValueError as err:
            if layer.name not in str(err):
                raise AssertionError(
                    f"{layer_cls.__name__}: the wrong-size error does not name the layer: {err}"
                ) from None
        else:
            raise AssertionError(
                f"{layer_cls.__name__}: input of shape {bad.shape} (built for {arrays[0].shape}) "
                "was accepted"
            )
    return out
