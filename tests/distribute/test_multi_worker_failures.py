"""MultiWorkerMirroredStrategy under `mpiexec -n 2`: failing, exiting and disagreeing workers
stop the job with errors that name the worker, never a hang (each run has a timeout)."""

import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

WORKER = pathlib.Path(__file__).with_name("mpi_failures.py")
TIMEOUT_S = 60


def _run(mode):
    pytest.importorskip("mpi4py")
    here = pathlib.Path(sys.executable).parent / "mpiexec"
    mpiexec = str(here) if here.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [mpiexec, "-n", "2", sys.executable, str(WORKER), mode],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"mpiexec {mode}: the job hung for {TIMEOUT_S} s: {err.stdout}{err.stderr}")
    return proc, proc.stdout + proc.stderr, time.monotonic() - start


def test_disagreeing_collectives_and_uneven_data_raise_on_every_worker():
    proc, out, _ = _run("checks")
    assert proc.returncode == 0, out
    assert "CHECKS OK rank 0" in out and "CHECKS OK rank 1" in out, out
    assert "MPI_Abort" not in out and "Fatal error" not in out, out


def test_a_worker_that_raises_stops_the_job_naming_it():
    proc, out, took = _run("raise")
    assert proc.returncode != 0, out
    assert "KeyError: 'boom in rank 1'" in out, out
    assert "rank 1 failed" in out, out
    # Rank 0 was waiting in a collective and says which worker it lost.
    assert "UnavailableError" in out and "worker rank(s) [1] stopped" in out, out
    assert "passed the collective" not in out, out


def test_a_worker_that_exits_early_does_not_leave_the_others_waiting():
    proc, out, _ = _run("exit")
    assert proc.returncode != 0, out
    assert "rank 1 exited after 1 collective call(s)" in out, out
    assert "UnavailableError" in out and "rank 0 waits in collective #2" in out, out
    assert "passed the collective" not in out, out


def test_a_busy_worker_is_stopped_within_seconds_when_another_fails():
    proc, out, took = _run("busy")
    assert proc.returncode != 0, out
    assert "rank 1 of 2 failed (RuntimeError: rank 1 broke while rank 0 computes)" in out, out
    assert "MPI_Abort" in out, out
    assert "finished sleeping" not in out, out
    assert took < 45, (took, out)
