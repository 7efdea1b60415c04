"""Wall time of `import X` in a fresh interpreter (median of 5): layerflow against NumPy and the
peers ($LAYERFLOW_PEERS) that are installed. Target: layerflow
<= 0.2 s, NumPy's own import included.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import peers_python  # noqa: E402

CODE = "import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"


def measure(python: str, mod: str, runs: int = 5) -> float | None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    times = []
    for _ in range(runs):
        p = subprocess.run([python, "-c", CODE.format(mod=mod)], capture_output=True, text=True,
                           env=env, timeout=300)  # fmt: skip
        if p.returncode != 0:
            return None
        times.append(float(p.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    peers = peers_python()
    rows = [("numpy", sys.executable), ("layerflow", sys.executable)]
    if peers is not None:
        rows += [("jax", peers), ("torch", peers), ("tensorflow", peers)]
    for mod, python in rows:
        t = measure(python, mod, runs=5 if mod in ("numpy", "layerflow") else 3)
        print(f"import {mod:<11} {'not installed' if t is None else f'{t:.3f} s'}")
    t = measure(
        sys.executable, "layerflow; import sys; assert 'layerflow.keras' not in sys.modules"
    )
    print("layerflow import is lazy (no keras loaded):", t is not None)


if __name__ == "__main__":
    main()
