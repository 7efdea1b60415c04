"""PreemptionCheckpointHandler, TerminationConfig, PreemptionWatcher (local mode, as TF)."""

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

import layerflow as tf

E = tf.distribute.experimental
WORKER = pathlib.Path(__file__).with_name("preemption_worker.py")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _spawn(directory, total):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(directory), str(total)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
def test_sigterm_saves_a_checkpoint_and_a_restart_resumes(tmp_path):
    lines = []
    with _spawn(tmp_path, 1000) as proc:
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("step 3"):
                proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        err = proc.stderr.read()
    assert proc.returncode == 42, err
    steps = [int(x.split()[1]) for x in lines if x.startswith("step")]
    # TF's rule: finish the step in flight, run one more, checkpoint before the next.
    last = steps[-1]
    assert 4 <= last < 20 and "done" not in " ".join(lines)
    state = json.loads((tmp_path / "preemption_state.json").read_text())
    assert state["runs"] == last and state["checkpoint"] == f"ckpt-{1}"
    # The restarted program restores the variable and the run count, and finishes.
    with _spawn(tmp_path, last + 2) as proc:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.splitlines()[0] == f"start {last} {float(last)}"
    assert out.splitlines()[-1] == f"done {last + 2} {float(last + 2)}"


def _handler(tmp_path, **config):
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    exits = []
    cfg = E.TerminationConfig(exit_fn=lambda: exits.append(True), **config)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    return v, manager, exits, E.PreemptionCheckpointHandler(None, manager, termination_config=cfg)


def test_watcher_fn_schedules_save_after_one_more_step(tmp_path):
    notice = []
    v, manager, exits, h = _handler(tmp_path, termination_watcher_fn=lambda: bool(notice))
    h.run(lambda: v.assign_add(1.0))
    assert h.total_run_calls == 1 and manager.latest_checkpoint is None
    notice.append(True)
    h._received_own_sigterm.wait(5)  # the poller saw the notice
    h.run(lambda: v.assign_add(1.0))  # schedules the save for after this step
    assert manager.latest_checkpoint is None and not exits
    h.run(lambda: v.assign_add(1.0))  # saves before running, then calls exit_fn
    assert manager.latest_checkpoint is not None and exits == [True]
    v.assign(-1.0)
    tf.train.Checkpoint(v=v).restore(manager.latest_checkpoint)
    assert float(v) == 2.0


def test_save_checkpoint_if_preempted_counts_and_saves(tmp_path):
    v, manager, exits, h = _handler(tmp_path)
    h.save_checkpoint_if_preempted()
    assert h.total_run_calls == 1
    h._on_termination_notice()
    h.save_checkpoint_if_preempted()
    h.save_checkpoint_if_preempted()
    assert exits == [True] and manager.latest_checkpoint is not None


def test_grace_period_keeps_training_then_saves(tmp_path):
    v, manager, exits, h = _handler(tmp_path, grace_period=3600)
    h._on_termination_notice()
    for _ in range(3):
        h.run(lambda: None)
    # First save happens, but with time left in the grace period training goes on.
    assert manager.latest_checkpoint is not None and not exits
    for _ in range(5):
        h.run(lambda: None)
    assert not exits


def test_tampered_state_is_ignored(tmp_path):
    v, manager, exits, h = _handler(tmp_path)
    h._on_termination_notice()
    h.run(lambda: None)
    h.run(lambda: None)
    assert exits
    (tmp_path / "preemption_state.json").write_text(json.dumps({"runs": "many"}))
    _, _, _, again = _handler(tmp_path)
    assert again.total_run_calls == 0


def test_argument_errors(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="checkpoint_dir"):
        E.PreemptionCheckpointHandler(None, ckpt)
    with pytest.raises(TypeError, match="Checkpoint or a"):
        E.PreemptionCheckpointHandler(None, object(), str(tmp_path))
    spec = tf.distribute.cluster_resolver.SimpleClusterResolver
    from layerflow._src.distribute.cluster_spec import ClusterSpec

    two = spec(ClusterSpec({"worker": ["a:1", "b:1"]}), task_type="worker", task_id=0)
    with pytest.raises(NotImplementedError, match="2 workers"):
        E.PreemptionCheckpointHandler(two, ckpt, str(tmp_path))
    ps = spec(ClusterSpec({"ps": ["a:1"]}))
    with pytest.raises(NotImplementedError, match="ParameterServerStrategy"):
        E.PreemptionCheckpointHandler(ps, ckpt, str(tmp_path))
    with pytest.raises(ValueError, match="grace_period"):
        E.TerminationConfig(grace_period=-1)
    with pytest.raises(TypeError, match="exit_fn must be callable"):
        E.TerminationConfig(exit_fn=3)


def test_preemption_watcher_records_sigterm():
    previous = signal.getsignal(signal.SIGTERM)
    try:
        w = E.PreemptionWatcher()
        assert w.preemption_message is None
        os.kill(os.getpid(), signal.SIGTERM)
        assert "SIGTERM" in w.preemption_message
        assert w.block_until_worker_exit() is None
    finally:
        signal.signal(signal.SIGTERM, previous)
