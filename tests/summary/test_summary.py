"""tf.summary: event files written through TensorBoard's writer and read back with TensorBoard's
own EventAccumulator; the per-thread state (default writer, step, record_if) as in TF 2."""

from __future__ import annotations

import io
import sys
import threading
import wave

import numpy as np
import pytest

import layerflow as tf

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import plugin_event_accumulator as pea  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402


def read(logdir):
    """{tag: [(step, value ndarray, plugin name)]} as TensorBoard loads the run."""
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        out[tag] = [
            (e.step, tensor_util.make_ndarray(e.tensor_proto), plugin) for e in acc.Tensors(tag)
        ]
    return out


def test_scalars_steps_and_plugin(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    assert isinstance(writer, tf.summary.SummaryWriter)
    with writer.as_default():
        for step in range(3):
            assert bool(tf.summary.scalar("loss", tf.constant(1.0 / (step + 1)), step=step))
        assert bool(tf.summary.scalar("acc", np.float64(0.5), step=tf.Variable(np.int64(7))))
    writer.close()
    got = read(tmp_path)
    assert [(s, float(v)) for s, v, _ in got["loss"]] == [
        (0, 1.0),
        (1, 0.5),
        (2, pytest.approx(1 / 3)),
    ]
    assert got["loss"][0][2] == "scalars" and got["loss"][0][1].dtype == np.float32
    assert [(s, float(v)) for s, v, _ in got["acc"]] == [(7, 0.5)]
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("events.out.tfevents.")
    assert files[0].name.endswith(".v2")


def test_no_writer_returns_false_and_missing_step_is_an_error(tmp_path):
    assert not bool(tf.summary.scalar("x", 1.0, step=1))
    assert not bool(tf.summary.scalar("x", 1.0))  # no writer: no step needed either
    assert not bool(tf.summary.should_record_summaries())
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert bool(tf.summary.should_record_summaries())
        with pytest.raises(ValueError, match="No step set"):
            tf.summary.scalar("x", 1.0)
        with pytest.raises(ValueError, match="rank 0"):
            tf.summary.scalar("x", [1.0, 2.0], step=0)
    writer.close()


def test_default_step_as_default_and_set_step(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = tf.Variable(np.int64(3))
    assert tf.summary.experimental.get_step() is None
    with writer.as_default(step=step):
        assert tf.summary.experimental.get_step() is step
        tf.summary.scalar("a", 1.0)
        step.assign(4)  # a variable step is read at each write
        tf.summary.scalar("a", 2.0)
    assert tf.summary.experimental.get_step() is None  # restored on exit
    tf.summary.experimental.set_step(10)
    try:
        with writer.as_default():
            tf.summary.scalar("b", 1.0)
            assert tf.summary.experimental.get_step() == 10
    finally:
        tf.summary.experimental.set_step(None)
    writer.close()
    got = read(tmp_path)
    assert [s for s, _, _ in got["a"]] == [3, 4]
    assert [s for s, _, _ in got["b"]] == [10]


def test_record_if_bool_tensor_and_callable(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with tf.summary.record_if(False):
            assert not bool(tf.summary.scalar("off", 1.0, step=0))
            assert not bool(tf.summary.should_record_summaries())
        with tf.summary.record_if(tf.constant(True)):
            assert bool(tf.summary.scalar("on", 1.0, step=0))
        for step in range(6):
            with tf.summary.record_if(lambda: step % 2 == 0):  # noqa: B023 - evaluated now
                tf.summary.scalar("every_other", float(step), step=step)
    writer.close()
    got = read(tmp_path)
    assert "off" not in got and len(got["on"]) == 1
    assert [s for s, _, _ in got["every_other"]] == [0, 2, 4]


def test_noop_writer_closed_writer_flush_and_set_as_default(tmp_path):
    noop = tf.summary.create_noop_writer()
    with noop.as_default():
        assert not bool(tf.summary.scalar("x", 1.0, step=1))
        assert not bool(tf.summary.should_record_summaries())
    writer = tf.summary.create_file_writer(str(tmp_path), max_queue=1000, flush_millis=10**7)
    writer.set_as_default(step=5)
    try:
        tf.summary.scalar("queued", 1.0)
        tf.summary.flush()
        assert [s for s, _, _ in read(tmp_path)["queued"]] == [5]
    finally:
        writer.close()
        tf.summary.experimental.set_step(None)
    assert not bool(tf.summary.scalar("after", 1.0, step=1))  # closing unset the default
    with pytest.raises(RuntimeError, match="already closed"):
        with writer.as_default():
            pass


def test_name_scope_prefixes_tags(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=0), tf.name_scope("outer"):
        tf.summary.scalar("loss", 1.0)
        with tf.summary.experimental.summary_scope("x y", "default") as (tag, scope):
            assert (tag, scope) == ("outer/x y", "outer/xy/")
    writer.close()
    assert "outer/loss" in read(tmp_path)


def _np_buckets(data, k):
    lo, hi = data.min(), data.max()
    counts = np.minimum(np.floor((data - lo) / ((hi - lo) / k)).astype(int), k - 1)
    edges = np.linspace(lo, hi, k + 1)
    return np.stack([edges[:-1], edges[1:], np.bincount(counts, minlength=k)], 1)


def test_histogram_buckets(tmp_path):
    data = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=2):
        assert bool(tf.summary.histogram("w", tf.constant(data), buckets=7))
        tf.summary.histogram("default", data)
        tf.summary.histogram("constant", np.full(5, 3.0))
    writer.close()
    got = read(tmp_path)
    step, buckets, plugin = got["w"][0]
    assert step == 2 and plugin == "histograms"
    np.testing.assert_allclose(buckets, _np_buckets(data.astype(np.float64).ravel(), 7), rtol=1e-6)
    assert buckets[:, 2].sum() == data.size
    assert got["default"][0][1].shape == (30, 3)
    const = got["constant"][0][1]
    assert const[-1, 2] == 5 and const[:-1, 2].sum() == 0 and (const[:, :2] == 3.0).all()


def test_image_png_and_max_outputs(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    images = rng.random((5, 6, 7, 3)).astype(np.float32)
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=1):
        assert bool(tf.summary.image("img", images, max_outputs=2))
        tf.summary.image("grey", (rng.random((1, 4, 4, 1)) * 255).astype(np.uint8))
        with pytest.raises(ValueError, match=r"\[k, h, w, c\]"):
            tf.summary.image("bad", np.zeros((4, 4, 3)))
    writer.close()
    got = read(tmp_path)
    _, value, plugin = got["img"][0]
    assert plugin == "images" and value.shape == (4,)
    assert value[0] == b"7" and value[1] == b"6"  # width, height
    for i in range(2):
        decoded = np.asarray(pil.open(io.BytesIO(value[2 + i])))
        expected = np.clip(images[i].astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
        np.testing.assert_array_equal(decoded, expected)
    grey = np.asarray(pil.open(io.BytesIO(got["grey"][0][1][2])))
    assert grey.shape == (4, 4)


def test_text_and_audio(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    clip = (0.5 * np.sin(np.linspace(0, 30, 400))).astype(np.float32).reshape(1, 400, 1)
    with writer.as_default(step=4):
        assert bool(tf.summary.text("notes", "hello **markdown**"))
        tf.summary.text("table", np.array([["a", "b"], ["c", "d"]]))
        assert bool(tf.summary.audio("sound", clip, sample_rate=8000))
    writer.close()
    got = read(tmp_path)
    assert got["notes"][0][1] == b"hello **markdown**" and got["notes"][0][2] == "text"
    assert got["table"][0][1].shape == (2, 2)
    value = got["sound"][0][1]
    # written as TF does ([k, 2]: clip, label); TensorBoard's loader drops the label column
    assert got["sound"][0][2] == "audio" and value.shape == (1,)
    with wave.open(io.BytesIO(value[0])) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (8000, 1, 2)
        pcm = np.frombuffer(w.readframes(400), "<i2")
    np.testing.assert_allclose(pcm / 32767.0, clip.ravel(), atol=1e-4)


def test_write_and_write_raw_pb(tmp_path):
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.scalar import summary_v2

    writer = tf.summary.create_file_writer(str(tmp_path))
    meta = summary_pb2.SummaryMetadata()
    meta.plugin_data.plugin_name = "custom"
    raw = summary_v2.scalar_pb("raw_scalar", np.float32(2.5)).SerializeToString()
    with writer.as_default(step=6):
        assert bool(tf.summary.write("tensor", tf.constant([[1, 2], [3, 4]]), metadata=meta))
        assert bool(
            tf.summary.write("lazy", lambda: np.arange(3.0), metadata=meta.SerializeToString())
        )
        assert bool(tf.summary.experimental.write_raw_pb(raw))
    writer.close()
    got = read(tmp_path)
    np.testing.assert_array_equal(got["tensor"][0][1], [[1, 2], [3, 4]])
    assert got["tensor"][0][2] == "custom"
    np.testing.assert_array_equal(got["lazy"][0][1], [0.0, 1.0, 2.0])
    assert float(got["raw_scalar"][0][1]) == 2.5


def test_state_is_per_thread(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    seen = []
    with writer.as_default(step=1):
        thread = threading.Thread(
            target=lambda: seen.append(
                (bool(tf.summary.should_record_summaries()), tf.summary.experimental.get_step())
            )
        )
        thread.start()
        thread.join()
    writer.close()
    assert seen == [(False, None)]


def test_unknown_names_raise_attribute_error():
    # trace_on/trace_off/trace_export exist now (tests/summary/test_trace.py)
    assert callable(tf.summary.trace_on) and callable(tf.summary.trace_export)
    with pytest.raises(AttributeError, match="no attribute 'trace_everything'"):
        tf.summary.trace_everything  # noqa: B018


def test_without_tensorboard_the_writer_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match="pip install"):
        tf.summary.create_file_writer(str(tmp_path))
    # the state API needs no TensorBoard
    with tf.summary.create_noop_writer().as_default(), tf.summary.record_if(True):
        assert not bool(tf.summary.scalar("x", 1.0, step=0))
