"""tf.summary.trace_on / trace_off / trace_export: the graphs of tf.function traces written as
TF's `graph_run_metadata_graph` summary, read back with TensorBoard's own event reader and its
graph plugin's merge (what the Graphs dashboard shows)."""

import logging

import pytest

import layerflow as tf

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.compat.proto import config_pb2  # noqa: E402
from tensorboard.plugins.graph import graph_util  # noqa: E402


@pytest.fixture(autouse=True)
def _no_trace_left():
    yield
    tf.summary.trace_off()


def _read(logdir, tag):
    ea = event_accumulator.EventAccumulator(logdir, size_guidance={"tensors": 0})
    ea.Reload()
    event = ea.Tensors(tag)[0]
    plugin = ea.SummaryMetadata(tag).plugin_data.plugin_name
    meta = config_pb2.RunMetadata.FromString(event.tensor_proto.string_val[0])
    return event.step, plugin, meta


def _nodes(graph_def):
    return {n.name: n for n in graph_def.node}


def test_trace_export_writes_the_graphs_traced_while_on(tmp_path):
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def f(x):
        y = tf.matmul(x, x) + v[0]
        if tf.reduce_sum(y) > 0:
            y = y * 2.0
        return tf.nn.relu(y)

    f(tf.ones([2, 2]))  # traced before trace_on: not recorded (TF instantiates once)
    writer = tf.summary.create_file_writer(str(tmp_path))
    tf.summary.trace_on(graph=True)
    f(tf.ones([3, 3]))  # a new trace
    f(tf.ones([3, 3]))  # the same trace again: recorded once
    with writer.as_default():
        assert tf.summary.trace_export("my_func", step=3) is None
    writer.close()
    step, plugin, meta = _read(str(tmp_path), "my_func")
    assert step == 3 and plugin == "graph_run_metadata_graph"
    assert len(meta.function_graphs) == 1
    graph = graph_util.merge_graph_defs([g.pre_optimization_graph for g in meta.function_graphs])
    nodes = _nodes(graph)
    assert nodes["x"].op == "Placeholder"
    assert [d.size for d in nodes["x"].attr["_output_shapes"].list.shape[0].dim] == [3, 3]
    assert nodes["matmul"].op == "Matmul" and list(nodes["matmul"].input) == ["x", "x"]
    assert nodes["Variable"].op == "VarHandleOp"
    assert nodes["cond"].op == "If" and "cond/block_0/multiply" in nodes
    assert list(nodes["relu"].input) == ["cond"]
    assert list(nodes["Identity"].input) == ["relu"]
    assert nodes["matmul"].device.endswith("device:CPU:0")
    post = _nodes(meta.function_graphs[0].post_optimization_graph)
    assert "matmul" in post and "Identity" not in post


def test_trace_off_discards_and_export_needs_trace_on(tmp_path):
    @tf.function
    def g(x):
        return x + 1.0

    tf.summary.trace_on()
    g(tf.constant(1.0))
    tf.summary.trace_off()
    with pytest.raises(ValueError, match="Must enable trace before export"):
        tf.summary.trace_export("g", step=0)
    writer = tf.summary.create_file_writer(str(tmp_path))
    tf.summary.trace_on()
    with writer.as_default():
        tf.summary.trace_export("nothing", step=1)  # no trace since trace_on: no graphs
    writer.close()
    assert len(_read(str(tmp_path), "nothing")[2].function_graphs) == 0


def test_trace_on_twice_warns_and_export_without_writer_still_stops(caplog):
    @tf.function
    def h(x):
        return x * 3.0

    with caplog.at_level(logging.WARNING, logger="layerflow"):
        tf.summary.trace_on()
        tf.summary.trace_on()
    assert "Trace already enabled" in caplog.text
    h(tf.constant(2.0))
    tf.summary.trace_export("h", step=0)  # no default writer: nothing written
    with pytest.raises(ValueError, match="Must enable trace"):
        tf.summary.trace_export("h", step=0)


def test_step_is_required_with_a_writer(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    tf.summary.trace_on()
    with writer.as_default(), pytest.raises(ValueError, match="step"):
        tf.summary.trace_export("s")
    writer.close()


def test_profiler_flag_is_accepted_and_writes_the_run_metadata_summary(tmp_path, caplog):
    @tf.function
    def k(x):
        return tf.reduce_sum(x)

    writer = tf.summary.create_file_writer(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        tf.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path / "prof"))
    assert "no device profiler" in caplog.text
    k(tf.ones([4]))
    with writer.as_default(step=5):
        tf.summary.trace_export("k")
    writer.close()
    step, plugin, meta = _read(str(tmp_path), "k")
    assert step == 5 and plugin == "graph_run_metadata"
    assert _nodes(meta.function_graphs[0].pre_optimization_graph)["reduce_sum"].op == "ReduceSum"
    assert not (tmp_path / "prof").exists()


def test_trace_on_inside_a_function_only_warns(caplog):
    @tf.function
    def inner(x):
        tf.summary.trace_on()
        return x

    with caplog.at_level(logging.WARNING, logger="layerflow"):
        inner(tf.constant(1.0))
    assert "Cannot enable trace inside a tf.function" in caplog.text
    with pytest.raises(ValueError, match="Must enable trace"):
        tf.summary.trace_export("x", step=0)
