"""Modern-CNN training steps (issue 14): step time and peak RSS, layerflow beside Keras-TF and
PyTorch in the same run, each framework in its own process.

Inputs are Fashion-MNIST-shaped (one channel) at the book's sizes: AlexNet, VGG-11 (the book's
channel ratio 4) and NiN on 224x224; GoogLeNet, ResNet-18 and DenseNet (the book's 4 dense
blocks of 4 convs, growth 32) on 96x96, as the book resizes them; `vgg-step` is the memory
test's network (two 3x3 convs of 64 channels, pooling, a 128-channel conv) at a batch of 64.
The graph models (Inception blocks, residual blocks with BatchNorm and 1x1 projections, dense
blocks with BN-ReLU-Conv and transition layers) are Keras functional models and torch modules
built from one spec. Values are random: time and memory do not depend on them. The first step
pays for warm-up; the median of the rest is reported. `--baseline DIR` adds a worker
"layerflow-0" that runs the layerflow source tree in DIR (e.g. `git worktree add` of the
commit before a change), so before and after land in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn_step.py --models alexnet

`--pairs N` instead runs two layerflow workers by turns, N times each (A B A B ...), so that
both see the same load on a shared machine, and prints each one's CPU seconds per step (min
and median over its runs of the median of steps 2+) and peak RSS: the numba kernels off and
on (`LAYERFLOW_NUMBA=0` / unset), or with `--baseline DIR` that tree and this one. With
`--blas1`, OpenBLAS runs one thread (`OPENBLAS_NUM_THREADS=1`: the conv kernels then run
serially, so the CPU time is the single-core cost).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cnn_step.py --models vgg-step \
        --pairs 3 --blas1 --steps 3
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
from _common import CPU, PEERS, ROOT, peak_rss_mib  # noqa: E402

# Layer specs: ("conv", filters, kernel, stride, padding) (+ relu), ("pool", kernel, stride,
# padding), ("gap",), ("flatten",), ("dense", units, relu), ("dropout",); graph blocks:
# ("stem", filters) = 7x7/2 conv, BN, relu, 3x3/2 max pool; ("inception", c1, (c2a, c2b),
# (c3a, c3b), c4); ("residual", filters, stride, project); ("dense_block", convs, growth);
# ("transition", filters) = BN, relu, 1x1 conv, 2x2/2 average pool; ("bn_relu",).
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
    "googlenet": (96, [("conv", 64, 7, 2, "same"), ("pool", 3, 2, "same"),
                       ("conv", 64, 1, 1, "valid"), ("conv", 192, 3, 1, "same"),
                       ("pool", 3, 2, "same"),
                       ("inception", 64, (96, 128), (16, 32), 32),
                       ("inception", 128, (128, 192), (32, 96), 64), ("pool", 3, 2, "same"),
                       ("inception", 192, (96, 208), (16, 48), 64),
                       ("inception", 160, (112, 224), (24, 64), 64),
                       ("inception", 128, (128, 256), (24, 64), 64),
                       ("inception", 112, (144, 288), (32, 64), 64),
                       ("inception", 256, (160, 320), (32, 128), 128), ("pool", 3, 2, "same"),
                       ("inception", 256, (160, 320), (32, 128), 128),
                       ("inception", 384, (192, 384), (48, 128), 128), ("gap",),
                       ("dense", 10, False)]),
    "resnet18": (96, [("stem", 64), ("residual", 64, 1, False), ("residual", 64, 1, False),
                      ("residual", 128, 2, True), ("residual", 128, 1, False),
                      ("residual", 256, 2, True), ("residual", 256, 1, False),
                      ("residual", 512, 2, True), ("residual", 512, 1, False), ("gap",),
                      ("dense", 10, False)]),
    "densenet": (96, [("stem", 64), ("dense_block", 4, 32), ("transition", 96),
                      ("dense_block", 4, 32), ("transition", 112), ("dense_block", 4, 32),
                      ("transition", 120), ("dense_block", 4, 32), ("bn_relu",), ("gap",),
                      ("dense", 10, False)]),
    "vgg-step": (224, [("conv", 64, 3, 1, "same"), ("conv", 64, 3, 1, "same"),
                       ("pool", 2, 2, "valid"), ("conv", 128, 3, 1, "same"), ("gap",),
                       ("dense", 10, False)]),
}  # fmt: skip


def _keras_block(L, s: tuple, x):  # noqa: N803 - the keras.layers module
    """Apply one graph block of the spec to the Keras tensor `x`."""

    def conv(c, k, stride=1, act="relu"):
        return L.Conv2D(c, k, strides=stride, padding="same", activation=act)

    def bn_relu(t):
        return L.ReLU()(L.BatchNormalization()(t))

    kind = s[0]
    if kind == "stem":
        return L.MaxPool2D(3, 2, padding="same")(bn_relu(conv(s[1], 7, 2, None)(x)))
    if kind == "inception":
        c1, c2, c3, c4 = s[1:]
        p1 = conv(c1, 1)(x)
        p2 = conv(c2[1], 3)(conv(c2[0], 1)(x))
        p3 = conv(c3[1], 5)(conv(c3[0], 1)(x))
        p4 = conv(c4, 1)(L.MaxPool2D(3, 1, padding="same")(x))
        return L.Concatenate()([p1, p2, p3, p4])
    if kind == "residual":
        c, stride, project = s[1:]
        y = bn_relu(conv(c, 3, stride, None)(x))
        y = L.BatchNormalization()(conv(c, 3, 1, None)(y))
        if project:
            x = conv(c, 1, stride, None)(x)
        return L.ReLU()(L.Add()([y, x]))
    if kind == "dense_block":
        for _ in range(s[1]):
            x = L.Concatenate()([x, conv(s[2], 3, 1, None)(bn_relu(x))])
        return x
    if kind == "transition":
        return L.AvgPool2D(2, 2)(conv(s[1], 1, 1, None)(bn_relu(x)))
    return bn_relu(x)  # "bn_relu"


GRAPH = ("stem", "inception", "residual", "dense_block", "transition", "bn_relu")


def _keras_model(tf, spec: list, size: int):
    L = tf.keras.layers  # noqa: N806
    if not any(s[0] in GRAPH for s in spec):
        return tf.keras.Sequential([tf.keras.Input((size, size, 1))] + _keras_layers(L, spec))
    x = inputs = tf.keras.Input((size, size, 1))
    for s in spec:
        x = _keras_block(L, s, x) if s[0] in GRAPH else _keras_layers(L, [s])[0](x)
    return tf.keras.Model(inputs, x)


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
    model = _keras_model(tf, spec, size)
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
        t, c = time.perf_counter(), time.process_time()
        float(step(x, y))
        times.append(time.perf_counter() - t)
        CPU.append(time.process_time() - c)
    return times


def _torch_model(spec: list, size: int):
    import torch
    from torch import nn

    def conv(ci, co, k, stride=1, relu=True):
        layer = nn.Conv2d(ci, co, k, stride, k // 2)
        return nn.Sequential(layer, nn.ReLU()) if relu else layer

    def bn_relu(c):
        return nn.Sequential(nn.BatchNorm2d(c), nn.ReLU())

    class Inception(nn.Module):
        def __init__(self, ci, c1, c2, c3, c4):
            super().__init__()
            self.p1 = conv(ci, c1, 1)
            self.p2 = nn.Sequential(conv(ci, c2[0], 1), conv(c2[0], c2[1], 3))
            self.p3 = nn.Sequential(conv(ci, c3[0], 1), conv(c3[0], c3[1], 5))
            self.p4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv(ci, c4, 1))

        def forward(self, x):
            return torch.cat([self.p1(x), self.p2(x), self.p3(x), self.p4(x)], 1)

    class Residual(nn.Module):
        def __init__(self, ci, c, stride, project):
            super().__init__()
            self.body = nn.Sequential(conv(ci, c, 3, stride, False), bn_relu(c),
                                      conv(c, c, 3, 1, False), nn.BatchNorm2d(c))  # fmt: skip
            self.proj = conv(ci, c, 1, stride, False) if project else None

        def forward(self, x):
            return torch.relu(self.body(x) + (self.proj(x) if self.proj else x))

    class DenseBlock(nn.Module):
        def __init__(self, ci, convs, growth):
            super().__init__()
            self.convs = nn.ModuleList(nn.Sequential(bn_relu(ci + i * growth),
                                                     conv(ci + i * growth, growth, 3, 1, False))
                                       for i in range(convs))  # fmt: skip

        def forward(self, x):
            for blk in self.convs:
                x = torch.cat([x, blk(x)], 1)
            return x

    layers, c, hw = [], 1, size
    for s in spec:
        if s[0] == "conv":
            pad = s[2] // 2 if s[4] == "same" else 0
            layers.append(conv(c, s[1], s[2], s[3]) if pad else
                          nn.Sequential(nn.Conv2d(c, s[1], s[2], s[3]), nn.ReLU()))  # fmt: skip
            c, hw = s[1], (hw + 2 * pad - s[2]) // s[3] + 1
        elif s[0] == "pool":
            pad = s[1] // 2 if s[3] == "same" else 0
            layers.append(nn.MaxPool2d(s[1], s[2], pad))
            hw = (hw + 2 * pad - s[1]) // s[2] + 1
        elif s[0] == "stem":
            layers += [conv(c, s[1], 7, 2, False), bn_relu(s[1]), nn.MaxPool2d(3, 2, 1)]
            c, hw = s[1], -(-hw // 4)
        elif s[0] == "inception":
            layers.append(Inception(c, *s[1:]))
            c = s[1] + s[2][1] + s[3][1] + s[4]
        elif s[0] == "residual":
            layers.append(Residual(c, *s[1:]))
            c, hw = s[1], -(-hw // s[2])
        elif s[0] == "dense_block":
            layers.append(DenseBlock(c, *s[1:]))
            c += s[1] * s[2]
        elif s[0] == "transition":
            layers += [bn_relu(c), conv(c, s[1], 1, 1, False), nn.AvgPool2d(2, 2)]
            c, hw = s[1], hw // 2
        elif s[0] == "bn_relu":
            layers.append(bn_relu(c))
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
    return nn.Sequential(*layers)


def _torch_step(model_name: str, batch: int, steps: int) -> list:
    import torch
    from torch import nn

    size, spec = MODELS[model_name]
    model = _torch_model(spec, size)
    x, y = _data(size, batch, channels_first=True)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t, c = time.perf_counter(), time.process_time()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        float(loss)
        times.append(time.perf_counter() - t)
        CPU.append(time.process_time() - c)
    return times


def worker(name: str, model_name: str, batch: int, steps: int) -> None:
    if name.startswith("layerflow"):
        import layerflow as tf

        times = _keras_step(tf, model_name, batch, steps, compiled=False)
    elif name == "keras-tf":
        import tensorflow as tf

        times = _keras_step(tf, model_name, batch, steps, compiled=True)
    else:
        times = _torch_step(model_name, batch, steps)
    print("RESULT " + json.dumps({"times": times, "cpu": CPU, "rss": peak_rss_mib(),
                                  "load": os.getloadavg()[0]}))  # fmt: skip


WORKERS = [("layerflow", "self"), ("keras-tf", "peers"), ("pytorch", "peers")]


def _run_worker(name: str, model: str, batch: int, args, env: dict) -> dict | str:
    exe = str(PEERS) if name in ("keras-tf", "pytorch") else sys.executable
    cmd = [exe, __file__, "--worker", name, model, "--batch", str(batch),
           "--steps", str(args.steps)]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=args.timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"timed out after {args.timeout}s"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
        return f"skipped ({tail[0][:120]})"
    return json.loads(lines[-1][len("RESULT ") :])


def pairs(args, env: dict) -> None:
    """`--pairs N`: two layerflow workers by turns (see the module docstring)."""
    if args.blas1:
        env = dict(env, OPENBLAS_NUM_THREADS="1")
    if args.baseline:
        sides = [("before", dict(env, PYTHONPATH=args.baseline)), ("after", env)]
    else:
        on = {k: v for k, v in env.items() if k != "LAYERFLOW_NUMBA"}
        sides = [("numba off", dict(env, LAYERFLOW_NUMBA="0")), ("numba on", on)]
    print(f"{'model':<10}{'worker':<11}{'batch':>6}{'CPU s/step min':>16}{'median':>8}"
          f"{'wall s/step':>13}{'peak RSS MiB':>14}{'load':>6}")  # fmt: skip
    for model in args.models.split(","):
        batch = 64 if model == "vgg-step" else args.batch
        res: dict = {label: [] for label, _ in sides}
        for _ in range(args.pairs):
            for label, wenv in sides:
                r = _run_worker("layerflow", model, batch, args, wenv)
                if isinstance(r, str):
                    print(f"{model:<10}{label:<11} {r}", flush=True)
                    return
                res[label].append(r)
        for label, _ in sides:
            cpus = [statistics.median(r["cpu"][1:] or r["cpu"]) for r in res[label]]
            walls = [statistics.median(r["times"][1:] or r["times"]) for r in res[label]]
            rss = max(r["rss"] for r in res[label])
            load = max(r["load"] for r in res[label])
            print(f"{model:<10}{label:<11}{batch:>6}{min(cpus):>16.3f}"
                  f"{statistics.median(cpus):>8.3f}{statistics.median(walls):>13.3f}"
                  f"{rss:>14.0f}{load:>6.1f}", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="alexnet,vgg11,nin,googlenet,resnet18,densenet,vgg-step")
    ap.add_argument("--batch", type=int, default=16, help="batch (vgg-step always uses 64)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--only", help="comma-separated worker names")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--baseline", help="a layerflow source tree to run beside this one")
    ap.add_argument("--worker", nargs=2, metavar=("NAME", "MODEL"))
    ap.add_argument("--pairs", type=int, help="layerflow only: two workers by turns, N each")
    ap.add_argument("--blas1", action="store_true", help="with --pairs: one OpenBLAS thread")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.batch, args.steps)
        return
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}  # fmt: skip
    env["PYTHONPATH"] = str(ROOT)
    if args.pairs:
        pairs(args, env)
        return
    print(f"{'model':<10}{'framework':<12}{'batch':>6}{'median s/step':>15}{'ratio':>8}"
          f"{'CPU s/step':>12}{'ratio':>8}{'peak RSS MiB':>14}{'load':>6}")  # fmt: skip
    workers = list(WORKERS)
    if args.baseline:
        workers.insert(1, ("layerflow-0", "self"))
    for model in args.models.split(","):
        batch = 64 if model == "vgg-step" else args.batch
        base = cbase = None
        for name, python in workers:
            if args.only and name not in args.only.split(","):
                continue
            if python == "peers" and PEERS is None:
                continue
            exe = sys.executable if python == "self" else str(PEERS)
            cmd = [exe, __file__, "--worker", name, model, "--batch", str(batch),
                   "--steps", str(args.steps)]  # fmt: skip
            wenv = dict(env, PYTHONPATH=args.baseline) if name == "layerflow-0" else env
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=wenv,
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
            cpu = statistics.median(r["cpu"][1:] or r["cpu"])
            base, cbase = base or (med, cpu), cbase or cpu
            print(f"{model:<10}{name:<12}{batch:>6}{med:>15.3f}{med / base[0]:>8.2f}"
                  f"{cpu:>12.3f}{cpu / cbase:>8.2f}{r['rss']:>14.0f}{r['load']:>6.1f}",
                  flush=True)  # fmt: skip
    print(
        "(ratio = median s/step / layerflow's, same run; TF runs its step as a tf.function;\n"
        " CPU = the process's CPU seconds per step, all threads, spinning ones included; load =\n"
        " the 1-minute load average at the worker's end: above the core count, wall times\n"
        " measure the scheduler's share as much as the code)"
    )


if __name__ == "__main__":
    main()
