"""Modern-CNN training steps (issue 14): step time and peak RSS, layerflow beside Keras-TF and
PyTorch in the same run, each framework in its own process.

Inputs are Fashion-MNIST-shaped (one channel) at the book's sizes: AlexNet, VGG-11 (the book's
channel ratio 4) and NiN on 224x224; `vgg-step` is the memory test's network (two 3x3 convs of
64 channels, pooling, a 128-channel conv) at a batch of 64. Values are random: time and memory
do not depend on them. The first step pays for warm-up; the median of the rest is reported.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn_step.py --models alexnet
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import PEERS, ROOT, peak_rss_mib  # noqa: E402

# Layer specs: ("conv", filters, kernel, stride, padding), ("pool", kernel, stride, padding),
# ("gap",), ("flatten",), ("dense", units, relu), ("dropout",).
VGG11 = [(1, 64), (1, 128), (2, 256), (2, 512), (2, 512)]


def _vgg(ratio: int) -> list:
    spec = []
    for convs, ch in VGG11:
        spec += [("conv", ch // ratio, 3, 1, "same")] * convs + [("pool", 2, 2, "valid")]
    return spec + [("flatten",), ("dense", 4096, True), ("dropout",), ("dense", 4096, True),
                   ("dropout",), ("dense", 10, False)]  # fmt: skip


def _nin_block(ch: int, k: int, s: int, pad: str) -> list:
    return [("conv", ch, k, s, pad), ("conv", ch, 1, 1, "valid"), ("conv", ch, 1, 1, "valid")]


MODELS = {
    "alexnet": (224, [("conv", 96, 11, 4, "valid"), ("pool", 3, 2, "valid"),
                      ("conv", 256, 5, 1, "same"), ("pool", 3, 2, "valid"),
                      ("conv", 384, 3, 1, "same"), ("conv", 384, 3, 1, "same"),
                      ("conv", 256, 3, 1, "same"), ("pool", 3, 2, "valid"), ("flatten",),
                      ("dense", 4096, True), ("dropout",), ("dense", 4096, True), ("dropout",),
                      ("dense", 10, False)]),
    "vgg11": (224, _vgg(4)),
    "nin": (224, _nin_block(96, 11, 4, "valid") + [("pool", 3, 2, "valid")]
            + _nin_block(256, 5, 1, "same") + [("pool", 3, 2, "valid")]
            + _nin_block(384, 3, 1, "same") + [("pool", 3, 2, "valid"), ("dropout",)]
            + _nin_block(10, 3, 1, "same") + [("gap",)]),
    "vgg-step": (224, [("conv", 64, 3, 1, "same"), ("conv", 64, 3, 1, "same"),
                       ("pool", 2, 2, "valid"), ("conv", 128, 3, 1, "same"), ("gap",),
                       ("dense", 10, False)]),
}  # fmt: skip


def _keras_layers(L, spec: list) -> list:  # noqa: N803 - the keras.layers module
    out = []
    for s in spec:
        if s[0] == "conv":
            out.append(L.Conv2D(s[1], s[2], strides=s[3], padding=s[4], activation="relu"))
        elif s[0] == "pool":
            out.append(L.MaxPool2D(s[1], s[2], padding=s[3]))
        elif s[0] == "gap":
            out.append(L.GlobalAveragePooling2D())
        elif s[0] == "flatten":
            out.append(L.Flatten())
        elif s[0] == "dense":
            out.append(L.Dense(s[1], activation="relu" if s[2] else None))
        else:
            out.append(L.Dropout(0.5))
    return out


def _data(size: int, batch: int, channels_first: bool = False):
    import numpy as np

    rng = np.random.default_rng(0)
    shape = (batch, 1, size, size) if channels_first else (batch, size, size, 1)
    return rng.random(shape, dtype=np.float32), (np.arange(batch) % 10).astype(np.int64)


def _keras_step(tf, model_name: str, batch: int, steps: int, compiled: bool) -> list:
    size, spec = MODELS[model_name]
    model = tf.keras.Sequential([tf.keras.Input((size, size, 1))]
                                + _keras_layers(tf.keras.layers, spec))  # fmt: skip
    x, y = _data(size, batch)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(0.01)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if compiled:
        step = tf.function(step)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        float(step(x, y))
        times.append(time.perf_counter() - t)
    return times


def _torch_step(model_name: str, batch: int, steps: int) -> list:
    import torch
    from torch import nn

    size, spec = MODELS[model_name]
    layers, c, hw = [], 1, size
    for s in spec:
        if s[0] == "conv":
            pad = s[2] // 2 if s[4] == "same" else 0
            layers += [nn.Conv2d(c, s[1], s[2], s[3], pad), nn.ReLU()]
            c, hw = s[1], (hw + 2 * pad - s[2]) // s[3] + 1
        elif s[0] == "pool":
            layers.append(nn.MaxPool2d(s[1], s[2]))
            hw = (hw - s[1]) // s[2] + 1
        elif s[0] == "gap":
            layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
            hw = 1
        elif s[0] == "flatten":
            layers.append(nn.Flatten())
            c, hw = c * hw * hw, 1
        elif s[0] == "dense":
            layers.append(nn.Linear(c, s[1]))
            layers += [nn.ReLU()] if s[2] else []
            c = s[1]
        else:
            layers.append(nn.Dropout(0.5))
    model = nn.Sequential(*layers)
    x, y = _data(size, batch, channels_first=True)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        float(loss)
        times.append(time.perf_counter() - t)
    return times


def worker(name: str, model_name: str, batch: int, steps: int) -> None:
    if name == "layerflow":
        import layerflow as tf

        times = _keras_step(tf, model_name, batch, steps, compiled=False)
    elif name == "keras-tf":
        import tensorflow as tf

        times = _keras_step(tf, model_name, batch, steps, compiled=True)
    else:
        times = _torch_step(model_name, batch, steps)
    print("RESULT " + json.dumps({"times": times, "rss": peak_rss_mib()}))


WORKERS = [("layerflow", "self"), ("keras-tf", "peers"), ("pytorch", "peers")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="alexnet,vgg11,nin,vgg-step")
    ap.add_argument("--batch", type=int, default=16, help="batch (vgg-step always uses 64)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--only", help="comma-separated worker names")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--worker", nargs=2, metavar=("NAME", "MODEL"))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.batch, args.steps)
        return
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}  # fmt: skip
    env["PYTHONPATH"] = str(ROOT)
    print(f"{'model':<10}{'framework':<12}{'batch':>6}{'median s/step':>15}{'ratio':>8}"
          f"{'peak RSS MiB':>14}")  # fmt: skip
    for model in args.models.split(","):
        batch = 64 if model == "vgg-step" else args.batch
        base = None
        for name, python in WORKERS:
            if args.only and name not in args.only.split(","):
                continue
            if python == "peers" and PEERS is None:
                continue
            exe = sys.executable if python == "self" else str(PEERS)
            cmd = [exe, __file__, "--worker", name, model, "--batch", str(batch),
                   "--steps", str(args.steps)]  # fmt: skip
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                      timeout=args.timeout)  # fmt: skip
            except subprocess.TimeoutExpired:
                print(f"{model:<10}{name:<12} timed out after {args.timeout}s", flush=True)
                continue
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
                print(f"{model:<10}{name:<12} skipped ({tail[0][:120]})", flush=True)
                continue
            r = json.loads(lines[-1][len("RESULT ") :])
            med = statistics.median(r["times"][1:] or r["times"])
            base = base or med
            print(f"{model:<10}{name:<12}{batch:>6}{med:>15.3f}{med / base:>8.2f}"
                  f"{r['rss']:>14.0f}", flush=True)  # fmt: skip
    print("(ratio = median s/step / layerflow's, same run; TF runs its step as a tf.function)")


if __name__ == "__main__":
    main()
