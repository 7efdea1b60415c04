"""tf.train.Checkpoint / CheckpointManager / latest_checkpoint, and exact resume of training."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import layerflow as tf

from .fakes import FakeModel

X = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)


def test_save_numbers_and_latest_checkpoint(tmp_path):
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v)
    p1 = ckpt.save(str(tmp_path / "ckpt"))
    v.assign([5.0, 6.0])
    p2 = ckpt.save(str(tmp_path / "ckpt"))
    assert (os.path.basename(p1), os.path.basename(p2)) == ("ckpt-1", "ckpt-2")
    assert tf.train.latest_checkpoint(str(tmp_path)) == p2
    state = (tmp_path / "checkpoint").read_text()
    assert 'model_checkpoint_path: "ckpt-2"' in state
    assert 'all_model_checkpoint_paths: "ckpt-1"' in state
    ckpt.restore(p1).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert int(ckpt.save_counter.numpy()) == 1  # restored, so numbering continues from there


def test_write_read_and_restore_none(tmp_path):
    v = tf.Variable(3.0)
    ckpt = tf.train.Checkpoint(v=v)
    assert ckpt.write(str(tmp_path / "plain")) == str(tmp_path / "plain")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # write does not record
    v.assign(0.0)
    ckpt.read(str(tmp_path / "plain")).assert_consumed()
    assert float(v.numpy()) == 3.0
    ckpt.restore(None)  # TF: nothing to restore, no error


def test_deferred_restore_into_unbuilt_model(tmp_path):
    model = FakeModel(seed=1)
    y = model(X)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    fresh = FakeModel(seed=9)
    status = tf.train.Checkpoint(model=fresh).restore(path)
    assert "model/hidden/kernel" in status.pending
    np.testing.assert_array_equal(fresh(X), y)
    status.assert_consumed()


def test_restore_is_lenient_on_structure_and_strict_on_shapes(tmp_path):
    a = tf.Variable(np.ones((2, 2), np.float32))
    path = tf.train.Checkpoint(a=a).save(str(tmp_path / "ckpt"))
    b = tf.Variable(np.zeros((2, 2), np.float32))
    extra = tf.Variable(0.0)
    status = tf.train.Checkpoint(a=b, extra=extra).restore(path)
    np.testing.assert_array_equal(b.numpy(), 1.0)
    assert status.missing == ["extra"]
    with pytest.raises(AssertionError, match="extra"):
        status.assert_consumed()
    with pytest.raises(ValueError, match=r"'a'.*\(3,\)"):
        tf.train.Checkpoint(a=tf.Variable(np.zeros(3, np.float32))).restore(path)


def test_manager_keeps_max_to_keep_and_survives_restart(tmp_path):
    v = tf.Variable(0)
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "run"), max_to_keep=2)
    assert manager.latest_checkpoint is None
    paths = []
    for i in range(4):
        v.assign(i)
        paths.append(manager.save())
    assert [os.path.basename(p) for p in paths] == ["ckpt-1", "ckpt-2", "ckpt-3", "ckpt-4"]
    assert manager.checkpoints == paths[2:]
    assert sorted(os.listdir(tmp_path / "run")) == ["checkpoint", "ckpt-3", "ckpt-4"]
    again = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path / "run"), 2)
    assert again.latest_checkpoint == paths[-1] and again.checkpoints == paths[2:]
    assert tf.train.latest_checkpoint(str(tmp_path / "run")) == paths[-1]
    v.assign(100)
    assert again.restore_or_initialize() == paths[-1]
    assert int(v.numpy()) == 3


def test_checkpoint_refuses_non_trackables():
    with pytest.raises(ValueError, match="'x' must be a trackable"):
        tf.train.Checkpoint(x=[1, 2])


# --- exact resume -------------------------------------------------------------------------------
TRAIN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import layerflow as tf
    from layerflow._src.keras.optimizers import get as get_optimizer

    mode, folder, epochs, opt_name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 5)).astype(np.float32)
    Y = (X @ rng.normal(size=(5, 1))).astype(np.float32)
    w = tf.Variable(np.full((5, 1), 0.1, np.float32), name="w")
    b = tf.Variable(np.zeros((1,), np.float32), name="b")
    opt = get_optimizer({"class_name": opt_name, "config": {"learning_rate": 0.05}})
    ckpt = tf.train.Checkpoint(w=w, b=b, optimizer=opt)
    if mode == "resume":
        if hasattr(opt, "build"):
            opt.build([w, b])
        ckpt.restore(tf.train.latest_checkpoint(folder)).assert_consumed()
    start = int(opt.iterations.numpy()) // 4
    for epoch in range(start, start + epochs):
        order = np.random.default_rng(epoch).permutation(64)
        for i in range(0, 64, 16):
            idx = order[i : i + 16]
            with tf.GradientTape() as tape:
                err = tf.matmul(tf.constant(X[idx]), w) + b - tf.constant(Y[idx])
                loss = tf.reduce_mean(err * err)
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
    if mode != "straight":
        tf.train.CheckpointManager(ckpt, folder, max_to_keep=3).save()
    np.save(folder + "/" + mode + ".npy", np.concatenate([w.numpy().ravel(), b.numpy()]))
    """
)


def _run(*args):
    out = subprocess.run([sys.executable, "-c", TRAIN, *map(str, args)], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_exact_resume_in_a_new_process(tmp_path, opt_name):
    _run("straight", tmp_path, 4, opt_name)
    _run("first", tmp_path, 2, opt_name)
    _run("resume", tmp_path, 2, opt_name)
    straight = np.load(tmp_path / "straight.npy")
    first = np.load(tmp_path / "first.npy")
    resumed = np.load(tmp_path / "resume.npy")
    assert not np.array_equal(first, straight)  # the last two epochs did change something
    np.testing.assert_array_equal(resumed, straight)  # bit for bit
