"""`tf.keras.Model`: a layer that holds layers, subclassed or functional, plus training.

Training (compile/fit/evaluate/predict) comes from the `Trainer` mixin; this file owns structure:
`layers`, `build`, `summary`, functional graphs, and whole-model saving delegation.

`Model.build(input_shape)` on a subclassed model marks it built and calls it on symbolic
inputs (KerasTensors of `input_shape`), as a functional model is built: every op computes its
output spec from its inputs' specs, so unknown dimensions stay unknown (a `call` returning
`tf.stack([x, x])` built with `(None, 3)` gives `(2, None, 3)`) and the sublayers build from the
known dimensions. A `call` that needs values (Python control flow on a tensor, `.numpy()`)
cannot run symbolically: it then runs on zeros twice, unknown dimensions 2 and then 3, with
recording paused, and exactly the output axes whose sizes differ are unknown
(`layer_utils.spec_by_running`).

Import cycle, on purpose: `Model.save` delegates to `saving_lib`, whose `model_config` rebuilds
Models and Sequentials (`sequential`) and finds the built-in classes through
`layer_serialization`, which names Model; so `save` imports saving_lib when called, as Keras does.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras.engine import functional, summary
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.layer_utils import map_shapes, to_shapes, who
from layerflow._src.keras.engine.model_api import ModelApi
from layerflow._src.keras.training.execution import Execution
from layerflow._src.keras.training.trainer import Trainer
from layerflow._src.utils import nest


class Model(ModelApi, Execution, Trainer, Layer):
    """A model: subclass it (`__init__` + `call`) or build it from `tf.keras.Input` tensors.

    >>> import layerflow as tf
    >>> x = tf.keras.Input(shape=(4,))
    >>> model = tf.keras.Model(x, tf.keras.layers.Dense(2)(x))
    >>> model(tf.ones((3, 4))).shape
    TensorShape([3, 2])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        args = list(args)
        if args and inputs is None:
            inputs = args.pop(0)
        if args and outputs is None:
            outputs = args.pop(0)
        if args:
            raise TypeError(
                f"{type(self).__name__}() takes inputs and outputs as positional arguments, got "
                f"{len(args)} more."
            )
        if (inputs is None) != (outputs is None):
            raise TypeError(
                f"{type(self).__name__}: a functional model needs both inputs= and outputs= "
                "(tf.keras.Model(inputs, outputs)); a subclassed model needs neither."
            )
        Layer.__init__(self, **kwargs)
        self.__dict__["_is_graph_network"] = False
        if inputs is not None:
            functional.init_graph(self, inputs, outputs)

    # --- structure --------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        """Direct sublayers, each once (a layer used twice appears once)."""
        if self._is_graph_network:
            return functional.graph_layers(self)
        return self._flatten_layers(include_self=False, recursive=False)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        if index is not None:
            if name is not None:
                raise ValueError("get_layer: pass either name= or index=, not both.")
            layers = self.layers
            if not -len(layers) <= index < len(layers):
                raise ValueError(
                    f"get_layer: index {index} is out of range for model '{self.name}' with "
                    f"{len(layers)} layers."
                )
            return layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(
            f"No such layer: {name!r} in model '{self.name}'. Its layers are "
            f"{[layer.name for layer in self.layers]}."
        )

    def _tracked_attributes(self) -> Any:
        if self._is_graph_network:
            layers = [
                layer
                for layer in functional.graph_layers(self)
                if not isinstance(layer, functional.InputLayer)
            ]
            yield "layers", layers
        yield from Layer._tracked_attributes(self)

    @property
    def inputs(self) -> Any:
        return self.__dict__.get("_graph_inputs") if self._is_graph_network else None

    @property
    def outputs(self) -> Any:
        return self.__dict__.get("_graph_outputs") if self._is_graph_network else None

    @property
    def input_shape(self) -> Any:
        if self._build_input_shape is None:
            raise AttributeError(
                f"{who(self)} has no input shape yet: it is not built. Call it on data or "
                "build it with model.build(input_shape)."
            )
        return _as_tuples(self._build_input_shape)

    @property
    def output_shape(self) -> Any:
        if self._output_shape_record is None:
            raise AttributeError(
                f"{who(self)} has no output shape yet: it has not been called. Call it on data "
                "or build it with model.build(input_shape)."
            )
        return _as_tuples(self._output_shape_record)

    # --- the layer contract -----------------------------------------------------------------
    def build(self, input_shape: Any = None) -> None:
        """Build the model for inputs of `input_shape` by a symbolic call (see the module
        docstring: unknown dimensions stay unknown; a `call` that needs values runs on zeros)."""
        if self._is_graph_network or self.__dict__.get("_building_from_call"):
            self.built = True
            return
        if input_shape is None:
            raise ValueError(
                f"{who(self)}.build() needs input_shape, e.g. model.build((None, 20)), because "
                "a subclassed model's layers get their shapes from the data."
            )
        shapes = to_shapes(input_shape)
        kts = map_shapes(lambda s: KerasTensor(s, self.dtype), shapes)
        self.built = True
        self._symbolic_call(kts, (), {}, None)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        if self._is_graph_network:
            return functional.run_graph(self, inputs, training, mask)
        raise NotImplementedError(
            f"{who(self)} has no call(): to create a model with the functional API, pass "
            "inputs and outputs (tf.keras.Model(inputs, outputs)); otherwise subclass "
            "tf.keras.Model and define call(self, inputs)."
        )

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """A functional model's output masks: the masks its layers give its outputs."""
        if not self._is_graph_network:
            return Layer.compute_mask(self, inputs, mask)
        outputs = functional.run_graph(self, inputs, None, mask)
        return nest.map_structure(lambda t: getattr(t, "_keras_mask", None), outputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self._is_graph_network:
            return map_shapes(lambda s: s, self._output_shape_record)
        return Layer.compute_output_shape(self, input_shape)

    compute_output_shape._lf_runs_call = True  # type: ignore[attr-defined]

    def summary(
        self,
        line_length: int | None = None,
        positions: Any = None,
        print_fn: Any = None,
        expand_nested: bool = False,
        show_trainable: bool = False,
        layer_range: Any = None,
    ) -> None:
        """Print a table of the layers, their output shapes and parameter counts."""
        summary.print_summary(
            self,
            line_length=line_length,
            positions=positions,
            print_fn=print_fn,
            expand_nested=expand_nested,
            show_trainable=show_trainable,
        )

    def get_config(self) -> dict[str, Any]:
        """A functional model's layers and their connections (tf_keras's layout); a
        subclassed model's constructor arguments (it must override get_config for them)."""
        if self._is_graph_network:
            from layerflow._src.keras.saving import functional_config  # deferred: see save()

            return functional_config.get_config(self)
        return Layer.get_config(self)

    get_config._lf_default = True  # type: ignore[attr-defined]

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Any:
        """A model from `get_config()`: a functional config rebuilds the graph (layer classes
        resolve through built-ins, registered objects and `custom_objects` only)."""
        if isinstance(config, dict) and {"layers", "input_layers", "output_layers"} <= set(config):
            from layerflow._src.keras.saving import model_config  # deferred: see save()

            return model_config.functional_from_keras2(config, custom_objects, cls)
        try:
            return cls(**config)
        except TypeError as e:  # tf_keras's words
            raise TypeError(
                "Unable to revive model from config. When overriding the `get_config()` method, "
                "make sure that the returned config contains all items used as arguments in the "
                f"constructor to {cls}, which is the default behavior. You can override this "
                "default behavior by defining a `from_config(cls, config)` class method to "
                f"specify how to create an instance of {cls.__name__} from its config.\n\n"
                f"Received config={config}\n\nError encountered during deserialization: {e}"
            ) from None

    # --- whole-model saving (the saving package implements it) -----------------------------------
    def save(
        self, filepath: Any, overwrite: bool = True, save_format: Any = None, **kwargs: Any
    ) -> None:
        """Save architecture and weights to `filepath` (`.keras`)."""
        # Deferred: saving_lib and model_config build Models (see the module docstring).
        from layerflow._src.keras.saving import saving_lib

        return saving_lib.save_model(
            self, filepath, overwrite=overwrite, save_format=save_format, **kwargs
        )

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as JSON, for `tf.keras.models.model_from_json` (no weights)."""
        from layerflow._src.keras.saving import model_config  # deferred: see save()

        return model_config.to_json(self, **kwargs)


def _as_tuples(shapes: Any) -> Any:
    return map_shapes(tuple, shapes)
