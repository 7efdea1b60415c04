"""The `tf.distribute.Strategy` methods kept for TF 1 code (`unwrap`, `experimental_run`,
`make_dataset_iterator`, `configure`, `colocate_vars_with`, `group`) and copying rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from layerflow._src.utils import nest


class StrategyCompatMixin:
    """Mixed into `Strategy`; uses only its public methods and `_extended`."""

    _extended: Any

    def unwrap(self, value: Any) -> tuple[Any, ...]:
        """Deprecated spelling of `experimental_local_results`."""
        return self.experimental_local_results(value)

    def group(self, value: Any, name: str | None = None) -> Any:
        """`tf.group` of the local results; eagerly, a single value comes back as it is and
        several give None, as in TF."""
        flat = nest.flatten(self.experimental_local_results(value))
        return flat[0] if len(flat) == 1 and name is None else None

    def colocate_vars_with(self, colocate_with_variable: Any) -> Any:
        """Deprecated spelling of `extended.colocate_vars_with`."""
        return self._extended.colocate_vars_with(colocate_with_variable)

    def configure(
        self,
        session_config: Any = None,
        cluster_spec: Any = None,
        task_type: str | None = None,
        task_id: int | None = None,
    ) -> None:
        """TF 1 configuration: there are no sessions, so `session_config` changes nothing; a
        strategy cannot be turned into a multi-worker one after construction."""
        if cluster_spec is not None:
            jobs = cluster_spec.as_dict() if hasattr(cluster_spec, "as_dict") else cluster_spec
            tasks = sum(len(t) for t in dict(jobs).values())
            if tasks > 1 and type(self).__name__ != "MultiWorkerMirroredStrategy":
                raise ValueError(
                    f"{type(self).__name__}.configure: a cluster of {tasks} tasks needs "
                    "tf.distribute.MultiWorkerMirroredStrategy (one process per worker under "
                    "mpiexec, or a cluster_resolver)."
                )

    def experimental_run(self, fn: Callable[..., Any], input_iterator: Any = None) -> Any:
        """Deprecated: `run(fn, args=(input_iterator.get_next(),))` (no args without one)."""
        with self.scope():
            args = (input_iterator.get_next(),) if input_iterator is not None else ()
        return self.run(fn, args=args)

    def make_dataset_iterator(self, dataset: Any) -> Any:
        """Deprecated: an iterator over `experimental_distribute_dataset(dataset)`."""
        return iter(self.experimental_distribute_dataset(dataset))

    def __copy__(self) -> Any:
        raise RuntimeError("Must only deepcopy DistributionStrategy.")

    def __deepcopy__(self, memo: dict) -> Any:
        """A new strategy over the same devices; devices, communicators and the variables
        already created are shared resources, not state to duplicate."""
        cls = type(self)
        result = cls.__new__(cls)
        memo[id(self)] = result
        ext = self._extended
        for shared in (*ext._devices, getattr(ext, "_comm", None), getattr(ext, "_coll", None)):
            memo[id(shared)] = shared
        memo[id(ext._created)] = {}
        for key, value in self.__dict__.items():
            setattr(result, key, copy.deepcopy(value, memo))
        return result
