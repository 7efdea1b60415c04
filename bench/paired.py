"""Before/after of one bench on a shared machine: two checkouts alternate, quiet and contended.

On a machine where other jobs come and go, two bench runs minutes apart see different loads.
This driver runs the workers of one bench from two source trees (e.g. a `git worktree` of the
old commit and the current one) one after the other, each quiet and then beside a busy core
(`_common.busy_core`), `--reps` times, and prints the medians and slowdowns of each. Peers
(names prefixed `peer:`) run once per repetition with the peers' Python.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/paired.py \\
        --before ../old --after . mlp_epoch.py layerflow_tape,peer:jax -- --epochs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", required=True, help="the old source tree (has bench/)")
    ap.add_argument("--after", default=str(_common.ROOT), help="the new source tree")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--quiet-only", action="store_true", help="skip the contended runs")
    ap.add_argument("bench", help="e.g. mlp_epoch.py")
    ap.add_argument("workers", help="comma-separated worker names; peer:NAME for the peers")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then the bench's own flags")
    a = ap.parse_args()
    extra = [x for x in a.args if x != "--"]
    trees = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    }
    env.setdefault("LAYERFLOW_DATASETS", str(_common.DATA))
    drop_first = "--epochs" in extra  # epoch benches: the first epoch is warm-up
    res: dict = {}
    print(f"({_common.machine_load()} at start)", flush=True)
    for _ in range(a.reps):
        for w in a.workers.split(","):
            peer = w.startswith("peer:")
            name = w[5:] if peer else w
            if peer and _common.PEERS is None:
                continue
            runs = [("peer", trees["after"])] if peer else list(trees.items())
            for label, tree in runs:
                for busy in (False,) if a.quiet_only else (False, True):
                    exe = _common.PEERS if peer else sys.executable
                    cmd = [exe, os.path.join(tree, "bench", a.bench), "--worker", name, *extra]
                    with _common.busy_core(busy):
                        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                                              env=dict(env, PYTHONPATH=tree))  # fmt: skip
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                    if not lines:
                        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
                        print(f"{name} {label}: skipped ({tail[0][:160]})", file=sys.stderr)
                        continue
                    times = json.loads(lines[-1][len("RESULT ") :])["times"]
                    times = times[1:] if drop_first and len(times) > 1 else times
                    mode = "contended" if busy else "quiet"
                    res.setdefault((name, label, mode), []).extend(times)
                    print(f"  {name} {label} {mode}: {[round(t, 4) for t in times]} "
                          f"({_common.machine_load()})", file=sys.stderr, flush=True)  # fmt: skip
    print(f"{'worker':<28}{'tree':<8}{'quiet':>10}{'contended':>11}{'slowdown':>10}")
    for name, label in dict.fromkeys((k[0], k[1]) for k in res):
        q, c = res.get((name, label, "quiet")), res.get((name, label, "contended"))
        qm = statistics.median(q) if q else float("nan")
        cm = statistics.median(c) if c else float("nan")
        print(f"{name:<28}{label:<8}{qm:>10.4f}{cm:>11.4f}{cm / qm:>9.2f}x")
    print(f"({_common.machine_load()} at end; medians of seconds per epoch or step)")


if __name__ == "__main__":
    main()
