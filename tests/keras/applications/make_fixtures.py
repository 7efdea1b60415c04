"""Make the tf_keras oracles that the applications tests compare against (run ONCE with the
peers' Python: `/work/peers/bin/python tests/keras/applications/make_fixtures.py`). Not part of
the test run; the outputs are committed under fixtures/.

- structure.json: per constructor call (weights=None, small inputs), the parameter counts, the
  layers (name, class, weight shapes) and the input/output shapes tf_keras 2.21 builds;
- preprocess.json: `preprocess_input` outputs per mode, data format and input kind;
- forward_*.h5 / forward.npz: two small models' weights (Keras 2 HDF5, stored as float16 from
  float16-exact values so the files stay small), an input batch and tf_keras's outputs.
"""

import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = pathlib.Path(__file__).parent
OUT = HERE / "fixtures"
sys.path.insert(0, str(HERE))
from app_configs import CONFIGS, DIGEST_ONLY, FORWARD, layers_digest  # noqa: E402

A = keras.applications


def structure(model):
    layers = []
    for layer in model.layers:
        shapes = [list(w.shape) for w in layer.weights]
        layers.append([layer.name, type(layer).__name__, shapes])
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    total = int(model.count_params())
    return {
        "name": model.name,
        "total_params": total,
        "trainable_params": trainable,
        "num_layers": len(model.layers),
        "input_shape": list(model.input_shape),
        "output_shape": list(model.output_shape),
        "layers_sha256": layers_digest(layers),
        "layers": layers,
    }


def make_structure():
    out = {}
    for key, (ctor, kwargs) in CONFIGS.items():
        keras.backend.clear_session()
        model = getattr(A, ctor)(weights=None, **kwargs)
        out[key] = structure(model)
        if key in DIGEST_ONLY:
            del out[key]["layers"]
        print(key, out[key]["total_params"], out[key]["num_layers"], flush=True)
    (OUT / "structure.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")


def make_preprocess():
    rng = np.random.default_rng(0)
    base4 = rng.uniform(0, 255, (2, 3, 4, 3)).round(2).astype("float32")
    base3 = rng.uniform(0, 255, (3, 4, 3)).round(2).astype("float32")
    cases = []
    for mode in ("caffe", "tf", "torch"):
        for data_format in ("channels_last", "channels_first"):
            for rank, base in ((4, base4), (3, base3)):
                x = np.moveaxis(base, -1, -3) if data_format == "channels_first" else base
                for kind in ("numpy", "tensor"):
                    arr = np.array(x)
                    inp = arr if kind == "numpy" else tf.constant(arr)
                    res = A.imagenet_utils.preprocess_input(inp, data_format=data_format, mode=mode)
                    cases.append(
                        {
                            "mode": mode,
                            "data_format": data_format,
                            "rank": rank,
                            "kind": kind,
                            "input": x.tolist(),
                            "output": np.asarray(res).astype("float64").tolist(),
                        }
                    )
    ints = rng.integers(0, 256, (1, 2, 2, 3)).astype("uint8")
    for mod in (
        "vgg16",
        "resnet50",
        "resnet_v2",
        "densenet",
        "inception_v3",
        "xception",
        "mobilenet",
        "mobilenet_v2",
        "mobilenet_v3",
        "nasnet",
        "inception_resnet_v2",
    ):
        res = getattr(A, mod).preprocess_input(ints.copy())
        cases.append(
            {
                "module": mod,
                "input": ints.tolist(),
                "kind": "numpy_uint8",
                "output": np.asarray(res).astype("float64").tolist(),
            }
        )
    (OUT / "preprocess.json").write_text(json.dumps(cases, separators=(",", ":")) + "\n")


def _packed(data):
    # gzip + shuffle where it pays (HDF5 built-in filters, readable by any h5py)
    return {"compression": "gzip", "compression_opts": 9, "shuffle": True} if data.size > 64 else {}


def _copy_as_float16(src, dst):
    """The same Keras 2 layout, float32 datasets stored as float16, compact HDF5 objects."""
    with h5py.File(src, "r") as f, h5py.File(dst, "w", libver="latest") as g:

        def copy(a, b):
            for k, v in a.attrs.items():
                b.attrs[k] = v
            for name, obj in a.items():
                if isinstance(obj, h5py.Group):
                    copy(obj, b.create_group(name))
                else:
                    data = obj[()]
                    data = data.astype("float16") if data.dtype == np.float32 else data
                    b.create_dataset(name, data=data, **_packed(data))

        copy(f, g)


def make_forward():
    rng = np.random.default_rng(1)
    arrays = {}
    for key, (ctor, kwargs) in FORWARD.items():
        keras.backend.clear_session()
        model = getattr(A, ctor)(weights=None, **kwargs)
        new = []
        for w in model.weights:
            if "moving_variance" in w.name:
                v = rng.uniform(0.5, 1.5, w.shape)
            elif "moving_mean" in w.name:
                v = rng.normal(0, 0.1, w.shape)
            else:
                v = np.asarray(w) + rng.normal(0, 0.02, w.shape)
            new.append(v.astype("float16").astype("float32"))  # float16-exact values
        model.set_weights(new)
        tmp = OUT / f"forward_{key}.tmp.h5"
        model.save_weights(str(tmp))  # Keras 2 HDF5 layout (what keras-applications publish)
        _copy_as_float16(tmp, OUT / f"forward_{key}.h5")
        tmp.unlink()
        size = int(kwargs["input_shape"][0])
        x = rng.integers(0, 256, (2, size, size, 3)).astype("float32")  # pixel values
        mod = {"MobileNet": A.mobilenet, "MobileNetV3Small": A.mobilenet_v3}[ctor]
        arrays[f"{key}_x"] = x
        arrays[f"{key}_y"] = model.predict(mod.preprocess_input(x.copy()), verbose=0)
    np.savez_compressed(OUT / "forward.npz", **arrays)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    what = sys.argv[1:] or ["preprocess", "forward", "structure"]
    for w in what:
        globals()[f"make_{w}"]()
