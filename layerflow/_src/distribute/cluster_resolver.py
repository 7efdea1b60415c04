"""`tf.distribute.cluster_resolver`: where this process sits in a cluster, from what the
launcher wrote (`TF_CONFIG`, SLURM's environment) or from what the program says.

The environment is input from outside the program, so it is checked before use: `TF_CONFIG`
must be a JSON object of bounded size and nesting with the documented keys and types, and
SLURM host lists and task counts must expand to a bounded number of entries. A malformed value
raises ValueError naming the variable, the part that is wrong and what was expected, never a
KeyError from deep inside, and never an unbounded allocation (`node[1-999999999]`).
"""

from __future__ import annotations

import abc
import json
import os
import re
from typing import Any

from layerflow._src import backend
from layerflow._src.distribute.cluster_spec import ClusterSpec

# Bounds on what the environment may describe (far beyond real clusters, far below harm).
MAX_TF_CONFIG_BYTES = 1 << 20
MAX_TASKS = 1 << 16
_MAX_DEPTH = 8


def format_master_url(master: str, rpc_layer: str | None = None) -> str:
    """`rpc_layer://master`, or `master` without an RPC layer."""
    return f"{rpc_layer}://{master}" if rpc_layer else master


class ClusterResolver(abc.ABC):
    """Base of the cluster resolvers: `cluster_spec()`, `master()`, `task_type`, `task_id`,
    `rpc_layer`, `environment` and `num_accelerators()`.

    Subclasses implement `cluster_spec` and `master` (abstract, as in TF).
    """

    @abc.abstractmethod
    def cluster_spec(self) -> ClusterSpec:
        raise NotImplementedError(f"{type(self).__name__} must implement cluster_spec().")

    @abc.abstractmethod
    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement master().")

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto: Any = None
    ) -> dict[str, int]:
        """Accelerators of this machine by type (`{"GPU": 2}`); `{}` when there are none."""
        gpus = len(backend.list_logical_devices("GPU"))
        return {"GPU": gpus} if gpus else {}

    @property
    def environment(self) -> str:
        return ""

    @property
    def task_type(self) -> str | None:
        return getattr(self, "_task_type", None)

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        return getattr(self, "_task_id", None)

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def rpc_layer(self) -> str | None:
        return getattr(self, "_rpc_layer", None)

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    def __repr__(self) -> str:
        return f"<{type(self).__name__} task_type={self.task_type!r} task_id={self.task_id!r}>"


class SimpleClusterResolver(ClusterResolver):
    """A resolver that returns what it was given.

    >>> r = SimpleClusterResolver(ClusterSpec({"worker": ["w0:2222", "w1:2222"]}),
    ...                           task_type="worker", task_id=1, rpc_layer="grpc")
    >>> r.master(), r.master("worker", 0), r.num_accelerators()
    ('grpc://', 'grpc://w0:2222', {})
    """

    def __init__(
        self,
        cluster_spec: ClusterSpec,
        master: str = "",
        task_type: str | None = None,
        task_id: int | None = None,
        environment: str = "",
        num_accelerators: dict[str, int] | None = None,
        rpc_layer: str | None = None,
    ) -> None:
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError(
                f"cluster_spec must be a `tf.train.ClusterSpec`, got {type(cluster_spec).__name__}."
            )
        if not isinstance(master, str):
            raise TypeError(f"master must be a string, got {type(master).__name__}.")
        self._cluster_spec = cluster_spec
        self._master = master
        self._task_type = task_type
        self._task_id = task_id
        self._environment = environment
        self._num_accelerators = num_accelerators
        self._rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        return self._cluster_spec

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        """The given master; the address of `task_type` #`task_id` when both are given."""
        if task_type is not None and task_id is not None:
            address = self._cluster_spec.task_address(task_type, task_id)
        else:
            address = self._master
        return format_master_url(address, rpc_layer or self._rpc_layer)

    @property
    def environment(self) -> str:
        return self._environment

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto: Any = None
    ) -> dict[str, int]:
        return {} if self._num_accelerators is None else self._num_accelerators


class UnionResolver(ClusterResolver):
    """The union of several resolvers' cluster specs; everything else from the first one
    (unless `task_type`, `task_id` or `rpc_layer` is given).

    A job present in several resolvers concatenates its task lists; if any of them gives the
    job as a dict {index: address}, the dicts are merged and a repeated index raises KeyError.
    """

    def __init__(self, *args: ClusterResolver, **kwargs: Any) -> None:
        self._rpc_layer = kwargs.pop("rpc_layer", None)
        self._task_type = kwargs.pop("task_type", None)
        self._task_id = kwargs.pop("task_id", None)
        if kwargs:
            raise ValueError(f"Unexpected kwargs provided {kwargs!r}")
        if not args:
            raise ValueError("At least one ClusterResolver is required.")
        for resolver in args:
            if not isinstance(resolver, ClusterResolver):
                raise TypeError(
                    "All arguments must be a sub-class of `ClusterResolver.`; got "
                    f"{type(resolver).__name__}."
                )
        self._cluster_resolvers = args

    def cluster_spec(self) -> ClusterSpec:
        dicts = [r.cluster_spec().as_dict() for r in self._cluster_resolvers]
        merged: dict[str, Any] = {}
        for d in dicts:
            for job, tasks in d.items():
                if job not in merged or isinstance(tasks, dict):
                    merged[job] = [] if job not in merged and isinstance(tasks, list) else {}
        for d in dicts:
            for job, tasks in d.items():
                if isinstance(merged[job], list):
                    merged[job].extend(tasks)
                    continue
                task_dict = dict(enumerate(tasks)) if isinstance(tasks, list) else dict(tasks)
                repeated = set(task_dict) & set(merged[job])
                if repeated:
                    raise KeyError(
                        f"Duplicate keys detected when merging two ClusterSpecs: {repeated!r}"
                    )
                merged[job].update(task_dict)
        return ClusterSpec(merged)

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        if task_type is not None and task_id is not None:
            address = self.cluster_spec().task_address(task_type, task_id)
            return format_master_url(address, rpc_layer or self._rpc_layer)
        return self._cluster_resolvers[0].master(rpc_layer=rpc_layer)

    @property
    def task_type(self) -> str | None:
        return self._task_type or self._cluster_resolvers[0].task_type

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        return self._task_id or self._cluster_resolvers[0].task_id

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def rpc_layer(self) -> str | None:
        return self._rpc_layer or self._cluster_resolvers[0].rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    @property
    def environment(self) -> str:
        return self._cluster_resolvers[0].environment

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto: Any = None
    ) -> dict[str, int]:
        return self._cluster_resolvers[0].num_accelerators(task_type, task_id, config_proto)


# --- TF_CONFIG ------------------------------------------------------------------------------


def _tf_config_error(problem: str) -> ValueError:
    return ValueError(
        f"The TF_CONFIG environment variable is malformed: {problem}. Expected JSON like "
        '{"cluster": {"worker": ["host0:2222", "host1:2222"]}, '
        '"task": {"type": "worker", "index": 0}}.'
    )


def _depth(value: Any, limit: int) -> bool:
    """Whether `value` nests no deeper than `limit` (iterative, so no recursion to exhaust)."""
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return True


def _index(value: Any, where: str) -> int:
    # TF reads the index with int(); a digit string is accepted, a bool or float is not.
    if isinstance(value, str) and value.isdigit() and len(value) <= 9:
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_TASKS:
        raise _tf_config_error(f"{where} must be an integer in [0, {MAX_TASKS}), got {value!r}")
    return value


def load_tf_config() -> dict[str, Any]:
    """The parsed and checked `TF_CONFIG` (an empty dict when the variable is unset)."""
    text = os.environ.get("TF_CONFIG", "")
    if not text.strip():
        return {}
    if len(text) > MAX_TF_CONFIG_BYTES:
        raise _tf_config_error(f"it is {len(text)} characters, over {MAX_TF_CONFIG_BYTES}")
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise _tf_config_error(f"not valid JSON ({str(err)[:100]})") from None
    if not isinstance(config, dict):
        raise _tf_config_error(f"the top level is a {type(config).__name__}, not an object")
    if not _depth(config, _MAX_DEPTH):
        raise _tf_config_error(f"it nests deeper than {_MAX_DEPTH} levels")
    cluster = config.get("cluster", {})
    if not isinstance(cluster, dict):
        raise _tf_config_error(f'"cluster" is a {type(cluster).__name__}, not an object')
    total = 0
    for job, tasks in cluster.items():
        if not job or not re.fullmatch(r"[A-Za-z0-9_\-]+", job):
            raise _tf_config_error(f"the job name {job[:40]!r} is not a plain identifier")
        if isinstance(tasks, dict):
            # JSON object keys are strings; ClusterSpec wants integer task indices.
            tasks = {_index(k, f"a task index of job {job!r}"): a for k, a in tasks.items()}
            cluster[job] = tasks
            addresses = list(tasks.values())
        elif isinstance(tasks, list):
            addresses = tasks
        else:
            raise _tf_config_error(
                f"the tasks of job {job!r} are a {type(tasks).__name__}, not a list of "
                "addresses or an object {index: address}"
            )
        total += len(addresses)
        if total > MAX_TASKS:
            raise _tf_config_error(f"the cluster lists more than {MAX_TASKS} tasks")
        for address in addresses:
            if not isinstance(address, str) or len(address) > 1024:
                raise _tf_config_error(
                    f"an address of job {job!r} is {str(address)[:40]!r}, not a string of at "
                    "most 1024 characters"
                )
    task = config.get("task", {})
    if not isinstance(task, dict):
        raise _tf_config_error(f'"task" is a {type(task).__name__}, not an object')
    if "type" in task and not isinstance(task["type"], str):
        raise _tf_config_error(f'"task.type" must be a string, got {task["type"]!r}')
    if "index" in task:
        task["index"] = _index(task["index"], '"task.index"')
    for key in ("rpc_layer", "session_master", "environment"):
        if key in config and not isinstance(config[key], str):
            raise _tf_config_error(f'"{key}" must be a string, got {config[key]!r}')
    return config


class TFConfigClusterResolver(ClusterResolver):
    """Reads the cluster and this task's place from the `TF_CONFIG` environment variable (read
    again on every call, as TF does, so a launcher may set it after construction).

    >>> import json, os
    >>> os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["a:1", "b:1"]},
    ...                                       "task": {"type": "worker", "index": 1}})
    >>> r = TFConfigClusterResolver()
    >>> r.task_type, r.task_id, r.master(), r.cluster_spec().num_tasks("worker")
    ('worker', 1, 'b:1', 2)
    >>> del os.environ["TF_CONFIG"]
    """

    def __init__(
        self,
        task_type: str | None = None,
        task_id: int | None = None,
        rpc_layer: str | None = None,
        environment: str | None = None,
    ) -> None:
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @property
    def task_type(self) -> str | None:
        if self._task_type is None:
            return load_tf_config().get("task", {}).get("type")
        return str(self._task_type)

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        if self._task_id is None:
            return load_tf_config().get("task", {}).get("index")
        return int(self._task_id)

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def environment(self) -> str | None:  # type: ignore[override]
        return self._environment

    @property
    def rpc_layer(self) -> str | None:
        if self._rpc_layer is None:
            return load_tf_config().get("rpc_layer")
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec(load_tf_config().get("cluster", {}))

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        """`session_master` if TF_CONFIG has one; '' for a one-task cluster; else the address
        of this task (or of `task_type` #`task_id`)."""
        session_master = load_tf_config().get("session_master")
        if session_master is not None:
            return session_master
        spec = self.cluster_spec()
        if not spec.jobs or (len(spec.jobs) == 1 and len(spec.job_tasks(spec.jobs[0])) == 1):
            return ""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            raise ValueError(
                "TFConfigClusterResolver.master(): TF_CONFIG has no task section, so this "
                "process's address is unknown. Pass task_type and task_id, or set "
                '"task": {"type": ..., "index": ...} in TF_CONFIG.'
            )
        rpc_layer = rpc_layer if rpc_layer is not None else self.rpc_layer
        return format_master_url(spec.task_address(task_type, task_id), rpc_layer)
