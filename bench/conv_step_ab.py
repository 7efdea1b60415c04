"""Whole training steps of a `cnn_step.py` model with a setting off and on, alternating step by
step in ONE process, so that both see the same load (issue 14).

Settings: `jit` (the compiled conv kernels, `backend.jit.use`), `wide` (im2col chunks on the
conv threads, `conv_threads.WIDE`). Prints the median wall, CPU and user CPU seconds per step
of each (user CPU leaves out the kernel's page-fault work, which varied by 0.03-0.15 s a step
on the shared VM).
`--blas1` pins BLAS to one thread (then compare CPU: the serial work).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv_step_ab.py alexnet jit
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv_step_ab.py nin wide
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("setting", choices=["jit", "wide"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=6, help="steps per setting (after one warm-up)")
    ap.add_argument("--blas1", action="store_true", help="one BLAS thread")
    a = ap.parse_args()
    import cnn_step

    import layerflow as tf
    from layerflow._src.backend import jit
    from layerflow._src.ops import conv_threads

    limit = contextlib.nullcontext()
    if a.blas1:
        from threadpoolctl import threadpool_limits

        limit = threadpool_limits(1)
    size, spec = cnn_step.MODELS[a.model]
    model = cnn_step._keras_model(tf, spec, size)
    x, y = cnn_step._data(size, a.batch)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(0.01)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return float(loss)

    @contextlib.contextmanager
    def setting(on: bool):
        if a.setting == "jit":
            with jit.use(on):
                yield
        else:
            before, conv_threads.WIDE = conv_threads.WIDE, on
            try:
                yield
            finally:
                conv_threads.WIDE = before

    res = {False: ([], [], []), True: ([], [], [])}  # wall, CPU, user CPU (no page faults)
    load0 = os.getloadavg()[0]
    with limit:
        for on in (False, True):  # warm-up: plans, kernels compiled or loaded
            with setting(on):
                step()
        for _ in range(a.steps):
            for on in (False, True):
                with setting(on):
                    u = resource.getrusage(resource.RUSAGE_SELF).ru_utime
                    t, c = time.perf_counter(), time.process_time()
                    step()
                    res[on][0].append(time.perf_counter() - t)
                    res[on][1].append(time.process_time() - c)
                    res[on][2].append(resource.getrusage(resource.RUSAGE_SELF).ru_utime - u)
    for on in (False, True):
        wall, cpu, user = (statistics.median(v) for v in res[on])
        print(f"{a.model} {a.setting}={'on' if on else 'off'}: {wall:.3f} s/step wall, "
              f"{cpu:.3f} CPU, {user:.3f} user CPU (medians of {a.steps}; min "
              f"{min(res[on][0]):.3f} wall, {min(res[on][1]):.3f} CPU, {min(res[on][2]):.3f} "
              "user)")  # fmt: skip
    print(f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}; blas1={a.blas1}")


if __name__ == "__main__":
    main()
