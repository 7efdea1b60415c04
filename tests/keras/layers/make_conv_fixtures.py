"""Regenerate `fixtures/keras2_conv_layers.npz` with REAL tf_keras (not layerflow). Run with the
peers' Python, which has TensorFlow 2.21 and tf_keras:

    /work/peers/bin/python tests/keras/layers/make_conv_fixtures.py

For every case of `conv_cases.py` it stores the weights tf_keras created (keys `<id>/w<i>`, in
tf_keras's order) and the layer's output on the case's input (`<id>/y`), and in
`keras2_conv_configs.json` each layer's `tf.keras.layers.serialize` form.
"""

import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import conv_cases  # noqa: E402
import tf_keras  # noqa: E402

if __name__ == "__main__":
    tf_keras.utils.set_random_seed(5)
    arrays, configs = {}, {}
    for cid, name, kwargs, x in conv_cases.cases():
        layer = getattr(tf_keras.layers, name)(**kwargs)
        y = layer(x)
        configs[cid] = tf_keras.layers.serialize(layer)
        for i, w in enumerate(layer.get_weights()):
            arrays[f"{cid}/w{i}"] = w
        arrays[f"{cid}/y"] = np.asarray(y)
    np.savez_compressed(HERE / "fixtures" / "keras2_conv_layers.npz", **arrays)
    text = json.dumps(configs, indent=1, sort_keys=True, default=lambda v: list(v))
    (HERE / "fixtures" / "keras2_conv_configs.json").write_text(text + "\n")
