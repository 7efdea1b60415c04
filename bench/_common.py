"""Shared helpers for the training benchmarks: data, subprocess workers, the report table.

Each framework trains in its own process (so peak RSS is its own), started with the right
interpreter: layerflow and NumPy with this one, the peers with the Python named by the one
environment variable LAYERFLOW_PEERS (a venv with tensorflow-cpu, tf-keras, torch, jax;
unset: the peers are skipped).
Run under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` (the workers drop them too).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PEERS_ENV = "LAYERFLOW_PEERS"


def peers_python() -> str | None:
    """The peers' interpreter from $LAYERFLOW_PEERS, or None when it is unset or missing."""
    path = os.environ.get(PEERS_ENV)
    return path if path and os.path.exists(path) else None


PEERS = peers_python()
DATA = pathlib.Path(os.environ.get("LAYERFLOW_DATASETS", ROOT.parent / "shared" / "data"))


def load_fashion_mnist():
    import numpy as np

    def read(name, offset):
        with gzip.open(DATA / "fashion-mnist" / name, "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    xtr = read("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    ytr = read("train-labels-idx1-ubyte.gz", 8)
    xte = read("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    yte = read("t10k-labels-idx1-ubyte.gz", 8)
    return (
        (xtr / 255.0).astype(np.float32),
        ytr.astype(np.int64),
        (xte / 255.0).astype(np.float32),
        yte.astype(np.int64),
    )


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# CPU seconds (process_time) of each timed epoch, filled by workers that measure them.
CPU: list[float] = []
# Lines a worker wants shown beside its result (e.g. the first call's trace time).
NOTES: list[str] = []


def emit(name: str, times: list[float], acc: float) -> None:
    result = {"name": name, "times": times, "acc": acc, "rss": peak_rss_mib()}
    if CPU:
        result["cpu"] = list(CPU)
    if NOTES:
        result["notes"] = list(NOTES)
    print("RESULT " + json.dumps(result))


@contextlib.contextmanager
def busy_core(active: bool = True):
    """While active: one other process keeps one core busy (an unpinned Python busy loop, as
    another user's job would), so a bench measures the contended machine."""
    if not active:
        yield
        return
    # It spins until its parent goes away (reparented: a killed bench leaves no spinner). In a
    # session of its own, as another user's job is: where the kernel groups CPU time by
    # session (autogroup), a spinner in the bench's session would halve the worker's share.
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"
    proc = subprocess.Popen([sys.executable, "-c", spin], start_new_session=True)
    try:
        import time

        time.sleep(0.3)  # let it reach the scheduler before the worker starts
        yield
    finally:
        proc.terminate()
        proc.wait()


def machine_load() -> str:
    """The 1/5/15-minute load averages and the core count, for the report's header."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def run_workers(script: str, workers: list[tuple[str, str]], epochs: int, timeout: int) -> list:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    env.setdefault("LAYERFLOW_DATASETS", str(DATA))
    env["PYTHONPATH"] = str(ROOT)
    results = []
    for name, python in workers:
        if python == "peers" and PEERS is None:
            continue
        exe = sys.executable if python == "self" else str(PEERS)
        cmd = [exe, script, "--worker", name, "--epochs", str(epochs)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            print(f"{name}: timed out after {timeout}s", file=sys.stderr)
            continue
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            print(f"{name}: skipped ({tail[0][:160]})", file=sys.stderr)
            continue
        results.append(json.loads(lines[-1][len("RESULT ") :]))
        r = results[-1]
        print(
            f"  {name}: {[round(t, 3) for t in r['times']]} s/epoch, acc {r['acc']:.4f}",
            file=sys.stderr,
            flush=True,
        )
        for note in r.get("notes", []):
            print(f"    {note}", file=sys.stderr, flush=True)
    return results


def report_contention(quiet: list, contended: list, title: str) -> None:
    """Quiet and contended medians side by side, and their ratio (the slowdown)."""
    print(title)
    print(f"{'run':<24}{'quiet s/epoch':>15}{'contended':>11}{'slowdown':>10}")
    busy = {r["name"]: r for r in contended}
    for r in quiet:
        q = statistics.median(r["times"][1:] or r["times"])
        c = busy.get(r["name"])
        if c is None:
            print(f"{r['name']:<24}{q:>15.3f}{'-':>11}{'-':>10}")
            continue
        cm = statistics.median(c["times"][1:] or c["times"])
        print(f"{r['name']:<24}{q:>15.3f}{cm:>11.3f}{cm / q:>9.2f}x")
    print("(contended: another process keeps one core busy during the run; same run)")


def report(results: list, baseline: str, title: str) -> None:
    base = next((r for r in results if r["name"] == baseline), None)
    print(title)
    print(f"{'run':<24}{'median s/epoch':>16}{'ratio':>9}{'test acc':>10}{'peak RSS MiB':>14}")
    for r in results:
        # The first epoch pays for warm-up (allocations, builds, jit); the median of the
        # rest is the steady state, when there are several.
        steady = r["times"][1:] or r["times"]
        med = statistics.median(steady)
        r["median"] = med
        ratio = (
            med / statistics.median(base["times"][1:] or base["times"]) if base else float("nan")
        )
        print(f"{r['name']:<24}{med:>16.3f}{ratio:>9.2f}{r['acc']:>10.4f}{r['rss']:>14.0f}")
    if base:
        print(f"(ratio = median seconds per epoch / {baseline}'s, same run)")
    timed = [r for r in results if r.get("cpu")]
    if timed:
        base_cpu = next((r for r in timed if r["name"] == baseline), None)
        bmed = statistics.median(base_cpu["cpu"][1:] or base_cpu["cpu"]) if base_cpu else None
        print(f"{'run':<24}{'median CPU s/epoch':>20}{'ratio':>9}{'RSS ratio':>11}")
        for r in timed:
            med = statistics.median(r["cpu"][1:] or r["cpu"])
            ratio = med / bmed if bmed else float("nan")
            rss = r["rss"] / base["rss"] if base else float("nan")
            print(f"{r['name']:<24}{med:>20.3f}{ratio:>9.2f}{rss:>11.2f}")
        print("(CPU = the process's CPU seconds, all threads: least distorted by a loaded machine)")


def main(script: str, doc: str | None, workers: list, default_epochs: int, timeout: int,
         baseline: str, title: str) -> None:  # fmt: skip
    """The command line every training bench shares: `--epochs`, `--only a,b`, and the
    internal `--worker NAME` that runs one framework in its own process.

    `workers` holds (name, "self" | "peers", function); `title` may use `{epochs}`."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--epochs", type=int, default=default_epochs)
    ap.add_argument("--worker")
    ap.add_argument("--only", help="comma-separated worker names")
    ap.add_argument(
        "--contention",
        action="store_true",
        help="run each worker quiet, then beside a busy-loop process; report both",
    )
    args = ap.parse_args()
    if args.worker:
        {n: f for n, _, f in workers}[args.worker](args.epochs)
        return
    chosen = [(n, py) for n, py, _ in workers if not args.only or n in args.only.split(",")]
    print(f"({machine_load()} at start)")
    if not args.contention:
        results = run_workers(script, chosen, args.epochs, timeout=timeout)
        report(results, baseline, title.format(epochs=args.epochs))
        return
    quiet, contended = [], []
    for worker in chosen:  # quiet then contended, worker by worker: the same load drift
        quiet += run_workers(script, [worker], args.epochs, timeout=timeout)
        with busy_core():
            contended += run_workers(script, [worker], args.epochs, timeout=timeout)
    report(quiet, baseline, title.format(epochs=args.epochs) + ", quiet")
    report_contention(quiet, contended, title.format(epochs=args.epochs))
    print(f"({machine_load()} at end)")
