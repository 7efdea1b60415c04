"""The constructor calls the applications oracles cover (shared by make_fixtures.py and the
tests). Every call adds weights=None. BIG ones are checked for structure only in the tests'
slow tier, and by parameter count otherwise."""

S32 = {"input_shape": (32, 32, 3)}

CONFIGS = {
    "vgg16_top": ("VGG16", {**S32, "classes": 10}),
    "vgg19_notop_max": ("VGG19", {**S32, "include_top": False, "pooling": "max"}),
    "resnet50_top": ("ResNet50", {**S32, "classes": 10, "classifier_activation": None}),
    "resnet50_notop_none": ("ResNet50", {"include_top": False}),
    "resnet101_notop_avg": ("ResNet101", {**S32, "include_top": False, "pooling": "avg"}),
    "resnet152_notop": ("ResNet152", {**S32, "include_top": False}),
    "resnet50v2_top": ("ResNet50V2", {**S32, "classes": 10}),
    "resnet101v2_notop": ("ResNet101V2", {**S32, "include_top": False}),
    "resnet152v2_notop_max": ("ResNet152V2", {**S32, "include_top": False, "pooling": "max"}),
    "densenet121_top": ("DenseNet121", {**S32, "classes": 10}),
    "densenet169_notop": ("DenseNet169", {**S32, "include_top": False}),
    "densenet201_notop_avg": ("DenseNet201", {**S32, "include_top": False, "pooling": "avg"}),
    "inception_v3_top": ("InceptionV3", {"input_shape": (75, 75, 3), "classes": 10}),
    "inception_resnet_v2_notop_avg": (
        "InceptionResNetV2",
        {"input_shape": (75, 75, 3), "include_top": False, "pooling": "avg"},
    ),
    "xception_top": ("Xception", {"input_shape": (71, 71, 3), "classes": 10}),
    "mobilenet_top": ("MobileNet", {**S32, "alpha": 0.5, "classes": 10, "dropout": 0.2}),
    "mobilenet_notop_avg": (
        "MobileNet",
        {**S32, "alpha": 0.25, "depth_multiplier": 2, "include_top": False, "pooling": "avg"},
    ),
    "mobilenet_v2_top": ("MobileNetV2", {**S32, "alpha": 0.35, "classes": 10}),
    "mobilenet_v2_notop": ("MobileNetV2", {**S32, "alpha": 1.3, "include_top": False}),
    "mobilenet_v3_small_top": (
        "MobileNetV3Small",
        {**S32, "alpha": 0.75, "minimalistic": True, "classes": 10},
    ),
    "mobilenet_v3_large_top": ("MobileNetV3Large", {**S32, "classes": 10, "dropout_rate": 0.1}),
    "mobilenet_v3_small_notop_avg": (
        "MobileNetV3Small",
        {**S32, "include_top": False, "pooling": "avg", "include_preprocessing": False},
    ),
    "nasnet_mobile_top": ("NASNetMobile", {**S32, "classes": 10}),
    "nasnet_large_notop": ("NASNetLarge", {**S32, "include_top": False}),
}

BIG = {"resnet152_notop", "resnet152v2_notop_max", "nasnet_large_notop", "densenet201_notop_avg",
       "inception_resnet_v2_notop_avg", "resnet101_notop_avg", "resnet101v2_notop"}  # fmt: skip

# Configs whose fixture keeps only a digest of the layer list (the fixture stays small); the
# others keep the whole list (name, class, weight shapes of every layer).
DIGEST_ONLY = BIG | {"resnet50_notop_none", "densenet169_notop", "mobilenet_v2_notop",
                     "mobilenet_v3_small_notop_avg"}  # fmt: skip


def layers_digest(layers):
    """sha256 of the canonical JSON of [[name, class, [weight shapes]], ...]."""
    import hashlib
    import json

    text = json.dumps(layers, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


FORWARD = {
    "mobilenet": ("MobileNet", {"input_shape": (32, 32, 3), "alpha": 0.1, "classes": 3}),
    "mobilenet_v3_small": (
        "MobileNetV3Small",
        {"input_shape": (32, 32, 3), "alpha": 0.1, "include_top": False, "pooling": "avg"},
    ),
}
