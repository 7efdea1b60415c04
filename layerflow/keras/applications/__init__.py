"""`tf.keras.applications`: re-exports only (implementation in
`layerflow._src.keras.applications`). Families and constructors load on first use."""

import importlib

# Submodule -> the constructors it exports at the package level (one line per family).
_FAMILIES = {
    "imagenet_utils": (),
    "densenet": ("DenseNet121", "DenseNet169", "DenseNet201"),
    "inception_resnet_v2": ("InceptionResNetV2",),
    "inception_v3": ("InceptionV3",),
    "mobilenet": ("MobileNet",),
    "mobilenet_v2": ("MobileNetV2",),
    "mobilenet_v3": ("MobileNetV3Large", "MobileNetV3Small"),
    "nasnet": ("NASNetLarge", "NASNetMobile"),
    "resnet": ("ResNet101", "ResNet152", "ResNet50"),
    "resnet50": (),
    "resnet_v2": ("ResNet101V2", "ResNet152V2", "ResNet50V2"),
    "vgg16": ("VGG16",),
    "vgg19": ("VGG19",),
    "xception": ("Xception",),
}


def __getattr__(name):  # noqa: ANN001, ANN202 - module hook
    if name in _FAMILIES:
        module = importlib.import_module(f"layerflow.keras.applications.{name}")
        globals()[name] = module
        return module
    for family, constructors in _FAMILIES.items():
        if name in constructors:
            value = getattr(importlib.import_module(f"layerflow.keras.applications.{family}"), name)
            globals()[name] = value
            return value
    raise AttributeError(f"module 'layerflow.keras.applications' has no attribute {name!r}")


def __dir__():  # noqa: ANN202
    return sorted({*globals(), *_FAMILIES, *(c for cs in _FAMILIES.values() for c in cs)})


# --- modern families (h-apps2): EfficientNet(V2), ConvNeXt, RegNet, ResNet-RS ---
from layerflow.keras.applications._modern import FAMILIES as _MODERN  # noqa: E402

_FAMILIES.update(_MODERN)
