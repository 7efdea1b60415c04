"""`python -m layerflow.demo`: trains, saves, reloads with the same accuracy, plots (1 epoch)."""

import os
import re
import subprocess
import sys


def _run_demo(tmp_path, *args, env_changes=None):
    env = dict(os.environ)
    env.update(env_changes or {})
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "layerflow.demo", "--epochs", "1", "--out", str(out), *args],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, out


def _accuracies(stdout):
    return [float(a) for a in re.findall(r"test accuracy[^:\n]*: ([0-9.]+)", stdout)]


def _check_outputs(proc, out):
    accuracies = _accuracies(proc.stdout)
    assert len(accuracies) == 2 and accuracies[0] == accuracies[1], proc.stdout
    assert accuracies[0] > 0.5  # one epoch on the sample is far above chance (0.1)
    assert (out / "mlp.params").stat().st_size > 4 * (784 * 256 + 256 * 10)
    assert (out / "mlp_training.png").read_bytes()[:4] == b"\x89PNG"
    assert "Epoch 1/1" in proc.stdout  # progress is shown


def test_demo_on_the_sample(tmp_path):
    proc, out = _run_demo(tmp_path, "--sample", "--seed", "1")
    assert "SAMPLE shipped with layerflow" in proc.stdout
    _check_outputs(proc, out)


def test_demo_falls_back_to_the_sample_when_data_and_network_are_missing(tmp_path):
    proc, out = _run_demo(
        tmp_path,
        env_changes={
            "LAYERFLOW_DATASETS": str(tmp_path / "no-data"),
            "HOME": str(tmp_path / "home"),
            "LAYERFLOW_DATASETS_MIRROR": "http://127.0.0.1:9",  # a closed port
        },
    )
    assert "Falling back to the small sample" in proc.stderr
    assert "SAMPLE shipped with layerflow" in proc.stdout
    _check_outputs(proc, out)
