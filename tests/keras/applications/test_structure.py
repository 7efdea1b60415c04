"""Every tf.keras.applications constructor builds tf_keras's model (weights=None, small
inputs): the same layers in the same order, names, classes, weight shapes, parameter counts
and input/output shapes (fixtures/structure.json, from tf_keras 2.21 by make_fixtures.py)."""

import json
import pathlib
import sys

import numpy as np
import pytest

import layerflow as tf

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from app_configs import CONFIGS, layers_digest  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures/structure.json").read_text())


def _layers(model):
    return [
        [layer.name, type(layer).__name__, [list(w.shape) for w in layer.weights]]
        for layer in model.layers
    ]


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_structure_matches_tf_keras(key):
    ctor, kwargs = CONFIGS[key]
    expected = FIXTURE[key]
    tf.keras.backend.clear_session()  # unnamed layers are numbered from 0, as in the fixture
    model = getattr(tf.keras.applications, ctor)(weights=None, **kwargs)
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert (model.name, model.count_params(), trainable, len(model.layers)) == (
        expected["name"],
        expected["total_params"],
        expected["trainable_params"],
        expected["num_layers"],
    )
    assert list(model.input_shape) == expected["input_shape"]
    assert list(model.output_shape) == expected["output_shape"]
    layers = _layers(model)
    if "layers" in expected:
        for i, (got, want) in enumerate(zip(layers, expected["layers"])):
            assert got == want, f"layer {i}"
    assert layers_digest(layers) == expected["layers_sha256"]


def test_submodules_export_tf_keras_names():
    A = tf.keras.applications
    assert A.resnet50.ResNet50 is A.resnet.ResNet50 is A.ResNet50
    assert A.vgg16.VGG16 is A.VGG16 and A.vgg19.VGG19 is A.VGG19
    assert A.resnet_v2.ResNet152V2 is A.ResNet152V2
    assert A.mobilenet_v3.MobileNetV3Small is A.MobileNetV3Small
    for name in ("vgg16", "resnet", "resnet_v2", "densenet", "inception_v3", "xception",
                 "mobilenet", "mobilenet_v2", "mobilenet_v3", "nasnet", "inception_resnet_v2",
                 "resnet50", "vgg19", "imagenet_utils"):  # fmt: skip
        module = getattr(A, name)
        assert callable(module.preprocess_input) and callable(module.decode_predictions)
    with pytest.raises(AttributeError, match="no attribute 'ResNet9000'"):
        A.ResNet9000  # noqa: B018


def test_input_tensor_is_the_model_input():
    inputs = tf.keras.Input((32, 32, 3))
    x = tf.keras.layers.Rescaling(1 / 255.0)(inputs)
    model = tf.keras.applications.ResNet50V2(
        include_top=False, weights=None, input_tensor=x, pooling="avg"
    )
    assert model.inputs[0] is inputs and model.output_shape == (None, 2048)
    assert model.layers[1].name.startswith("rescaling")
    out = model(np.ones((2, 32, 32, 3), "float32"))
    assert out.shape == (2, 2048)


def test_input_shape_rules():
    A = tf.keras.applications
    with pytest.raises(ValueError, match="at least 75x75"):
        A.InceptionV3(weights=None, include_top=False, input_shape=(74, 80, 3))
    with pytest.raises(ValueError, match="at least 32x32"):
        A.MobileNetV3Large(weights=None, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="static `input_shape`"):
        A.VGG16(weights=None, input_shape=(None, None, 3))
    with pytest.raises(ValueError, match=r"should be \(224, 224, 3\)"):
        A.ResNet50(weights="imagenet", input_shape=(200, 200, 3))
    assert A.Xception(weights=None, include_top=False).input_shape == (None, None, None, 3)
    assert A.DenseNet121(weights=None).input_shape == (None, 224, 224, 3)
    assert A.MobileNetV2(weights=None, input_shape=(96, 96, 3), alpha=0.35).name == (
        "mobilenetv2_0.35_96"
    )
