"""TensorBoard (read back with TensorBoard's EventAccumulator), BackupAndRestore (a SIGKILLed
fit resumes at the same epoch and batch with identical weights), RemoteMonitor (against a
127.0.0.1 server), BaseLogger."""

from __future__ import annotations

import http.server
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import urllib.parse

import numpy as np
import pytest

import layerflow as tf

REPO = pathlib.Path(__file__).resolve().parents[3]


def _data(n=40):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5]], np.float32))


def _model():
    init = tf.keras.initializers.GlorotUniform(seed=3)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((3,)),
            tf.keras.layers.Dense(4, activation="tanh", kernel_initializer=init),
            tf.keras.layers.Dense(1, kernel_initializer=init),
        ]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    return model


# --- TensorBoard ----------------------------------------------------------------------------------
def _read(run):
    pea = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator")
    from tensorboard.util import tensor_util

    acc = pea.EventAccumulator(str(run), size_guidance={"tensors": 0})
    acc.Reload()
    return {
        tag: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]
        for tag in acc.Tags()["tensors"]
    }, acc


def test_tensorboard_epoch_scalars_histograms_images_and_graph(tmp_path):
    pytest.importorskip("tensorboard")
    x, y = _data()
    model = _model()
    tb = tf.keras.callbacks.TensorBoard(tmp_path, histogram_freq=2, write_images=True)
    hist = model.fit(x, y, epochs=3, batch_size=8, validation_split=0.25, callbacks=[tb], verbose=0)
    train, acc = _read(tmp_path / "train")
    val, _ = _read(tmp_path / "validation")
    for name in ("loss", "mae"):
        np.testing.assert_allclose(
            [float(v) for _, v in train["epoch_" + name]], hist.history[name], rtol=1e-6
        )
        np.testing.assert_allclose(
            [float(v) for _, v in val["epoch_" + name]], hist.history["val_" + name], rtol=1e-6
        )
        assert [s for s, _ in train["epoch_" + name]] == [0, 1, 2]
    # update_freq="epoch": no batch scalars; evaluation scalars at the optimizer's steps
    assert not any(tag.startswith("batch_") for tag in train)
    assert [s for s, _ in val["evaluation_loss_vs_iterations"]] == [4, 8, 12]
    # histograms at epochs 0 and 2 of every weight, with the weights' values at that time
    kernel = model.layers[0].kernel
    tag = kernel.name.replace(":", "_") + "/histogram"
    assert [s for s, _ in train[tag]] == [0, 2]
    buckets = train[tag][-1][1]
    assert buckets[:, 2].sum() == kernel.numpy().size
    assert buckets[0, 0] == pytest.approx(kernel.numpy().min(), rel=1e-6)
    image_tag = kernel.name.replace(":", "_") + "/image"
    assert acc.SummaryMetadata(image_tag).plugin_data.plugin_name == "images"
    assert train[image_tag][0][1][:2].tolist() == [b"4", b"3"]  # the (3, 4) kernel, 3 high
    # the Keras model structure for the Graphs dashboard
    assert acc.SummaryMetadata("keras").plugin_data.plugin_name == "graph_keras_model"
    config = json.loads(train["keras"][0][1].item())
    assert config["class_name"] == "Sequential"


def test_tensorboard_batch_level_and_learning_rate(tmp_path):
    pytest.importorskip("tensorboard")
    x, y = _data()
    model = _model()
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.05, 5, 0.5)
    model.compile(optimizer=tf.keras.optimizers.SGD(schedule), loss="mse")
    seen = []
    logger = tf.keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: seen.append(logs["loss"])
    )
    tb = tf.keras.callbacks.TensorBoard(tmp_path, update_freq=3, write_graph=False)
    model.fit(x, y, epochs=2, batch_size=8, callbacks=[logger, tb], verbose=0)
    train, _ = _read(tmp_path / "train")
    assert "keras" not in train
    steps = [s for s, _ in train["batch_loss"]]
    assert steps == [3, 6, 9]  # every 3 optimizer steps (10 in all)
    np.testing.assert_allclose(
        [float(v) for _, v in train["batch_loss"]], [seen[2], seen[5], seen[8]], rtol=1e-6
    )
    np.testing.assert_allclose(
        [float(v) for _, v in train["epoch_learning_rate"]],
        [0.05 * 0.5 ** (5 / 5), 0.05 * 0.5 ** (10 / 5)],
        rtol=1e-6,
    )


def test_tensorboard_arguments():
    pytest.importorskip("tensorboard")
    with pytest.raises(ValueError, match="update_freq"):
        tf.keras.callbacks.TensorBoard(update_freq="sometimes")
    with pytest.raises(ValueError, match="Unrecognized arguments"):
        tf.keras.callbacks.TensorBoard(histogram_frequency=1)
    with pytest.warns(UserWarning, match="profiling is not available"):
        tf.keras.callbacks.TensorBoard(profile_batch=(2, 4))
    assert tf.keras.callbacks.TensorBoard(update_freq="batch").update_freq == 1


# --- BackupAndRestore ---------------------------------------------------------------------------
SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys
    import numpy as np
    import layerflow as tf

    backup, log, save_freq, die_at, how = sys.argv[1:6]
    save_freq = {"epoch": "epoch", "false": False}.get(save_freq, save_freq)
    save_freq = int(save_freq) if isinstance(save_freq, str) and save_freq.isdigit() else save_freq
    die_at = tuple(int(v) for v in die_at.split(",")) if die_at != "-" else None
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    init = tf.keras.initializers.GlorotUniform(seed=3)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(4, activation="tanh", kernel_initializer=init),
        tf.keras.layers.Dense(1, kernel_initializer=init),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    state = {"epoch": 0}

    def begin(epoch, logs):
        state["epoch"] = epoch

    def batch_begin(batch, logs):
        with open(log, "a") as f:
            f.write(json.dumps([state["epoch"], batch]) + "\\n")

    def batch_end(batch, logs):
        if die_at == (state["epoch"], batch):
            os.kill(os.getpid(), signal.SIGKILL if how == "kill" else signal.SIGTERM)

    probe = tf.keras.callbacks.LambdaCallback(
        on_epoch_begin=begin, on_train_batch_begin=batch_begin, on_train_batch_end=batch_end)
    backup_cb = tf.keras.callbacks.BackupAndRestore(
        backup, save_freq=save_freq, save_before_preemption=(how == "term"),
        delete_checkpoint=(how != "keep"))
    model.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0,
              callbacks=[backup_cb, probe])
    np.save(os.path.join(os.path.dirname(log), "weights.npy"),
            np.concatenate([w.ravel() for w in model.get_weights()]))
    """
)


def _run(tmp_path, name, save_freq, die_at, how="kill"):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "backup"), str(folder / "log.jsonl"),
         str(save_freq), die_at, how],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    events = [tuple(json.loads(line)) for line in (folder / "log.jsonl").read_text().splitlines()]
    return proc, events, folder


def _weights(folder):
    return np.load(folder / "weights.npy")


@pytest.mark.parametrize(
    "save_freq, resume_at",
    [(2, (1, 3)), ("epoch", (1, 0))],  # int: the last backup after batch 3 of epoch 1
)
def test_backup_and_restore_resumes_a_killed_fit(tmp_path, save_freq, resume_at):
    reference, ref_events, ref_folder = _run(tmp_path, "reference", save_freq, "-", "keep")
    assert reference.returncode == 0, reference.stderr
    (tmp_path / "backup" / "chief" / "checkpoint").unlink()  # kept by "keep": start afresh
    killed, events, _ = _run(tmp_path, "killed", save_freq, "1,3")
    assert killed.returncode == -signal.SIGKILL
    assert events[-1] == (1, 3)
    assert (tmp_path / "backup" / "chief" / "checkpoint").exists()
    resumed, events, folder = _run(tmp_path, "resumed", save_freq, "-")
    assert resumed.returncode == 0, resumed.stderr
    # it starts where the last backup was and trains the rest, batch for batch
    assert events[0] == resume_at
    assert events == ref_events[ref_events.index(resume_at) :]
    np.testing.assert_array_equal(_weights(folder), _weights(ref_folder))
    # delete_checkpoint=True: a finished fit removes its backup
    assert not (tmp_path / "backup" / "chief" / "checkpoint").exists()


def test_backup_before_preemption_on_sigterm(tmp_path):
    reference, ref_events, ref_folder = _run(tmp_path, "reference", "false", "-", "keep")
    (tmp_path / "backup" / "chief" / "checkpoint").unlink(missing_ok=True)
    assert reference.returncode == 0, reference.stderr
    term, events, _ = _run(tmp_path, "term", "false", "0,2", "term")
    assert term.returncode == 42, term.stderr
    # SIGTERM came after batch 2 had been handled: batch 3 runs, then the backup and the exit
    assert events[-1] == (0, 3)
    resumed, events, folder = _run(tmp_path, "resumed", "false", "-")
    assert resumed.returncode == 0, resumed.stderr
    assert events[0] == (0, 4)
    np.testing.assert_array_equal(_weights(folder), _weights(ref_folder))


def test_backup_and_restore_arguments_and_alias(tmp_path):
    with pytest.raises(ValueError, match="backup_dir"):
        tf.keras.callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq"):
        tf.keras.callbacks.BackupAndRestore(tmp_path, save_freq="step")
    with pytest.raises(ValueError, match="save_freq"):
        tf.keras.callbacks.BackupAndRestore(tmp_path, save_freq=0)
    assert tf.keras.callbacks.experimental.BackupAndRestore is tf.keras.callbacks.BackupAndRestore
    # a finished fit with delete_checkpoint=False keeps its last (epoch-end) backup
    x, y = _data()
    model = _model()
    cb = tf.keras.callbacks.BackupAndRestore(tmp_path, delete_checkpoint=False)
    model.fit(x, y, epochs=2, batch_size=8, callbacks=[cb], verbose=0)
    assert (tmp_path / "chief" / "checkpoint").exists()
    # fitting again resumes after the last epoch: nothing left to train
    before = [w.copy() for w in model.get_weights()]
    hist = model.fit(x, y, epochs=2, batch_size=8, callbacks=[cb], verbose=0)
    assert hist.history == {}
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


# --- RemoteMonitor ------------------------------------------------------------------------------
@pytest.fixture
def server():
    received = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", received
    httpd.shutdown()
    httpd.server_close()


def test_remote_monitor_posts_form_and_json(server):
    root, received = server
    x, y = _data()
    model = _model()
    form = tf.keras.callbacks.RemoteMonitor(root=root, path="/epoch/", field="payload")
    hist = model.fit(x, y, epochs=2, batch_size=8, callbacks=[form], verbose=0)
    assert len(received) == 2
    path, ctype, body = received[1]
    assert path == "/epoch/" and ctype == "application/x-www-form-urlencoded"
    sent = json.loads(urllib.parse.parse_qs(body.decode())["payload"][0])
    assert sent["epoch"] == 1 and sent["loss"] == pytest.approx(hist.history["loss"][1])
    received.clear()
    as_json = tf.keras.callbacks.RemoteMonitor(root=root, send_as_json=True, headers={"X-A": "1"})
    as_json.set_model(model)
    as_json.on_epoch_end(4, {"loss": np.float32(0.5), "acc": np.array(0.25)})
    path, ctype, body = received[0]
    assert path == "/publish/epoch/end/" and ctype == "application/json"
    assert json.loads(body) == {"epoch": 4, "loss": 0.5, "acc": 0.25}


def test_remote_monitor_unreachable_warns_and_training_goes_on():
    x, y = _data()
    model = _model()
    cb = tf.keras.callbacks.RemoteMonitor(root="http://127.0.0.1:9", timeout=2.0)
    with pytest.warns(RuntimeWarning, match="could not reach RemoteMonitor"):
        hist = model.fit(x, y, epochs=2, batch_size=8, callbacks=[cb], verbose=0)
    assert len(hist.history["loss"]) == 2


# --- BaseLogger -----------------------------------------------------------------------------------
def test_base_logger_weights_batches_by_size():
    cb = tf.keras.callbacks.BaseLogger(stateful_metrics=["auc"])
    cb.set_params({"metrics": ["loss", "auc"]})
    cb.on_epoch_begin(0)
    cb.on_batch_end(0, {"size": 3, "loss": 1.0, "auc": 0.2})
    cb.on_batch_end(1, {"size": 1, "loss": 5.0, "auc": 0.7})
    logs = {}
    cb.on_epoch_end(0, logs)
    assert logs == {"loss": pytest.approx(2.0), "auc": 0.7}
    # TF 2's fit logs no `size`: the epoch logs stay fit's own averages
    x, y = _data()
    model = _model()
    hist = model.fit(x, y, epochs=1, batch_size=8, callbacks=[tf.keras.callbacks.BaseLogger()],
                     verbose=0)  # fmt: skip
    assert np.isfinite(hist.history["loss"][0])
