"""A checkpoint state file is input: it can never make CheckpointManager list or delete a file
outside its folder, or a file in it that is not one of its own checkpoints."""

import os

import pytest

import layerflow as tf


def _plant_state(folder, *entries, latest=None):
    lines = [f'model_checkpoint_path: "{latest or entries[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{e}"' for e in entries]
    (folder / "checkpoint").write_text("\n".join(lines) + "\n")


def _victims(tmp_path):
    outside = tmp_path / "victim.txt"
    outside.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    inside = run / "notes.txt"  # in the folder, but not a checkpoint of this manager
    inside.write_text("precious too")
    other = run / "other-1"  # another prefix's checkpoint
    other.write_text("not ours")
    return run, [outside, inside, other]


@pytest.mark.parametrize("style", ["relative", "absolute"])
def test_manager_never_deletes_or_lists_foreign_files(tmp_path, style):
    run, victims = _victims(tmp_path)
    names = ["../victim.txt", "notes.txt", "other-1"]
    if style == "absolute":
        names = [str(p) for p in victims]
    _plant_state(run, *names)
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    with pytest.warns(UserWarning, match=r"Ignoring 3 entries .*victim\.txt"):
        manager = tf.train.CheckpointManager(ckpt, str(run), max_to_keep=1)
    assert manager.checkpoints == [] and manager.latest_checkpoint is None
    for _ in range(3):  # rotation: the oldest beyond max_to_keep is deleted
        manager.save()
    assert all(p.exists() for p in victims)
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-3"]
    assert sorted(os.listdir(run)) == ["checkpoint", "ckpt-3", "notes.txt", "other-1"]


def test_dot_dot_inside_the_name_cannot_escape(tmp_path):
    run, victims = _victims(tmp_path)
    (tmp_path / "ckpt-7").write_text("outside, with our own name")
    _plant_state(run, "../ckpt-7", "sub/../../ckpt-7", "ckpt-1")
    (run / "ckpt-1").write_text("ours")
    with pytest.warns(UserWarning, match="Ignoring 2 entries"):
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(), str(run), max_to_keep=1)
    assert manager.checkpoints == [str(run / "ckpt-1")]
    manager.save(checkpoint_number=2)
    assert (tmp_path / "ckpt-7").read_text() == "outside, with our own name"
    assert not (run / "ckpt-1").exists()  # ours, and rotated out
    assert manager.checkpoints == [str(run / "ckpt-2")]


def test_own_checkpoints_listed_by_absolute_path_still_rotate(tmp_path):
    run = tmp_path / "run"
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    first = tf.train.CheckpointManager(ckpt, str(run), max_to_keep=2).save()
    _plant_state(run, os.path.abspath(first))  # TF 1 wrote absolute paths
    manager = tf.train.CheckpointManager(ckpt, str(run), max_to_keep=1)
    assert manager.checkpoints == [first]
    manager.save()
    assert not os.path.exists(first)


def test_damaged_state_file_lines_are_ignored_not_raised(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint").write_bytes(
        b'model_checkpoint_path: "bad\\x"\nall_model_checkpoint_paths: "nul\\000"\n'
    )
    with pytest.warns(UserWarning, match="Ignoring 2 entries"):
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(), str(run), max_to_keep=1)
    assert manager.latest_checkpoint is None


def test_escaped_names_round_trip(tmp_path):
    run = tmp_path / "run"
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    name = 'ck"é\\pt'
    path = tf.train.CheckpointManager(ckpt, str(run), 2, checkpoint_name=name).save()
    again = tf.train.CheckpointManager(ckpt, str(run), 2, checkpoint_name=name)
    assert again.checkpoints == [path] and os.path.exists(path)


def test_checkpoint_name_must_be_a_file_name(tmp_path):
    with pytest.raises(ValueError, match="plain file name"):
        tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), 1, checkpoint_name="../x")


def test_write_and_save_create_missing_folders(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(2.0))
    written = ckpt.write(str(tmp_path / "a" / "b" / "weights"))
    saved = ckpt.save(str(tmp_path / "c" / "d" / "ckpt"))
    assert os.path.isfile(written) and os.path.isfile(saved)
    assert tf.train.latest_checkpoint(str(tmp_path / "c" / "d")) == saved
