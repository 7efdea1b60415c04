"""The functional API: `tf.keras.Model(inputs, outputs)` over a graph of recorded layer calls.

Calling a layer on KerasTensors (`tf.keras.Input`) records a `Node`. A functional model keeps
the nodes between its inputs and outputs in dependency order and, when called on real data,
calls each node's layer again, eagerly, on the real tensors.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff import dispatch, specs
from layerflow._src.framework import convert
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_layer import Input, InputLayer
from layerflow._src.keras.engine.keras_tensor import KerasTensor, Node, from_spec
from layerflow._src.keras.serialization import NotSerializableError
from layerflow._src.ops import math_ops
from layerflow._src.utils import naming, nest

__all__ = ["Input", "InputLayer", "TFOpLambda", "init_graph", "run_graph"]


def _check_symbolic(model: Any, what: str, structure: Any) -> list[KerasTensor]:
    flat = nest.flatten(structure)
    for i, t in enumerate(flat):
        if not isinstance(t, KerasTensor):
            raise TypeError(
                f"Model '{model.name}': {what} must be symbolic tensors from tf.keras.Input and "
                f"layer calls on them, but {what}[{i}] is {type(t).__name__}. For a model with "
                "custom logic, subclass tf.keras.Model and define call()."
            )
    return flat


def init_graph(model: Any, inputs: Any, outputs: Any) -> None:
    """Find the nodes between `inputs` and `outputs` and store them, in order, on `model`."""
    flat_in = _check_symbolic(model, "inputs", inputs)
    flat_out = _check_symbolic(model, "outputs", outputs)
    boundary = {id(t) for t in flat_in}
    order: list[Node] = []
    done: set[int] = set()
    # Iterative post-order walk from the outputs back to the inputs.
    stack: list[tuple[KerasTensor, bool]] = [(t, False) for t in reversed(flat_out)]
    while stack:
        tensor, expanded = stack.pop()
        if id(tensor) in boundary:
            continue
        node = tensor.node
        if node is None or node.inputs is None:
            name = tensor.name or repr(tensor)
            raise ValueError(
                f"Graph disconnected: model '{model.name}' cannot reach the value of tensor "
                f"{name!r} from its inputs {[t.name for t in flat_in]}. Add the tf.keras.Input "
                "it comes from to the model's inputs."
            )
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((tensor, True))
        for parent in reversed(node.input_tensors):
            stack.append((parent, False))
    d = model.__dict__
    d["_graph_inputs"] = inputs
    d["_graph_outputs"] = outputs
    d["_graph_nodes"] = order
    d["_is_graph_network"] = True
    # The layers inside compute the output masks as the model runs (tf_keras's Functional).
    d["_supports_masking"] = True
    d["_compute_output_and_mask_jointly"] = True
    d["_build_input_shape"] = nest.map_structure(lambda t: t.shape, inputs)
    d["_output_shape_record"] = nest.map_structure(lambda t: t.shape, outputs)
    d["built"] = True


def graph_layers(model: Any) -> list[Any]:
    """The model's layers in tf_keras's order (`functional._map_graph_network`): by depth (the
    longest path to an output) from the inputs' end, ties by first visit of a depth-first walk
    from the outputs. Keras 2 HDF5 weights files are read layer by layer in this order, so it
    must match for files such as the pretrained `tf.keras.applications` weights to load."""
    flat_in = nest.flatten(model._graph_inputs)
    boundary = {id(t) for t in flat_in}
    index: dict[int, int] = {}  # id(layer) -> first visit
    layers: dict[int, Any] = {}
    post: list[tuple[Any, list[Any]]] = []  # (node key, parent keys), inputs before users
    keys: dict[int, Any] = {}
    done: set[Any] = set()

    def key_of(t: KerasTensor) -> Any:
        return ("input", id(t)) if id(t) in boundary else id(t.node)

    def visit(layer: Any) -> None:
        if layer is not None and id(layer) not in index:
            index[id(layer)] = len(index)
            layers[id(layer)] = layer

    stack: list[tuple[KerasTensor, bool]] = [
        (t, False) for t in reversed(nest.flatten(model._graph_outputs))
    ]
    while stack:
        tensor, expanded = stack.pop()
        key = key_of(tensor)
        if key in done:
            continue
        if id(tensor) in boundary:
            layer = tensor._keras_history[0] if tensor._keras_history else None
            visit(layer)
            done.add(key)
            keys[key] = layer
            post.append((key, []))
            continue
        node = tensor.node
        if expanded:
            done.add(key)
            keys[key] = node.layer
            post.append((key, [key_of(p) for p in node.input_tensors]))
            continue
        visit(node.layer)
        stack.append((tensor, True))
        for parent in reversed(node.input_tensors):
            stack.append((parent, False))
    node_depth: dict[Any, int] = {}
    layer_depth: dict[int, int] = {}
    for key, parents in reversed(post):
        layer = keys[key]
        depth = node_depth.setdefault(key, 0)
        if layer is not None:
            depth = max(depth, layer_depth.get(id(layer), 0))
            layer_depth[id(layer)] = depth
        node_depth[key] = depth
        for parent in parents:
            node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
    for t in flat_in:  # inputs no output depends on come last, as in tf_keras
        layer = t._keras_history[0] if t._keras_history else None
        if layer is not None and id(layer) not in layer_depth:
            layers[id(layer)] = layer
            layer_depth[id(layer)] = 0
            index[id(layer)] = -1
    ordered = sorted(layer_depth, key=lambda lid: (-layer_depth[lid], index[lid]))
    return [layers[lid] for lid in ordered]


def _bind_inputs(model: Any, inputs: Any) -> list[Any]:
    expected = model._graph_inputs
    flat_kt = nest.flatten(expected)
    if isinstance(inputs, dict) and not isinstance(expected, dict):
        names = [t.name for t in flat_kt]
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(
                f"Model '{model.name}' got a dict of inputs without the key(s) {missing}; its "
                f"inputs are named {names}."
            )
        flat = [inputs[n] for n in names]
    elif len(flat_kt) == 1 and not isinstance(inputs, list | tuple | dict):
        flat = [inputs]
    else:
        flat = nest.flatten(inputs)
    if len(flat) != len(flat_kt):
        raise ValueError(
            f"Model '{model.name}' expects {len(flat_kt)} input(s) with shapes "
            f"{[tuple(t.shape) for t in flat_kt]}, but it received {len(flat)}."
        )
    values = []
    for i, (kt, value) in enumerate(zip(flat_kt, flat)):
        if not isinstance(value, TensorLike):
            value = model._convert_one(value)
        if not TensorShape(kt.shape).is_compatible_with(value.shape):
            raise ValueError(
                f"Input {i} of model '{model.name}' expects shape {kt.shape}, got shape "
                f"{value.shape}."
            )
        if value.dtype != kt.dtype:
            value = math_ops.cast(value, kt.dtype)
        values.append(value)
    return values


def run_graph(model: Any, inputs: Any, training: Any = None, mask: Any = None) -> Any:
    """Call every node's layer on real tensors, in order; return the outputs' structure.

    `mask` (the model's input masks, or None) goes onto the bound inputs, so the layers find
    it there as on any tensor that carries a mask (engine/masking.py).
    """
    values: dict[int, Any] = {}
    flat_in = nest.flatten(model._graph_inputs)
    bound = _bind_inputs(model, inputs)
    masks = [None] * len(bound) if mask is None else nest.flatten(mask)
    for i, (kt, value) in enumerate(zip(flat_in, bound)):
        m = masks[i] if i < len(masks) else None
        if m is not None and isinstance(value, Tensor):
            value._keras_mask = m
        values[id(kt)] = value

    def real(x: Any) -> Any:
        return values[id(x)] if isinstance(x, KerasTensor) else x

    for node in model._graph_nodes:
        args = tuple(nest.map_structure(real, a) for a in node.args)
        kwargs = {k: nest.map_structure(real, v) for k, v in node.kwargs.items()}
        if training is not None and "training" in kwargs and kwargs["training"] is None:
            kwargs["training"] = training
        out = node.layer(nest.map_structure(real, node.inputs), *args, **kwargs)
        flat_kt = nest.flatten(node.outputs)
        flat_out = nest.flatten(out)
        if len(flat_out) != len(flat_kt):
            raise ValueError(
                f"Layer '{node.layer.name}' returned {len(flat_out)} output(s) when the model "
                f"is called, but {len(flat_kt)} when the model was built."
            )
        for kt, v in zip(flat_kt, flat_out):
            values[id(kt)] = v
    return nest.map_structure(real, model._graph_outputs)


class TFOpLambda(Layer):
    """A TF op or Python operator applied to symbolic tensors, as a layer (Keras 2's).

    `x + y`, `2 * x`, `x[:, 0]`, and any op (`tf.nn.relu(x)`, `tf.concat([a, b], -1)`,
    `tf.reduce_sum(x, 1)`) called on a KerasTensor return a KerasTensor whose node replays the
    same call eagerly when the model runs.

    >>> import layerflow as tf
    >>> x = tf.keras.Input(shape=(3,))
    >>> model = tf.keras.Model(x, tf.nn.relu(x * 2 - 1))
    >>> model(tf.ones((1, 3))).numpy().tolist()
    [[1.0, 1.0, 1.0]]
    >>> [layer.name for layer in model.layers[1:]]
    ['tf.math.multiply', 'tf.math.subtract', 'tf.nn.relu']
    """

    # The op's own keyword arguments travel in **kwargs; `training` is not one of them (as in
    # Keras 2's TFOpLambda).
    _kwargs_take_training = False

    def __init__(self, fn: Callable[..., Any], symbol: str, **kwargs: Any) -> None:
        # Named as tf_keras names them: "tf.math.multiply" for `*`, "tf.__operators__.add"
        kwargs.setdefault(
            "name",
            naming.unique_name("tf." + _TF_OPERATOR_NAMES.get(symbol, f"__operators__.{symbol}")),
        )
        super().__init__(autocast=False, **kwargs)
        self.fn = fn
        self.symbol = symbol

    def _convert_inputs(self, inputs: Any) -> Any:
        return inputs  # Python numbers stay Python numbers: they take their partner's dtype

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*inputs, *args, **kwargs)

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        # Computed from the op's output-spec rule (or traced through the public function's
        # primitives), never by running on placeholder data.
        return from_spec(dispatch.output_spec(self.fn, (*inputs, *args), kwargs))

    @property
    def function_name(self) -> str:
        """The op as tf_keras's config names it: "nn.relu", "__operators__.add"."""
        if self.symbol.startswith("tf."):
            return self.symbol[3:]
        return _TF_OPERATOR_NAMES.get(self.symbol, f"__operators__.{self.symbol}")

    def get_config(self) -> dict[str, Any]:
        name = self.function_name
        if tf_op_by_name(name, strict=False) is None:
            raise NotSerializableError(
                f"TFOpLambda '{self.name}' ({self.symbol}) cannot be serialized: its op is not "
                "one a config may name. Save the weights with model.save_weights(...) and "
                "rebuild the model in code, or wrap the computation in a registered custom "
                "layer."
            )
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype,
                "function": name}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TFOpLambda:
        config = dict(config)
        name = config.pop("function", None)
        if not isinstance(name, str):
            raise TypeError(f"A TFOpLambda config needs the op's name as 'function', got {name!r}.")
        fn = tf_op_by_name(name)
        config.pop("autocast", None)
        prefix = "__operators__."
        symbol = name[len(prefix) :] if name.startswith(prefix) else "tf." + name
        return cls(fn, symbol, **config)


# Namespaces whose ops a model config may name for a TFOpLambda (tf_keras resolves any TF
# symbol; a file here may only name math, not I/O, configuration or debugging functions).
_OP_NAMESPACES = frozenset({"", "math", "nn", "linalg", "image", "random", "bitwise", "signal"})
_DENIED_OPS = frozenset({"print", "py_function", "numpy_function", "function", "load_op_library",
                         "load_library", "Module", "Variable", "group", "no_op", "init_scope",
                         "custom_gradient", "recompute_grad", "GradientTape", "device",
                         "name_scope", "control_dependencies"})  # fmt: skip


def tf_op_by_name(name: str, strict: bool = True) -> Callable[..., Any] | None:
    """The op a TFOpLambda config names ("nn.relu", "__operators__.add"), from layerflow's
    public ops only; None (or, when `strict`, ValueError) for anything else."""
    fn = None
    if name.startswith("__operators__."):
        fn = _OPERATORS.get(name[len("__operators__.") :])
    else:
        namespace, _, short = name.rpartition(".")
        if namespace in _OP_NAMESPACES and short not in _DENIED_OPS and not short.startswith("_"):
            fn = dispatch.function_named("tf." + name)
    if fn is None and strict:
        raise ValueError(
            f"TFOpLambda: the config names the op {name[:100]!r}, which is not a layerflow math, "
            "nn or array op that a model config may name. Only those resolve; nothing else in a "
            "config is imported or run."
        )
    return fn


def _op_on_symbolic(op: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """An op or public function called with a KerasTensor among its arguments.

    While a spec is being traced (`specs.tracing()`), the result is the op's output spec as
    fresh KerasTensors and nothing is recorded; otherwise the call becomes a TFOpLambda node
    named after the op's public name (`dispatch.name_of`), which replays the same call.
    """
    if specs.is_tracing():
        return from_spec(dispatch.output_spec(op, args, kwargs))
    public = dispatch.name_of(op)
    layer = TFOpLambda(op, public, name=naming.unique_name(public))
    return layer(list(args), **kwargs)


convert.symbolic_registry.register(KerasTensor, _op_on_symbolic)


def _operator(fn: Callable[..., Any], symbol: str, arity: int = 2) -> Callable[..., Any]:
    """A Python operator with tf.__operators__'s parameter names, so a config names them."""
    if arity == 1:

        def unary(x: Any, name: Any = None) -> Any:
            return fn(x)

        unary.__name__ = symbol
        return unary

    def binary(x: Any, y: Any, name: Any = None) -> Any:
        return fn(x, y)

    binary.__name__ = symbol
    return binary


_OPERATORS: dict[str, Callable[..., Any]] = {
    name: _operator(fn, name)
    for name, fn in {
        "add": operator.add,
        "sub": operator.sub,
        "mul": operator.mul,
        "truediv": operator.truediv,
        "pow": operator.pow,
        "matmul": operator.matmul,
        "lt": operator.lt,
        "le": operator.le,
        "gt": operator.gt,
        "ge": operator.ge,
        "getitem": operator.getitem,
    }.items()  # fmt: skip
}
_OPERATORS["neg"] = _operator(operator.neg, "neg", arity=1)


def _matmul(a: Any, b: Any, name: Any = None) -> Any:
    return operator.matmul(a, b)


_OPERATORS["matmul"] = _matmul
# The TF function each Python operator on a tensor calls (tf_keras names its TFOpLambda so).
_TF_OPERATOR_NAMES = {"sub": "math.subtract", "mul": "math.multiply", "truediv": "math.truediv",
                      "pow": "math.pow", "matmul": "linalg.matmul", "neg": "math.negative",
                      "lt": "math.less", "le": "math.less_equal", "gt": "math.greater",
                      "ge": "math.greater_equal"}  # fmt: skip


def _binary(fn: Callable[..., Any], symbol: str, reflected: bool = False) -> Callable[..., Any]:
    def method(self: KerasTensor, other: Any) -> Any:
        pair = [other, self] if reflected else [self, other]
        if specs.is_tracing():
            return _traced(fn, getattr(Tensor, f"__{symbol}__"), pair)
        return TFOpLambda(_OPERATORS[symbol], symbol)(pair)

    return method


def _traced(fn: Callable[..., Any], tensor_method: Any, args: list[Any]) -> Any:
    """An operator inside a traced call: its op's rule, or (a Python-level operator such as
    `truediv`) the two-size run of the operator itself."""
    if hasattr(tensor_method, "prim"):
        return tensor_method(*args)
    return from_spec(specs.run_twice(fn, tuple(args), {}))


def _neg(self: KerasTensor) -> Any:
    if specs.is_tracing():
        return _traced(operator.neg, Tensor.__neg__, [self])
    return TFOpLambda(_OPERATORS["neg"], "neg")([self])


def _getitem(self: KerasTensor, key: Any) -> Any:
    if specs.is_tracing():
        return Tensor.__getitem__(self, key)
    return TFOpLambda(_OPERATORS["getitem"], "getitem")([self], key)


for _name, _fn in {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
                   "truediv": operator.truediv, "pow": operator.pow,
                   "matmul": operator.matmul}.items():  # fmt: skip
    setattr(KerasTensor, f"__{_name}__", _binary(_fn, _name))
    setattr(KerasTensor, f"__r{_name}__", _binary(_fn, _name, reflected=True))
for _name, _fn in {"lt": operator.lt, "le": operator.le, "gt": operator.gt,
                   "ge": operator.ge}.items():  # fmt: skip
    setattr(KerasTensor, f"__{_name}__", _binary(_fn, _name))
KerasTensor.__neg__ = _neg
KerasTensor.__getitem__ = _getitem
