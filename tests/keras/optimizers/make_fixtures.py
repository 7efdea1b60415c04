"""Regenerate `fixtures/optimizers_tf_keras.npz` with REAL tf_keras (not layerflow).

    /work/peers/bin/python tests/keras/optimizers/make_fixtures.py

For each case of CASES: a (3, 4) kernel and a (4,) bias start from fixed values, then STEPS
steps of fixed gradients are applied by the tf_keras optimizer; the file stores the
gradients, the starting values, and the two variables after every step (`<case>/w`,
`<case>/b`, shapes (STEPS, 3, 4) and (STEPS, 4)).
"""

from __future__ import annotations

import pathlib

import numpy as np

STEPS = 5
CASES = {
    "adamax": ("Adamax", {"learning_rate": 0.05}),
    "nadam": ("Nadam", {"learning_rate": 0.05}),
    "adadelta": ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    "ftrl": ("Ftrl", {"learning_rate": 0.1}),
    "ftrl_reg": (
        "Ftrl",
        {
            "learning_rate": 0.1,
            "l1_regularization_strength": 0.01,
            "l2_regularization_strength": 0.02,
            "l2_shrinkage_regularization_strength": 0.03,
            "beta": 0.5,
            "learning_rate_power": -0.7,
        },
    ),
    "adafactor": ("Adafactor", {"learning_rate": 0.1}),
    "adafactor_fixed": ("Adafactor", {"learning_rate": 0.05, "relative_step": False}),
    "lion": ("Lion", {"learning_rate": 0.01}),
}


def main() -> None:
    import tf_keras as keras

    rng = np.random.default_rng(11)
    w0 = rng.normal(size=(3, 4)).astype(np.float32)
    b0 = rng.normal(size=(4,)).astype(np.float32)
    gw = rng.normal(size=(STEPS, 3, 4)).astype(np.float32)
    gb = rng.normal(size=(STEPS, 4)).astype(np.float32)
    out = {"w0": w0, "b0": b0, "gw": gw, "gb": gb}
    for case, (cls_name, kwargs) in CASES.items():
        import tensorflow as tf

        w, b = tf.Variable(w0), tf.Variable(b0)
        opt = getattr(keras.optimizers, cls_name)(**kwargs)
        ws, bs = [], []
        for i in range(STEPS):
            opt.apply_gradients([(tf.constant(gw[i]), w), (tf.constant(gb[i]), b)])
            ws.append(w.numpy())
            bs.append(b.numpy())
        out[f"{case}/w"] = np.stack(ws)
        out[f"{case}/b"] = np.stack(bs)
    path = pathlib.Path(__file__).resolve().parent / "fixtures" / "optimizers_tf_keras.npz"
    np.savez(path, **out)
    print("wrote", path)


if __name__ == "__main__":
    main()
