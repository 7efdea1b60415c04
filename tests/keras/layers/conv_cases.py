"""Convolution, pooling and locally-connected layer cases checked against real tf_keras: the
class name, constructor arguments and input shape. `make_conv_fixtures.py` runs them through
tf_keras and stores the weights it created and its outputs; `test_conv_parity.py` runs them
through layerflow with those weights. Pure NumPy (no TF)."""

import numpy as np

CASES = [
    ("c1t_s2_valid", "Conv1DTranspose", {"filters": 3, "kernel_size": 3, "strides": 2}, (2, 5, 4)),
    (
        "c1t_same_op",
        "Conv1DTranspose",
        {
            "filters": 2,
            "kernel_size": 4,
            "strides": 3,
            "padding": "same",
            "output_padding": 1,
            "activation": "relu",
        },
        (2, 4, 3),
    ),
    (
        "c1t_dil",
        "Conv1DTranspose",
        {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same"},
        (2, 6, 3),
    ),
    (
        "c2t_same",
        "Conv2DTranspose",
        {"filters": 3, "kernel_size": 3, "strides": 2, "padding": "same"},
        (2, 4, 5, 2),
    ),
    (
        "c2t_valid_op",
        "Conv2DTranspose",
        {"filters": 2, "kernel_size": (2, 3), "strides": (2, 3), "output_padding": (1, 2)},
        (1, 3, 3, 2),
    ),
    (
        "c2t_dil",
        "Conv2DTranspose",
        {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same"},
        (1, 5, 5, 2),
    ),
    (
        "c3_same",
        "Conv3D",
        {"filters": 3, "kernel_size": 2, "strides": (1, 2, 1), "padding": "same"},
        (2, 4, 5, 3, 2),
    ),
    ("c3_groups", "Conv3D", {"filters": 4, "kernel_size": 2, "groups": 2}, (1, 3, 3, 3, 4)),
    ("c3_dil", "Conv3D", {"filters": 2, "kernel_size": 2, "dilation_rate": 2}, (1, 5, 5, 5, 1)),
    (
        "c3t_same",
        "Conv3DTranspose",
        {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"},
        (1, 2, 3, 2, 3),
    ),
    (
        "c3t_valid",
        "Conv3DTranspose",
        {"filters": 2, "kernel_size": 2, "strides": (1, 2, 2)},
        (1, 2, 2, 2, 2),
    ),
    (
        "s1_causal",
        "SeparableConv1D",
        {"filters": 3, "kernel_size": 3, "depth_multiplier": 2, "padding": "causal"},
        (2, 6, 2),
    ),
    (
        "s1_s2_same",
        "SeparableConv1D",
        {"filters": 2, "kernel_size": 2, "strides": 2, "padding": "same"},
        (2, 7, 3),
    ),
    (
        "s2_same",
        "SeparableConv2D",
        {
            "filters": 4,
            "kernel_size": 3,
            "depth_multiplier": 2,
            "padding": "same",
            "activation": "tanh",
        },
        (2, 5, 6, 3),
    ),
    (
        "s2_dil",
        "SeparableConv2D",
        {"filters": 2, "kernel_size": 2, "dilation_rate": 2},
        (1, 6, 6, 2),
    ),
    ("s2_stride", "SeparableConv2D", {"filters": 2, "kernel_size": 3, "strides": 2}, (1, 7, 7, 2)),
    ("d1_dm2", "DepthwiseConv1D", {"kernel_size": 3, "depth_multiplier": 2}, (2, 6, 3)),
    ("d1_dil", "DepthwiseConv1D", {"kernel_size": 2, "dilation_rate": 2}, (2, 6, 2)),
    (
        "d1_same_s2",
        "DepthwiseConv1D",
        {"kernel_size": 3, "strides": 2, "padding": "same"},
        (2, 7, 2),
    ),
    (
        "mp3_same",
        "MaxPooling3D",
        {"pool_size": (2, 2, 1), "strides": (1, 2, 1), "padding": "same"},
        (2, 3, 4, 5, 2),
    ),
    ("ap3_same", "AveragePooling3D", {"pool_size": 2, "padding": "same"}, (2, 3, 3, 5, 2)),
    ("gmp3_keep", "GlobalMaxPooling3D", {"keepdims": True}, (2, 3, 2, 4, 3)),
    ("gap3", "GlobalAveragePooling3D", {}, (2, 3, 2, 4, 3)),
    ("gap3_cf", "GlobalAveragePooling3D", {"data_format": "channels_first"}, (2, 3, 2, 4, 3)),
]
for impl in (1, 2, 3):
    CASES += [
        (
            f"lc1_i{impl}",
            "LocallyConnected1D",
            {"filters": 2, "kernel_size": 3, "strides": 2, "implementation": impl},
            (2, 7, 3),
        ),
        (
            f"lc2_i{impl}",
            "LocallyConnected2D",
            {
                "filters": 2,
                "kernel_size": (2, 3),
                "strides": (1, 2),
                "implementation": impl,
                "activation": "relu",
            },
            (2, 4, 6, 3),
        ),
        (
            f"lc2_cf_i{impl}",
            "LocallyConnected2D",
            {
                "filters": 2,
                "kernel_size": 2,
                "data_format": "channels_first",
                "implementation": impl,
            },
            (2, 3, 4, 4),
        ),
    ]


def cases() -> list[tuple[str, str, dict, np.ndarray]]:
    """(id, class name, kwargs, input) with inputs from a seeded generator."""
    rng = np.random.default_rng(7)
    return [(cid, name, kw, rng.standard_normal(shape).astype("float32"))
            for cid, name, kw, shape in CASES]  # fmt: skip


CASES += [
    (
        "clstm1d_seq",
        "ConvLSTM1D",
        {"filters": 2, "kernel_size": 3, "return_sequences": True},
        (2, 3, 6, 2),
    ),
    (
        "clstm2d_same_back",
        "ConvLSTM2D",
        {"filters": 3, "kernel_size": (2, 3), "padding": "same", "go_backwards": True},
        (2, 3, 4, 5, 2),
    ),
    (
        "clstm2d_stride_cf",
        "ConvLSTM2D",
        {
            "filters": 2,
            "kernel_size": 2,
            "strides": 2,
            "data_format": "channels_first",
            "activation": "relu",
            "recurrent_activation": "sigmoid",
        },
        (1, 3, 2, 5, 5),
    ),
    (
        "clstm2d_dil",
        "ConvLSTM2D",
        {"filters": 2, "kernel_size": 2, "dilation_rate": 2, "return_sequences": True},
        (1, 2, 6, 6, 1),
    ),
    (
        "clstm3d",
        "ConvLSTM3D",
        {"filters": 2, "kernel_size": 2, "padding": "same"},
        (1, 2, 3, 3, 3, 2),
    ),
]
