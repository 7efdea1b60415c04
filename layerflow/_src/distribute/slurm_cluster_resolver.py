"""`tf.distribute.cluster_resolver.SlurmClusterResolver`: the cluster of a SLURM job step.

SLURM's variables come from outside the program: host lists and task counts are parsed
strictly and expand to at most `MAX_TASKS` entries (`node[1-999999999]` is an error, not an
allocation).
"""

from __future__ import annotations

import os
import re
from typing import Any

from layerflow._src import backend
from layerflow._src.distribute.cluster_resolver import (
    MAX_TASKS,
    ClusterResolver,
    format_master_url,
)
from layerflow._src.distribute.cluster_spec import ClusterSpec

# --- SLURM --------------------------------------------------------------------------------


def _checked_range(low: str, high: str, hostlist: str) -> range:
    if not (low.isdigit() and high.isdigit()) or int(high) < int(low):
        raise ValueError(f'Invalid hostlist format "{hostlist}": bad range {low}-{high}.')
    return range(int(low), int(high) + 1)


def expand_hostlist(hostlist: str, limit: int = MAX_TASKS) -> list[str]:
    """The hosts of a SLURM host list, in order (no deduplication); at most `limit`.

    >>> expand_hostlist("n[1-2],m5,o[03-04,6]")
    ['n1', 'n2', 'm5', 'o03', 'o04', 'o6']
    """
    parts, current, depth = [], "", 0
    for c in hostlist:
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        if depth not in (0, 1):
            raise ValueError(f'Invalid hostlist format "{hostlist}": unbalanced brackets.')
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    if depth:
        raise ValueError(f'Invalid hostlist format "{hostlist}": unbalanced brackets.')
    parts.append(current)
    hosts: list[str] = []
    for part in parts:
        m = re.fullmatch(r"([^,\[\]]*)(\[([^\]]+)\])?", part)
        if m is None or not part:
            raise ValueError(f'Invalid hostlist format "{hostlist}": bad part {part!r}.')
        prefix, ranges = m.group(1), m.group(3)
        if ranges is None:
            expanded = [prefix]
        else:
            expanded = []
            for piece in ranges.split(","):
                low, _, high = piece.partition("-")
                numbers = _checked_range(low, high or low, hostlist)
                if len(hosts) + len(expanded) + len(numbers) > limit:
                    raise ValueError(
                        f'Invalid hostlist format "{hostlist}": more than {limit} hosts.'
                    )
                expanded.extend(prefix + str(i).zfill(len(low)) for i in numbers)
        hosts.extend(expanded)
        if len(hosts) > limit:
            raise ValueError(f'Invalid hostlist format "{hostlist}": more than {limit} hosts.')
    return hosts


def expand_tasks_per_node(tasks_per_node: str, limit: int = MAX_TASKS) -> list[int]:
    """SLURM's tasks-per-node list: "2(x3),1" is [2, 2, 2, 1].

    >>> expand_tasks_per_node("2(x3),1")
    [2, 2, 2, 1]
    """
    result: list[int] = []
    for part in tasks_per_node.split(","):
        m = re.fullmatch(r"(\d{1,6})(\(x(\d{1,6})\))?", part)
        count = int(m.group(3) or 1) if m else 0
        if m is None or len(result) + count > limit:
            raise ValueError(
                f'Invalid tasks-per-node list format "{tasks_per_node}": expected entries like '
                f'"2" or "2(x3)" for at most {limit} nodes.'
            )
        result.extend([int(m.group(1))] * count)
    return result


def _slurm_var(name: str) -> str:
    key = "SLURM_" + name
    try:
        return os.environ[key]
    except KeyError:
        raise RuntimeError(
            f"{key} not found in environment. Not running inside a SLURM step?"
        ) from None


def _slurm_int(name: str) -> int:
    text = _slurm_var(name)
    if not text.isdigit() or len(text) > 9:
        raise ValueError(f"SLURM_{name} must be a non-negative integer, got {text[:40]!r}.")
    return int(text)


def _num_gpus() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    return len(backend.list_logical_devices("GPU"))


class SlurmClusterResolver(ClusterResolver):
    """The cluster of a SLURM job step: tasks packed onto the step's nodes in sorted host
    order, ports from `port_base`, GPUs split evenly between a node's tasks.

    Reads SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST and
    SLURM_STEP_TASKS_PER_NODE; with `auto_set_gpu` it sets CUDA_VISIBLE_DEVICES to this task's
    GPUs when `cluster_spec()` is called, as TF does.
    """

    def __init__(
        self,
        jobs: dict[str, int] | None = None,
        port_base: int = 8888,
        gpus_per_node: int | None = None,
        gpus_per_task: int | None = None,
        tasks_per_node: Any = None,
        auto_set_gpu: bool = True,
        rpc_layer: str = "grpc",
    ) -> None:
        self._rank = _slurm_int("PROCID")
        if jobs is None:
            jobs = {"worker": _slurm_int("STEP_NUM_TASKS")}
        for job, count in jobs.items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(
                    f"SlurmClusterResolver: jobs[{job!r}] must be a task count, got {count!r}."
                )
        self._jobs = dict(jobs)
        self._port_base = port_base
        if tasks_per_node is None:
            hosts = expand_hostlist(_slurm_var("STEP_NODELIST"))
            counts = expand_tasks_per_node(_slurm_var("STEP_TASKS_PER_NODE"))
            self._task_configuration = dict(zip(hosts, counts))
        elif isinstance(tasks_per_node, dict):
            self._task_configuration = dict(tasks_per_node)
        else:
            hosts = expand_hostlist(_slurm_var("STEP_NODELIST"))
            self._task_configuration = {h: int(tasks_per_node) for h in hosts}
        if not self._task_configuration:
            raise RuntimeError("SlurmClusterResolver: the job step has no nodes.")
        max_tasks_per_node = max(self._task_configuration.values())
        num_tasks = sum(self._task_configuration.values())
        if gpus_per_node is None:
            gpus_per_node = _num_gpus()
        if gpus_per_task is None:
            gpus_per_task = gpus_per_node // max_tasks_per_node if max_tasks_per_node else 0
        self._gpus_per_node = gpus_per_node
        self._gpus_per_task = gpus_per_task
        self._auto_set_gpu = auto_set_gpu
        self.task_type = None
        self.task_id = None
        self.rpc_layer = rpc_layer
        self._gpu_allocation: list[str] = []
        self._cluster_allocation: dict[str, list[str]] = {}
        if max_tasks_per_node * self._gpus_per_task > self._gpus_per_node:
            raise RuntimeError("Requested more GPUs per node than available.")
        if sum(self._jobs.values()) != num_tasks:
            raise RuntimeError(
                f"Requested {sum(self._jobs.values())} tasks but only {num_tasks} were assigned."
            )

    def cluster_spec(self) -> ClusterSpec:
        """Tasks on hosts (sorted), then jobs (sorted by name) take consecutive tasks; sets
        `task_type`/`task_id` of this process from its SLURM rank."""
        task_list: list[str] = []
        self._gpu_allocation = []
        self._cluster_allocation = {}
        for host, num_tasks in sorted(self._task_configuration.items()):
            # TF pairs ports with GPU offsets; without GPUs every task still gets a port.
            gpu_offsets = (
                range(0, self._gpus_per_node, self._gpus_per_task)
                if self._gpus_per_task
                else [0] * num_tasks
            )
            for port_offset, gpu_offset in zip(range(num_tasks), gpu_offsets):
                task_list.append(f"{host}:{self._port_base + port_offset}")
                ids = range(gpu_offset, gpu_offset + self._gpus_per_task)
                self._gpu_allocation.append(",".join(str(i) for i in ids))
        start = 0
        for task_type, num_tasks in sorted(self._jobs.items()):
            end = start + num_tasks
            self._cluster_allocation[task_type] = task_list[start:end]
            if start <= self._rank < end:
                self.task_type = task_type
                self.task_id = self._rank - start
            start = end
        if self._auto_set_gpu and self._rank < len(self._gpu_allocation):
            os.environ["CUDA_VISIBLE_DEVICES"] = self._gpu_allocation[self._rank]
        return ClusterSpec(self._cluster_allocation)

    def get_task_info(self) -> tuple[str | None, int | None]:
        """(task_type, task_id) of this process, known after `cluster_spec()`."""
        return self.task_type, self.task_id

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is not None and task_id is not None:
            address = self.cluster_spec().task_address(task_type, task_id)
            return format_master_url(address, rpc_layer or self.rpc_layer)
        return ""

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto: Any = None
    ) -> dict[str, int]:
        return {"GPU": self._gpus_per_task}
