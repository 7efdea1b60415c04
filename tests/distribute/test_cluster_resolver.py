"""tf.distribute.cluster_resolver: Simple, Union, TF_CONFIG (untrusted), SLURM (fake env).

Expected values were produced by TF 2.21's resolvers on the same inputs.
"""

import json

import pytest

import layerflow as tf
from layerflow._src.distribute.cluster_resolver import MAX_TASKS
from layerflow._src.distribute.cluster_spec import ClusterSpec
from layerflow._src.distribute.slurm_cluster_resolver import (
    expand_hostlist,
    expand_tasks_per_node,
)

R = tf.distribute.cluster_resolver


def test_base_is_abstract():
    with pytest.raises(TypeError):
        R.ClusterResolver()


def test_simple_cluster_resolver():
    spec = ClusterSpec({"worker": ["a:1", "b:1"]})
    r = R.SimpleClusterResolver(spec, task_type="worker", task_id=1, rpc_layer="grpc")
    assert r.cluster_spec() is spec
    assert r.master() == "grpc://"
    assert r.master("worker", 0) == "grpc://a:1"
    assert r.master("worker", 0, rpc_layer="http") == "http://a:1"
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("worker", 1, "grpc", "")
    assert r.num_accelerators() == {}
    r.task_id = 0
    assert r.task_id == 0
    plain = R.SimpleClusterResolver(spec, master="m:1", num_accelerators={"GPU": 8})
    assert plain.master() == "m:1" and plain.num_accelerators() == {"GPU": 8}
    with pytest.raises(TypeError, match="ClusterSpec"):
        R.SimpleClusterResolver({"worker": ["a:1"]})
    with pytest.raises(TypeError, match="master must be a string"):
        R.SimpleClusterResolver(spec, master=3)


def test_union_resolver_merges_and_delegates():
    first = R.SimpleClusterResolver(
        ClusterSpec({"worker": ["a:1"]}), task_type="worker", task_id=0, rpc_layer="grpc"
    )
    second = R.SimpleClusterResolver(ClusterSpec({"worker": ["b:1"], "ps": {3: "p:3"}}))
    u = R.UnionResolver(first, second)
    assert u.cluster_spec().as_dict() == {"worker": ["a:1", "b:1"], "ps": {3: "p:3"}}
    assert (u.master(), u.task_type, u.rpc_layer) == ("grpc://", "worker", "grpc")
    assert u.master("ps", 3) == "p:3"  # the union's own rpc_layer, as in TF
    assert R.UnionResolver(first, second, rpc_layer="http").master("ps", 3) == "http://p:3"
    assert R.UnionResolver(first, task_type="ps").task_type == "ps"
    gaps = R.SimpleClusterResolver(ClusterSpec({"worker": {0: "a:1", 2: "z:1"}}))
    clash = R.SimpleClusterResolver(ClusterSpec({"worker": {2: "c:1"}}))
    with pytest.raises(KeyError, match="Duplicate"):
        R.UnionResolver(gaps, clash).cluster_spec()
    with pytest.raises(ValueError, match="At least one"):
        R.UnionResolver()
    with pytest.raises(TypeError, match="ClusterResolver"):
        R.UnionResolver(first, "not a resolver")
    with pytest.raises(ValueError, match="Unexpected kwargs"):
        R.UnionResolver(first, environment="x")


def test_tf_config_resolver(monkeypatch):
    config = {
        "cluster": {"worker": ["a:1", "b:1"], "ps": ["p:1"]},
        "task": {"type": "worker", "index": 1},
        "rpc_layer": "grpc",
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    r = R.TFConfigClusterResolver()
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "grpc")
    assert r.master() == "grpc://b:1"
    assert r.master("ps", 0, rpc_layer="http") == "http://p:1"
    assert r.cluster_spec().as_dict() == {"worker": ["a:1", "b:1"], "ps": ["p:1"]}
    assert R.TFConfigClusterResolver(task_type="ps", task_id=0).master() == "grpc://p:1"
    # Read again on every call, as TF does.
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["c:1"]}}))
    assert r.master() == "" and r.task_type is None and r.task_id is None
    monkeypatch.setenv("TF_CONFIG", json.dumps({"session_master": "s:1"}))
    assert r.master() == "s:1"
    monkeypatch.delenv("TF_CONFIG")
    assert r.cluster_spec().as_dict() == {} and r.master() == ""


def test_tf_config_dict_tasks_get_integer_indices(monkeypatch):
    config = {"cluster": {"worker": {"0": "a:1", "2": "c:1"}}, "task": {"type": "worker"}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    r = R.TFConfigClusterResolver()
    assert r.cluster_spec().task_address("worker", 2) == "c:1"
    assert r.master(task_id=0) == "a:1"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "top level is a list"),
        ('{"cluster": ["a:1"]}', '"cluster" is a list'),
        ('{"cluster": {"worker": "a:1"}}', "tasks of job 'worker' are a str"),
        ('{"cluster": {"worker": [1]}}', "an address of job 'worker'"),
        ('{"cluster": {"../x": ["a:1"]}}', "not a plain identifier"),
        ('{"cluster": {"worker": {"x": "a:1"}}}', "task index"),
        ('{"task": {"type": "worker", "index": -1}}', '"task.index"'),
        ('{"task": {"type": "worker", "index": true}}', '"task.index"'),
        ('{"task": {"type": 3}}', '"task.type"'),
        ('{"task": []}', '"task" is a list'),
        ('{"rpc_layer": 5}', '"rpc_layer" must be a string'),
        ('{"a": ' * 20 + "1" + "}" * 20, "nests deeper"),
        ("[" * 100000 + "]" * 100000, "TF_CONFIG"),
    ],
)
def test_tf_config_malformed_is_a_clear_error(monkeypatch, text, fragment):
    monkeypatch.setenv("TF_CONFIG", text)
    r = R.TFConfigClusterResolver()
    with pytest.raises(ValueError, match="TF_CONFIG") as info:
        r.cluster_spec()
    assert fragment in str(info.value)


def test_tf_config_size_bounds(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"pad": "x" * (2 << 20)}))
    with pytest.raises(ValueError, match="characters, over"):
        R.TFConfigClusterResolver().cluster_spec()
    many = {"cluster": {"worker": ["a:1"] * (MAX_TASKS + 1)}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(many))
    with pytest.raises(ValueError, match="more than"):
        R.TFConfigClusterResolver().cluster_spec()


def test_expand_hostlist_and_tasks_per_node():
    assert expand_hostlist("n[1-2],m5,o[03-04,6]") == ["n1", "n2", "m5", "o03", "o04", "o6"]
    assert expand_hostlist("single") == ["single"]
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    for bad in ("n[1-2", "n]1[", "n[a-b]", "n[5-1]", "a,,b"):
        with pytest.raises(ValueError, match="Invalid hostlist"):
            expand_hostlist(bad)
    with pytest.raises(ValueError, match="more than"):
        expand_hostlist("n[1-999999999]")
    with pytest.raises(ValueError, match="more than"):
        expand_hostlist("n[1-40000],m[1-40000]")
    for bad in ("x", "2(x)", "1(x999999)", "-1"):
        with pytest.raises(ValueError, match="tasks-per-node"):
            expand_tasks_per_node(bad)


def _slurm_env(monkeypatch, procid=3):
    monkeypatch.setenv("SLURM_PROCID", str(procid))
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "5")
    monkeypatch.setenv("SLURM_STEP_NODELIST", "node[2-3],gpu01")
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2),1")


def test_slurm_resolver_matches_tf(monkeypatch):
    _slurm_env(monkeypatch)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    r = R.SlurmClusterResolver(jobs={"ps": 1, "worker": 4}, gpus_per_node=4, port_base=9000)
    spec = r.cluster_spec()
    assert spec.as_dict() == {
        "ps": ["gpu01:9000"],
        "worker": ["node2:9000", "node2:9001", "node3:9000", "node3:9001"],
    }
    assert r.get_task_info() == ("worker", 2)
    assert r.master() == "grpc://node3:9000"
    assert r.num_accelerators() == {"GPU": 2}
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_slurm_resolver_without_gpus_and_errors(monkeypatch):
    _slurm_env(monkeypatch, procid=4)
    r = R.SlurmClusterResolver(gpus_per_node=0, auto_set_gpu=False)
    assert r.cluster_spec().num_tasks("worker") == 5
    assert (r.task_type, r.task_id) == ("worker", 4)
    with pytest.raises(RuntimeError, match="Requested 3 tasks but only 5"):
        R.SlurmClusterResolver(jobs={"worker": 3}, gpus_per_node=0)
    with pytest.raises(RuntimeError, match="more GPUs per node"):
        R.SlurmClusterResolver(gpus_per_node=2, gpus_per_task=2)
    monkeypatch.setenv("SLURM_PROCID", "x")
    with pytest.raises(ValueError, match="SLURM_PROCID"):
        R.SlurmClusterResolver(gpus_per_node=0)
    monkeypatch.delenv("SLURM_PROCID")
    with pytest.raises(RuntimeError, match="SLURM_PROCID not found"):
        R.SlurmClusterResolver(gpus_per_node=0)
