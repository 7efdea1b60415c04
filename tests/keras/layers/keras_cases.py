"""Layer cases checked against real tf_keras: the class name, constructor arguments, inputs and
call arguments. `make_fixtures.py` runs them through tf_keras and stores weights and outputs;
`test_keras_parity.py` runs them through layerflow with those weights. Pure NumPy (no TF).
"""

import numpy as np


def cases() -> list[tuple[str, str, dict, object, dict]]:
    """(id, class name, kwargs, inputs, call kwargs); inputs are fixed by a seeded generator."""
    rng = np.random.default_rng(1)

    def r(*shape):
        return rng.standard_normal(shape).astype("float32")

    def m(*shape):
        return rng.random(shape) > 0.3

    out = [
        ("mha_basic", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3},
         [r(2, 5, 6), r(2, 7, 8)], {}),
        ("mha_causal_out", "MultiHeadAttention",
         {"num_heads": 2, "key_dim": 3, "value_dim": 4, "output_shape": 5},
         [r(2, 5, 6), r(2, 5, 8)], {"use_causal_mask": True}),
        ("mha_axes", "MultiHeadAttention", {"num_heads": 3, "key_dim": 2, "attention_axes": (2, 3)},
         [r(2, 3, 4, 5, 6), r(2, 3, 2, 3, 6)], {}),
        ("mha_mask_nobias", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3, "use_bias": False},
         [r(2, 5, 6), r(2, 7, 8), r(2, 7, 4)], {"attention_mask": m(2, 5, 7)}),
        ("mha_axis1", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3, "attention_axes": 1},
         [r(2, 4, 3, 6), r(2, 5, 3, 8)], {}),
        ("einsum_abc", "EinsumDense", {"equation": "abc,cd->abd", "output_shape": (None, 4),
                                       "bias_axes": "d"}, r(2, 3, 5), {}),
        ("einsum_left", "EinsumDense", {"equation": "...b,bc->...c", "output_shape": 4,
                                        "bias_axes": "c", "activation": "relu"}, r(2, 3, 5), {}),
        ("einsum_right", "EinsumDense", {"equation": "ab...,bc->ac...", "output_shape": 4,
                                         "bias_axes": "c"}, r(2, 3, 5), {}),
        ("einsum_heads", "EinsumDense", {"equation": "abc,cde->abde", "output_shape": (None, 2, 3),
                                         "bias_axes": "de"}, r(2, 3, 5), {}),
        ("einsum_reduce", "EinsumDense", {"equation": "abcd,cde->abe", "output_shape": (None, 3),
                                          "bias_axes": "e"}, r(2, 3, 4, 5), {}),
        ("attention", "Attention", {}, [r(2, 3, 4), r(2, 5, 4)], {}),
        ("attention_concat_causal", "Attention", {"use_scale": True, "score_mode": "concat"},
         [r(2, 3, 4), r(2, 5, 4), r(2, 5, 4)], {"use_causal_mask": True}),
        ("attention_masks", "Attention", {}, [r(2, 3, 4), r(2, 5, 4)],
         {"mask": [m(2, 3), m(2, 5)]}),
        ("additive", "AdditiveAttention", {}, [r(2, 3, 4), r(2, 5, 4)], {}),
        ("additive_noscale", "AdditiveAttention", {"use_scale": False}, [r(2, 3, 4), r(2, 5, 4)],
         {"mask": [None, m(2, 5)], "use_causal_mask": True}),
        ("dot_2d", "Dot", {"axes": 1}, [r(2, 3), r(2, 3)], {}),
        ("dot_pair_norm", "Dot", {"axes": (1, 2), "normalize": True}, [r(2, 3, 4), r(2, 5, 3)], {}),
        ("dot_last", "Dot", {"axes": -1}, [r(2, 3, 4), r(2, 5, 4)], {}),
        ("groupnorm", "GroupNormalization", {"groups": 2}, r(2, 3, 4), {}),
        ("groupnorm_axis1", "GroupNormalization", {"groups": 3, "axis": 1}, r(2, 6, 4, 2), {}),
        ("groupnorm_all", "GroupNormalization", {"groups": -1}, r(2, 5, 4), {}),
        ("unitnorm", "UnitNormalization", {}, r(2, 3, 4), {}),
        ("unitnorm_axes", "UnitNormalization", {"axis": [1, 2]}, r(2, 3, 4), {}),
        ("up1d", "UpSampling1D", {"size": 3}, r(2, 3, 4), {}),
        ("up2d", "UpSampling2D", {"size": (2, 3)}, r(2, 3, 4, 2), {}),
        ("up2d_bilinear", "UpSampling2D", {"size": (2, 3), "interpolation": "bilinear"},
         r(2, 3, 4, 2), {}),
        ("up2d_bilinear_cf", "UpSampling2D",
         {"size": (3, 2), "interpolation": "bilinear", "data_format": "channels_first"},
         r(2, 2, 3, 4), {}),
        ("up3d", "UpSampling3D", {"size": (1, 2, 3)}, r(2, 2, 3, 2, 2), {}),
        ("pad1d", "ZeroPadding1D", {"padding": (1, 2)}, r(2, 3, 4), {}),
        ("pad3d", "ZeroPadding3D", {"padding": ((1, 0), (0, 2), (1, 1))}, r(2, 2, 3, 2, 2), {}),
        ("pad3d_cf", "ZeroPadding3D", {"padding": 2, "data_format": "channels_first"},
         r(2, 2, 3, 2, 2), {}),
        ("crop1d", "Cropping1D", {"cropping": (1, 2)}, r(2, 5, 4), {}),
        ("crop2d", "Cropping2D", {"cropping": ((1, 0), (0, 2))}, r(2, 4, 5, 3), {}),
        ("crop2d_cf", "Cropping2D", {"cropping": 1, "data_format": "channels_first"},
         r(2, 3, 4, 5), {}),
        ("crop3d", "Cropping3D", {"cropping": (1, 0, 1)}, r(2, 3, 4, 5, 2), {}),
    ]  # fmt: skip
    return out


def call_args(name: str, inputs: object) -> tuple[list, bool]:
    """MultiHeadAttention takes (query, value[, key]) positionally; the rest take the input."""
    if name == "MultiHeadAttention":
        return list(inputs), True
    return [inputs], False
