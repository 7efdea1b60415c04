"""`tf.keras.applications.imagenet_utils`: ImageNet preprocessing, prediction decoding, and the
helpers every application shares (input shape rules, weight-file lookup and loading).

Follows tf_keras 2.x (`tf_keras/src/applications/imagenet_utils.py`) argument for argument and
error for error. Pretrained files come from the Keras cache (`$KERAS_HOME/models/` or
`~/.keras/models/`) through `get_file`; when one is neither cached nor downloadable the error
names the file, where to put it, and the `weights=<path>` alternative.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.keras import activations
from layerflow._src.keras.backend_api.session_api import is_keras_tensor
from layerflow._src.keras.datasets import keras_cache
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.input_layer import Input
from layerflow._src.keras.layers import Dense, Dropout
from layerflow._src.keras.layers import pooling as pooling_layers
from layerflow._src.keras.saving import h5_model
from layerflow._src.keras.utils.data_utils import get_file
from layerflow._src.keras.utils.layer_utils import get_source_inputs
from layerflow._src.ops.array_ops import constant

__all__ = [
    "channel_axis",
    "classifier_top",
    "correct_pad",
    "image_input",
    "input_and_shape",
    "is_file",
    "decode_predictions",
    "load_model_weights",
    "load_tf_kernels_weights",
    "obtain_input_shape",
    "pool_features",
    "prepare_input",
    "preprocess_input",
    "source_inputs",
    "validate_activation",
    "validate_weights",
    "weights_file",
]

CLASS_INDEX: dict[str, list[str]] | None = None
CLASS_INDEX_PATH = (
    "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"
)
CLASS_INDEX_HASH = "c2c37ea517e94d9795004a39431a14cb"
_MAX_CLASS_INDEX_BYTES = 1 << 22  # the real file is ~35 KB

_MEAN_CAFFE = [103.939, 116.779, 123.68]
_MEAN_TORCH = [0.485, 0.456, 0.406]
_STD_TORCH = [0.229, 0.224, 0.225]


def preprocess_input(x: Any, data_format: str | None = None, mode: str = "caffe") -> Any:
    """Preprocess a batch of images (a NumPy array or a tensor, 3D or 4D, values in [0, 255]).

    mode "caffe": RGB -> BGR, then subtract the ImageNet mean per channel (no scaling);
    "tf": scale to [-1, 1]; "torch": scale to [0, 1], then normalize each channel with the
    ImageNet mean and std. A floating NumPy array is modified in place, as in Keras
    (pass `numpy.copy(x)` to keep it).

    >>> import numpy as np
    >>> preprocess_input(np.full((1, 1, 1, 3), 255.0), mode="tf")
    array([[[[1., 1., 1.]]]])
    """
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError(
            f"Expected mode to be one of `caffe`, `tf` or `torch`. Received: mode={mode}"
        )
    if data_format is None:
        data_format = backend_config.image_data_format()
    elif data_format not in {"channels_first", "channels_last"}:
        raise ValueError(
            "Expected data_format to be one of `channels_first` or `channels_last`. "
            f"Received: data_format={data_format}"
        )
    if isinstance(x, np.ndarray):
        return _preprocess_numpy_input(x, data_format, mode)
    return _preprocess_symbolic_input(x, data_format, mode)


def _preprocess_numpy_input(x: np.ndarray, data_format: str, mode: str) -> np.ndarray:
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(backend_config.floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _MEAN_TORCH, _STD_TORCH
    else:
        if data_format == "channels_first":
            x = x[::-1, ...] if x.ndim == 3 else x[:, ::-1, ...]  # 'RGB'->'BGR'
        else:
            x = x[..., ::-1]
        mean, std = _MEAN_CAFFE, None
    if data_format == "channels_first":
        channels = (lambda c: (c, Ellipsis)) if x.ndim == 3 else (lambda c: (slice(None), c))
    else:
        channels = lambda c: (Ellipsis, c)  # noqa: E731
    for c in range(3):
        x[channels(c)] -= mean[c]
    if std is not None:
        for c in range(3):
            x[channels(c)] /= std[c]
    return x


def _preprocess_symbolic_input(x: Any, data_format: str, mode: str) -> Any:
    if not hasattr(x, "dtype") or not hasattr(x, "shape"):
        x = convert_to_tensor(x)
    if mode == "tf":
        return x / 127.5 - 1.0
    ndim = len(x.shape)
    if mode == "torch":
        x = x / 255.0
        mean, std = _MEAN_TORCH, _STD_TORCH
    else:
        if data_format == "channels_first":
            x = x[::-1, ...] if ndim == 3 else x[:, ::-1, ...]
        else:
            x = x[..., ::-1]
        mean, std = _MEAN_CAFFE, None
    dtype = dtypes.as_dtype(x.dtype)
    # tf_keras adds the mean with `backend.bias_add`, which treats a 3D channels_first tensor as
    # (batch, channels, width): the mean goes along axis 1 there, and this matches it.
    shape = (-1, 1, 1) if data_format == "channels_first" and ndim == 4 else (-1,)
    if data_format == "channels_first" and ndim == 3:
        shape = (-1, 1)
    x = x + constant(np.reshape(-np.array(mean), shape), dtype=dtype)
    if std is not None:
        std_shape = (-1, 1, 1) if data_format == "channels_first" else (-1,)
        x = x / constant(np.reshape(np.array(std), std_shape), dtype=dtype)
    return x


def decode_predictions(preds: Any, top: int = 5) -> list[list[tuple[str, str, Any]]]:
    """The `top` ImageNet classes of each row of `preds` (shape (samples, 1000)), as
    `(class_name, class_description, score)` tuples, best first.

    The class index `imagenet_class_index.json` comes from the Keras cache
    (`~/.keras/models/`), downloaded once when online.

    >>> # decode_predictions(model.predict(x), top=3)[0]
    >>> # [('n02504458', 'African_elephant', 0.82), ...]
    """
    global CLASS_INDEX
    preds = np.asarray(preds.numpy() if hasattr(preds, "numpy") else preds)
    if len(preds.shape) != 2 or preds.shape[1] != 1000:
        raise ValueError(
            "`decode_predictions` expects a batch of predictions (i.e. a 2D array of shape "
            f"(samples, 1000)). Found array with shape: {preds.shape}"
        )
    if CLASS_INDEX is None:
        CLASS_INDEX = _read_class_index(
            weights_file(
                "imagenet_class_index.json",
                CLASS_INDEX_PATH,
                CLASS_INDEX_HASH,
                what="the ImageNet class index for decode_predictions",
            )  # fmt: skip
        )
    results = []
    for pred in preds:
        top_indices = pred.argsort()[-top:][::-1]
        result = [tuple(CLASS_INDEX[str(i)]) + (pred[i],) for i in top_indices]
        result.sort(key=lambda item: item[2], reverse=True)
        results.append(result)
    return results


def _read_class_index(path: str) -> dict[str, list[str]]:
    """The class index is an untrusted file: bounded in size, and checked to be a mapping of
    the 1000 class ids "0".."999" to [wordnet id, description]."""
    if os.path.getsize(path) > _MAX_CLASS_INDEX_BYTES:
        raise ValueError(f"The ImageNet class index '{path}' is larger than expected; delete it.")
    with open(path, encoding="utf-8") as f:
        try:
            index = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"The ImageNet class index '{path}' is not JSON ({e}).") from None
    ok = isinstance(index, dict) and all(
        isinstance(index.get(str(i)), list)
        and len(index[str(i)]) == 2
        and all(isinstance(s, str) for s in index[str(i)])
        for i in range(1000)
    )
    if not ok:
        raise ValueError(
            f"The ImageNet class index '{path}' does not map the class ids '0'..'999' to "
            "[wordnet_id, description] pairs. Delete it and fetch the original file "
            f"({CLASS_INDEX_PATH})."
        )
    return index


def obtain_input_shape(
    input_shape: Any,
    default_size: int,
    min_size: int,
    data_format: str,
    require_flatten: bool,
    weights: Any = None,
) -> tuple:
    """The model's input shape: `input_shape` validated, or the default one (may hold None).

    >>> obtain_input_shape(None, 224, 32, "channels_last", require_flatten=False)
    (None, None, 3)
    """
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        if data_format == "channels_first":
            if input_shape[0] not in {1, 3}:
                warnings.warn(
                    "This model usually expects 1 or 3 input channels. However, it was passed "
                    f"an input_shape with {input_shape[0]} input channels.",
                    stacklevel=2,
                )
            default_shape = (input_shape[0], default_size, default_size)
        else:
            if input_shape[-1] not in {1, 3}:
                warnings.warn(
                    "This model usually expects 1 or 3 input channels. However, it was passed "
                    f"an input_shape with {input_shape[-1]} input channels.",
                    stacklevel=2,
                )
            default_shape = (default_size, default_size, input_shape[-1])
    elif data_format == "channels_first":
        default_shape = (3, default_size, default_size)
    else:
        default_shape = (default_size, default_size, 3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and input_shape != default_shape:
            raise ValueError(
                "When setting `include_top=True` and loading `imagenet` weights, "
                f"`input_shape` should be {default_shape}.  Received: input_shape={input_shape}"
            )
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers.")
        channels, spatial = (
            (input_shape[0], input_shape[1:3])
            if data_format == "channels_first"
            else (input_shape[-1], input_shape[0:2])
        )
        if channels != 3 and weights == "imagenet":
            raise ValueError(
                f"The input must have 3 channels; Received `input_shape={input_shape}`"
            )
        if any(s is not None and s < min_size for s in spatial):
            raise ValueError(
                f"Input size must be at least {min_size}x{min_size}; Received: "
                f"input_shape={input_shape}"
            )
    elif require_flatten:
        input_shape = default_shape
    elif data_format == "channels_first":
        input_shape = (3, None, None)
    else:
        input_shape = (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError(
            "If `include_top` is True, you should specify a static `input_shape`. "
            f"Received: input_shape={input_shape}"
        )
    return input_shape


def correct_pad(inputs: Any, kernel_size: Any) -> tuple:
    """The zero padding ((top, bottom), (left, right)) before a strided 'valid' convolution."""
    img_dim = 2 if backend_config.image_data_format() == "channels_first" else 1
    input_size = tuple(inputs.shape)[img_dim : img_dim + 2]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if input_size[0] is None else (1 - input_size[0] % 2, 1 - input_size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def validate_activation(classifier_activation: Any, weights: Any) -> None:
    """Pretrained weights allow only `None` or `softmax` as the classifier activation."""
    if weights is None:
        return
    classifier_activation = activations.get(classifier_activation)
    if classifier_activation not in {activations.get("softmax"), activations.get(None)}:
        raise ValueError(
            "Only `None` and `softmax` activations are allowed for the `classifier_activation` "
            "argument when using pretrained weights, with `include_top=True`; Received: "
            f"classifier_activation={classifier_activation}"
        )


def validate_weights(
    weights: Any, include_top: bool, classes: int, imagenet_classes: int = 1000
) -> None:
    """The checks every application makes on `weights` and `classes` before building."""
    if not (weights in {"imagenet", None} or is_file(weights)):
        raise ValueError(
            "The `weights` argument should be either `None` (random initialization), "
            "`imagenet` (pre-training on ImageNet), or the path to the weights file to be "
            f"loaded.  Received: weights={weights}"
        )
    if weights == "imagenet" and include_top and classes != imagenet_classes:
        raise ValueError(
            'If using `weights` as `"imagenet"` with `include_top` as true, `classes` should '
            f"be {imagenet_classes}.  Received: classes={classes}"
        )


def is_file(weights: Any) -> bool:
    """Whether `weights` names an existing file (the alternative to None and "imagenet")."""
    try:
        return os.path.exists(os.fspath(weights))
    except TypeError:
        return False


def weights_file(fname: str, origin: str, file_hash: str | None, what: str = "") -> str:
    """The local path of a pretrained file: from the Keras cache (`models/`) when there, else
    downloaded through `get_file`. When neither works the error names the file and the fix."""
    cached = keras_cache.find(fname, file_hash, subdir="models")
    if cached is not None:
        return cached
    try:
        return get_file(fname, origin, cache_subdir="models", file_hash=file_hash)
    except (OSError, ValueError) as e:
        target = os.path.join(keras_cache.homes()[0], "models", fname)
        state = (
            f"'{fname}' is in the Keras cache but its hash is not the published {file_hash}"
            if any(os.path.exists(os.path.join(h, "models", fname)) for h in keras_cache.homes())
            else f"'{fname}' is not in the Keras cache"
        )
        raise FileNotFoundError(
            f"Could not get {what or 'the pretrained weights'}: {state}, and downloading it "
            f"from {origin} failed ({e}). To fix: download that URL on a machine with network "
            f"access and copy the file to '{target}', or pass the path of a local copy "
            "(weights='/path/to/file.h5')."
        ) from None


def load_model_weights(
    model: Any,
    weights: Any,
    fname: str | None = None,
    origin: str | None = None,
    file_hash: str | None = None,
) -> None:
    """Load `weights` into `model`: "imagenet" fetches `fname` from the Keras cache (or
    `origin`); a path loads that file. Keras 2 HDF5 files (those the applications publish)
    load layer by layer in order; any other file goes through `model.load_weights`."""
    if weights is None:
        return
    if weights == "imagenet":
        if fname is None or origin is None:
            raise ValueError(f"{model.name}: no ImageNet weights are published for this setting.")
        path = weights_file(fname, origin, file_hash, what=f"the ImageNet weights of {model.name}")
    else:
        path = os.fspath(weights)
    if h5_model.is_h5_path(path) or path.endswith(".weights.h5"):
        if h5_model.is_legacy_weights_file(path):
            h5_model.load_legacy_weights(model, path)
            return
    model.load_weights(path)


def image_input(input_tensor: Any, input_shape: tuple) -> Any:
    """The model's image input: `input_tensor` when it is already a Keras tensor, else an
    `Input` of `input_shape` (wrapping `input_tensor` when one is given)."""
    if input_tensor is None:
        return Input(shape=input_shape)
    if not is_keras_tensor(input_tensor):
        return Input(tensor=input_tensor, shape=input_shape)
    return input_tensor


def source_inputs(input_tensor: Any, img_input: Any) -> Any:
    """The inputs the model is built on: those `input_tensor` comes from, when given."""
    return img_input if input_tensor is None else get_source_inputs(input_tensor)


def pool_features(x: Any, pooling: Any, avg_name: str | None = None,
                  max_name: str | None = None) -> Any:  # fmt: skip
    """The feature-extractor head: `pooling` "avg" or "max" pools globally, None keeps x."""
    if pooling == "avg":
        return pooling_layers.GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return pooling_layers.GlobalMaxPooling2D(name=max_name)(x)
    return x


def classifier_top(
    x: Any,
    include_top: bool,
    pooling: Any,
    classes: int,
    classifier_activation: Any,
    weights: Any,
    dropout_rate: float = 0.0,
    avg_name: str | None = "avg_pool",
    max_name: str | None = "max_pool",
    **dense_kwargs: Any,
) -> Any:
    """The top most applications share: "avg_pool", "top_dropout" (when `dropout_rate` > 0)
    and the "predictions" Dense (with `dense_kwargs`); without the top, the global `pooling`
    named `avg_name` / `max_name` (see `pool_features`)."""
    if not include_top:
        return pool_features(x, pooling, avg_name, max_name)
    x = pooling_layers.GlobalAveragePooling2D(name="avg_pool")(x)
    if dropout_rate > 0:
        x = Dropout(dropout_rate, name="top_dropout")(x)
    validate_activation(classifier_activation, weights)
    return Dense(classes, activation=classifier_activation, name="predictions", **dense_kwargs)(x)


def load_tf_kernels_weights(
    model: Any, weights: Any, include_top: bool, base_url: str, hashes: Any
) -> Any:
    """Load `weights` into `model` and return it; "imagenet" is the Keras 1 era file
    `<model.name>_weights_tf_dim_ordering_tf_kernels[_notop].h5` under `base_url`, checked
    against `hashes` = (with top, without top)."""
    suffix = "" if include_top else "_notop"
    fname = f"{model.name}_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
    load_model_weights(model, weights, fname, base_url + fname, hashes[0 if include_top else 1])
    return model


def channel_axis() -> int:
    """The channel axis of image batches under the current `image_data_format`."""
    return 3 if backend_config.image_data_format() == "channels_last" else 1


def prepare_input(
    weights: Any,
    include_top: bool,
    classes: int,
    input_tensor: Any,
    input_shape: Any,
    default_size: int,
    min_size: int,
) -> Any:
    """Validate `weights`/`classes` and the input shape; return the model's image input."""
    return input_and_shape(
        weights, include_top, classes, input_tensor, input_shape, default_size, min_size
    )[0]


def input_and_shape(
    weights: Any,
    include_top: bool,
    classes: int,
    input_tensor: Any,
    input_shape: Any,
    default_size: int,
    min_size: int,
) -> tuple[Any, tuple]:
    """`prepare_input`'s image input, and the input shape it has settled on (no batch)."""
    validate_weights(weights, include_top, classes)
    input_shape = obtain_input_shape(
        input_shape,
        default_size=default_size,
        min_size=min_size,
        data_format=backend_config.image_data_format(),
        require_flatten=include_top,
        weights=weights,
    )
    return image_input(input_tensor, input_shape), input_shape
