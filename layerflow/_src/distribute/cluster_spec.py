"""`tf.train.ClusterSpec`: the jobs of a cluster and the network address of each task.

A job's tasks are a list (task i at position i) or a dict {task index: address}; `as_dict()`
gives a list back when the indices are exactly 0..n-1, as TF does.
"""

from __future__ import annotations

from typing import Any


class ClusterSpec:
    """The cluster a job runs on, as {job name: tasks}.

    >>> import layerflow as tf
    >>> cs = tf.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {1: "p1:2222"}})
    >>> cs.jobs, cs.num_tasks("worker"), cs.task_address("ps", 1), cs.job_tasks("ps")
    (['worker', 'ps'], 2, 'p1:2222', [None, 'p1:2222'])
    """

    def __init__(self, cluster: Any) -> None:
        if isinstance(cluster, ClusterSpec):
            self._spec: dict[str, dict[int, str]] = {
                job: dict(tasks) for job, tasks in cluster._spec.items()
            }
            return
        if not isinstance(cluster, dict):
            raise TypeError(
                "The `cluster` argument must be a dictionary mapping job names to lists or "
                "dictionaries of network addresses, or a ClusterSpec; got "
                f"{type(cluster).__name__}."
            )
        self._spec = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str):
                raise TypeError(f"ClusterSpec: job names must be strings, got {job!r}.")
            if isinstance(tasks, list | tuple):
                entries = dict(enumerate(tasks))
            elif isinstance(tasks, dict):
                entries = {}
                for index, address in tasks.items():
                    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                        raise TypeError(
                            f"ClusterSpec: task indices of job {job!r} must be non-negative "
                            f"integers, got {index!r}."
                        )
                    entries[index] = address
            else:
                raise TypeError(
                    f"The tasks for job {job!r} must be a list or a dictionary from integers "
                    f"to strings, got {type(tasks).__name__}."
                )
            for index, address in entries.items():
                if not isinstance(address, str):
                    raise TypeError(
                        f"ClusterSpec: the address of task {index} of job {job!r} must be a "
                        f"string, got {address!r}."
                    )
            self._spec[job] = entries

    def __bool__(self) -> bool:
        return bool(self._spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        key_values = self.as_dict()
        text = ", ".join(f"{k!r}: {key_values[k]!r}" for k in sorted(key_values))
        return f"ClusterSpec({{{text}}})"

    def as_dict(self) -> dict[str, Any]:
        """{job: list of addresses} (a dict {index: address} for a job with gaps)."""
        out: dict[str, Any] = {}
        for job, tasks in self._spec.items():
            indices = sorted(tasks)
            if indices == list(range(len(indices))):
                out[job] = [tasks[i] for i in indices]
            else:
                out[job] = {i: tasks[i] for i in indices}
        return out

    @property
    def jobs(self) -> list[str]:
        """The job names, in the order given."""
        return list(self._spec)

    def _tasks(self, job_name: str) -> dict[int, str]:
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        """How many tasks `job_name` has."""
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The task indices of `job_name`, ascending."""
        return sorted(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of task `task_index` of `job_name`."""
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The addresses of `job_name` by index, with None for missing indices."""
        tasks = self._tasks(job_name)
        out: list[str | None] = [None] * (max(tasks) + 1 if tasks else 0)
        for index, address in tasks.items():
            out[index] = address
        return out


__all__ = ["ClusterSpec"]
