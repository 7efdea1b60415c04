"""`model_to_dot` and `plot_model`: a model's layer graph as Graphviz (pydot + graphviz: the
`plot` extra and the `dot` program), with Keras 2's node labels."""

from __future__ import annotations

import os
import sys
from typing import Any

from layerflow._src.keras.engine import functional
from layerflow._src.keras.engine.sequential import Sequential
from layerflow._src.keras.utils import io_utils

_PYDOT_MISSING = "You must install pydot (`pip install pydot`) for model_to_dot to work."
_GRAPHVIZ_MISSING = (
    "You must install pydot (`pip install pydot`) and install graphviz (see instructions at "
    "https://graphviz.gitlab.io/download/) for plot_model to work."
)


def _pydot() -> Any:
    try:
        import pydot
    except ImportError:
        return None
    return pydot


def check_graphviz() -> bool:
    """Whether pydot and Graphviz's `dot` program both work."""
    pydot = _pydot()
    if pydot is None:
        return False
    try:
        pydot.Dot.create(pydot.Dot())
        return True
    except Exception:  # noqa: BLE001 - pydot raises assorted errors when `dot` is missing
        return False


def _plain(shape: Any) -> Any:
    if hasattr(shape, "as_list"):
        return tuple(shape.as_list())
    if isinstance(shape, list):
        return [_plain(s) for s in shape]
    return shape


def _shape_text(shape: Any) -> str:
    return str(_plain(shape)).replace("{", r"\{").replace("}", r"\}")


def _shapes(layer: Any) -> tuple[str, str]:
    out: Any
    try:
        out = layer.output_shape
    except (AttributeError, ValueError, RuntimeError):
        out = layer.__dict__.get("_output_shape_record", "?")
    try:
        inp = layer.input_shape
    except (AttributeError, ValueError, RuntimeError):
        inp = layer.__dict__.get("_build_input_shape", "?")
    if isinstance(layer, functional.InputLayer):
        inp = out = [tuple(layer._batch_input_shape)]
    inp = "?" if inp is None else inp
    out = "?" if out is None else out
    return _shape_text(inp), _shape_text(out)


def _label(layer: Any, show_shapes: bool, show_dtype: bool, show_layer_names: bool,
           show_layer_activations: bool, show_trainable: bool) -> str:  # fmt: skip
    label = type(layer).__name__
    name = layer.name
    inner = getattr(layer, "layer", None)
    if inner is not None and hasattr(inner, "name"):  # wrappers show what they wrap
        name = f"{name}({inner.name})"
        label = f"{label}({type(inner).__name__})"
    activation = getattr(layer, "activation", None)
    if show_layer_activations and activation is not None:
        act = getattr(activation, "name", None) or getattr(activation, "__name__", None)
        label = "{%s|%s}" % (label, act or str(activation))  # noqa: UP031 - Keras's record syntax
    if show_layer_names:
        label = f"{name}|{label}"
    if show_dtype:
        label = f"{label}|{layer.dtype if layer.dtype is not None else '?'}"
    if show_shapes:
        inputs, outputs = _shapes(layer)
        label = "{%s}|{input:|output:}|{{%s}|{%s}}" % (label, inputs, outputs)  # noqa: UP031
    if show_trainable:
        label = f"{'T' if layer.trainable else 'NT'}|{label}"
    return label


def _edges(model: Any, layers: list[Any]) -> list[tuple[Any, Any]]:
    if isinstance(model, Sequential) and not model._is_graph_network:
        return list(zip(layers[:-1], layers[1:], strict=True))
    edges = []
    for node in model._graph_nodes:
        for parent in node.parent_nodes:
            pair = (parent.layer, node.layer)
            if all(pair[0] is not a or pair[1] is not b for a, b in edges):
                edges.append(pair)
    return edges


def model_to_dot(model: Any, show_shapes: bool = False, show_dtype: bool = False,
                 show_layer_names: bool = True, rankdir: str = "TB", expand_nested: bool = False,
                 dpi: int = 96, subgraph: bool = False, layer_range: Any = None,
                 show_layer_activations: bool = False,
                 show_trainable: bool = False) -> Any:  # fmt: skip
    """A `pydot.Dot` graph of the model: one record node per layer ("name|Class", with shapes,
    dtype, activation and trainable flag when asked), edges from each layer to the next.

    >>> import layerflow as tf
    >>> model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    >>> dot = tf.keras.utils.model_to_dot(model)  # doctest: +SKIP
    """
    if not model.built:
        raise ValueError(
            "This model has not yet been built. Build the model first by calling `build()` or "
            "by calling the model on a batch of data."
        )
    pydot = _pydot()
    if pydot is None:
        raise ImportError(_PYDOT_MISSING)
    if subgraph:
        dot = pydot.Cluster(style="dashed", graph_name=model.name)
        dot.set("label", model.name)
        dot.set("labeljust", "l")
    else:
        dot = pydot.Dot()
        dot.set("rankdir", rankdir)
        dot.set("concentrate", True)
        dot.set("dpi", dpi)
        dot.set_node_defaults(shape="record")
    if not model._is_graph_network and not isinstance(model, Sequential):
        dot.add_node(pydot.Node(str(id(model)), label=model.name))
        return dot
    layers = model.layers
    if layer_range is not None:
        if len(layer_range) != 2:
            raise ValueError(
                f"layer_range must be of shape (2,). Received: layer_range = {layer_range} of "
                f"length {len(layer_range)}"
            )
        if not all(isinstance(x, str) for x in layer_range):
            raise ValueError(
                f"layer_range should contain string type only. Received: {layer_range}"
            )
        names = [layer.name for layer in layers]
        bounds = []
        for pattern in layer_range:
            hits = [i for i, n in enumerate(names) if pattern in n]
            if not hits:
                raise ValueError(f"Passed layer_name {pattern!r} does not match any layer name.")
            bounds.append(hits[0])
        start, stop = bounds[0], bounds[1] + 1
        layers = layers[start:stop]
    kept = {id(layer) for layer in layers}
    for layer in layers:
        label = _label(layer, show_shapes, show_dtype, show_layer_names, show_layer_activations,
                       show_trainable)  # fmt: skip
        dot.add_node(pydot.Node(str(id(layer)), label=label))
    for src, dst in _edges(model, model.layers):
        if id(src) in kept and id(dst) in kept and not dot.get_edge(str(id(src)), str(id(dst))):
            dot.add_edge(pydot.Edge(str(id(src)), str(id(dst))))
    return dot


def plot_model(model: Any, to_file: str | os.PathLike = "model.png", show_shapes: bool = False,
               show_dtype: bool = False, show_layer_names: bool = True, rankdir: str = "TB",
               expand_nested: bool = False, dpi: int = 96, layer_range: Any = None,
               show_layer_activations: bool = False,
               show_trainable: bool = False) -> Any:  # fmt: skip
    """Draw the model's graph into `to_file` (the format from its extension, png by default).

    Needs pydot and Graphviz; without them raises Keras's ImportError (prints it in IPython).
    Returns an `IPython.display.Image` when IPython is installed (except for PDF).
    """
    if not model.built:
        raise ValueError(
            "This model has not yet been built. Build the model first by calling `build()` or "
            "by calling the model on a batch of data."
        )
    if not check_graphviz():
        if "IPython.core.magics.namespace" in sys.modules:
            io_utils.print_msg(_GRAPHVIZ_MISSING)
            return None
        raise ImportError(_GRAPHVIZ_MISSING)
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir,
                       expand_nested=expand_nested, dpi=dpi, layer_range=layer_range,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable)  # fmt: skip
    to_file = os.fspath(to_file)
    extension = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=extension)
    if extension != "pdf":
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=to_file)
    return None
