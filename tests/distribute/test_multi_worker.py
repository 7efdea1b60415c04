"""MultiWorkerMirroredStrategy: two MPI processes when mpi4py and mpiexec exist."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import layerflow as tf

WORKER = pathlib.Path(__file__).with_name("mpi_worker.py")


def _mpiexec():
    here = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def test_missing_mpi4py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r"layerflow\[mpi\]"):
        tf.distribute.MultiWorkerMirroredStrategy()


def test_two_processes_train_like_one():
    pytest.importorskip("mpi4py")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [mpiexec, "-n", "2", sys.executable, str(WORKER)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Both ranks share stdout, so their lines may interleave.
    assert sorted(re.findall(r"OK rank \d", proc.stdout)) == ["OK rank 0", "OK rank 1"]
