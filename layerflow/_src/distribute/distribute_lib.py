"""`tf.distribute` core: ReduceOp, Strategy, StrategyExtended, ReplicaContext, the default and
one-device strategies, and the functions that say which strategy and context are current.

Cross-replica context is the code inside `strategy.scope()`; replica context is the body of
`strategy.run`, once per replica. `ReplicaContext.merge_call` steps from the second into the
first: every replica hands in its arguments and one call sees them all (as `PerReplica`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from layerflow._src import backend
from layerflow._src.distribute import context
from layerflow._src.distribute.context import Entry
from layerflow._src.distribute.cross_device_ops import CrossDeviceOps, ReductionToOneDevice
from layerflow._src.distribute.options import RunOptions
from layerflow._src.distribute.reduction import (  # noqa: F401 - re-exported
    ReduceOp,
    _destination_devices,
    as_reduce_op,
    check_same_spec,
    reduce_to,
    resolve_device,
)
from layerflow._src.distribute.strategy_compat import StrategyCompatMixin
from layerflow._src.distribute.values import (
    DistributedValues,
    Mirrored,
    MirroredVariable,
    PerReplica,
    local_results,
    select_replica,
)
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import variable_creator_scope
from layerflow._src.ops import math_ops
from layerflow._src.utils import nest

# --- which strategy, which context ----------------------------------------------------------


def get_strategy() -> Strategy:
    """The strategy whose scope is active, or the default (single-device, no-op) strategy.

    >>> get_strategy().num_replicas_in_sync
    1
    """
    entry = context.top()
    return entry.strategy if entry is not None else _default_strategy()


def has_strategy() -> bool:
    """Whether a non-default strategy's scope (or `run`) is active."""
    entry = context.top()
    return entry is not None and entry.strategy is not _default_strategy()


_GLOBAL_SCOPE: list[Any] = []


def experimental_set_strategy(strategy: Strategy | None) -> None:
    """Make `strategy` current without a `with strategy.scope()` block (None: undo it).

    >>> s = OneDeviceStrategy("/cpu:0")
    >>> experimental_set_strategy(s); get_strategy() is s
    True
    >>> experimental_set_strategy(None); get_strategy() is s
    False
    """
    if _GLOBAL_SCOPE:
        _GLOBAL_SCOPE.pop().__exit__(None, None, None)
    if has_strategy():
        raise RuntimeError("Must not be called inside a `tf.distribute.Strategy` scope.")
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _GLOBAL_SCOPE.append(scope)


def in_cross_replica_context() -> bool:
    """True inside `strategy.scope()` (or a merge_call), False inside `strategy.run` or outside."""
    entry = context.top()
    return entry is not None and entry.replica_context is None


def get_replica_context() -> ReplicaContext | None:
    """The current ReplicaContext; None in cross-replica context; the default one outside."""
    entry = context.top()
    if entry is None:
        return _default_strategy().extended._default_replica_context
    return entry.replica_context


# --- replica context ----------------------------------------------------------------------------


class ReplicaContext:
    """What a replica's function can do with its peers: all-reduce, all-gather, merge_call."""

    def __init__(
        self,
        strategy: Strategy,
        replica_id_in_sync_group: int,
        local_index: int = 0,
        coordinator: Any = None,
    ) -> None:
        self._strategy = strategy
        self._replica_id = int(replica_id_in_sync_group)
        self._local_index = local_index
        self._coordinator = coordinator

    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> Tensor:
        device = backend.current_device()
        return Tensor(device.xp.asarray(self._replica_id, dtype="int32"), device)

    @property
    def devices(self) -> tuple[str, ...]:
        return (self._strategy.extended._devices[self._local_index].name,)

    def merge_call(
        self, merge_fn: Callable[..., Any], args: Sequence[Any] = (), kwargs: dict | None = None
    ) -> Any:
        """Run `merge_fn(strategy, *args)` once, in cross-replica context, with every replica's
        arguments grouped (`PerReplica` where they differ); each replica gets its part back."""
        kwargs = kwargs or {}
        if self._coordinator is not None:
            return self._coordinator.merge(self._local_index, merge_fn, tuple(args), kwargs)
        with context.push(Entry(self._strategy)):
            result = merge_fn(self._strategy, *args, **kwargs)
        return select_replica(self._local_index, result)

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        """Combine `value` (a nested structure of tensors) across replicas; every replica gets
        the result on its own device."""
        op = as_reduce_op(reduce_op)
        if self._coordinator is None and self.num_replicas_in_sync == 1:
            return nest.map_structure(lambda v: None if v is None else convert_to_tensor(v), value)

        def merge(strategy: Strategy, grouped: Any) -> Any:
            ext = strategy.extended
            if not nest.is_nested(grouped):
                return ext._all_reduce(op, grouped)
            return nest.map_structure(lambda v: ext._all_reduce(op, v), grouped)

        return self.merge_call(merge, args=(value,))

    def all_gather(self, value: Any, axis: int, options: Any = None) -> Any:
        """Concatenate every replica's `value` along `axis`; every replica gets the whole."""

        def merge(strategy: Strategy, grouped: Any) -> Any:
            ext = strategy.extended

            def gather(v: Any) -> Any:
                parts = local_results(v, 1) if not isinstance(v, DistributedValues) else v.values
                if not isinstance(v, DistributedValues):
                    parts = parts * strategy.num_replicas_in_sync
                whole = ext._concat(parts, axis, ext._devices[0])
                return ext._mirror_tensor(whole)

            return (
                nest.map_structure(gather, grouped) if nest.is_nested(grouped) else gather(grouped)
            )

        return self.merge_call(merge, args=(value,))

    def __repr__(self) -> str:
        return f"<ReplicaContext replica {self._replica_id} of {self.num_replicas_in_sync}>"


# --- the extended interface -------------------------------------------------------------------


class StrategyExtended:
    """What a strategy does with devices (`strategy.extended`)."""

    def __init__(
        self,
        container: Strategy,
        devices: Sequence[backend.Device],
        cross_device_ops: CrossDeviceOps | None = None,
        place: bool = True,
    ) -> None:
        self._container = container
        self._devices = tuple(devices)
        self._cross_device_ops = cross_device_ops or ReductionToOneDevice()
        self._place = place
        self._created: dict[int, Any] = {}
        # Global index of this process's first replica (non-zero only across processes).
        self._first_local_replica = 0

    # --- facts --------------------------------------------------------------------------
    @property
    def worker_devices(self) -> tuple[str, ...]:
        return tuple(d.name for d in self._devices)

    @property
    def parameter_devices(self) -> tuple[str, ...]:
        return self.worker_devices

    @property
    def _num_replicas_in_sync(self) -> int:
        return len(self._devices)

    @property
    def experimental_require_static_shapes(self) -> bool:
        return False

    def variable_created_in_scope(self, v: Any) -> bool:
        if isinstance(v, MirroredVariable):
            return v._strategy is self._container
        return self._created.get(id(v)) is v

    # --- variables --------------------------------------------------------------------------
    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        device = self._devices[0] if self._place else None
        with backend.device_scope(device) if device is not None else contextlib.nullcontext():
            v = next_creator(**kwargs)
        self._created[id(v)] = v
        return v

    def colocate_vars_with(self, colocate_with_variable: Any) -> Any:
        """A scope (inside `strategy.scope()`) whose new variables are placed on the same
        device(s) as `colocate_with_variable`."""
        entry = context.top()
        if entry is None or entry.strategy is not self._container:
            raise ValueError(
                "colocate_vars_with() must be used inside `with strategy.scope()` of "
                f"{self._container!r}."
            )
        if not self.variable_created_in_scope(colocate_with_variable):
            raise ValueError(
                f"colocate_vars_with: {getattr(colocate_with_variable, 'name', '?')!r} was not "
                "created in this strategy's scope; colocate only with its own variables."
            )
        target = colocate_with_variable
        device = target.values[0]._device if isinstance(target, MirroredVariable) else None
        device = device or getattr(target, "_device", None)

        def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
            # Mirrored variables are on every device already; others follow the variable.
            if isinstance(target, MirroredVariable) or device is None:
                return next_creator(**kwargs)
            with backend.device_scope(device):
                return next_creator(**kwargs)

        return variable_creator_scope(creator)

    # --- running replicas -------------------------------------------------------------------
    def _replica_scope(self, index: int, ctx: ReplicaContext) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        stack.enter_context(context.push(Entry(self._container, ctx, index)))
        if self._place:
            stack.enter_context(backend.device_scope(self._devices[index]))
        return stack

    def _call_for_each_replica(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        ctx = ReplicaContext(self._container, self._first_local_replica, 0)
        with self._replica_scope(0, ctx):
            return fn(*select_replica(0, args), **select_replica(0, kwargs))

    def call_for_each_replica(
        self, fn: Callable[..., Any], args: Sequence[Any] = (), kwargs: dict | None = None
    ) -> Any:
        return self._call_for_each_replica(fn, tuple(args), kwargs or {})

    def update(
        self,
        var: Any,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict | None = None,
        group: bool = True,
    ) -> Any:
        """Run `fn(var, *args)` once in cross-replica context; writes reach every copy."""
        with context.push(Entry(self._container)):
            return fn(var, *select_replica(0, tuple(args)), **select_replica(0, kwargs or {}))

    # --- reducing ---------------------------------------------------------------------------
    def _components(self, value: Any) -> list[Tensor]:
        if isinstance(value, MirroredVariable):
            return list(value.values)
        parts = value.values if isinstance(value, DistributedValues) else [value]
        return [p if isinstance(p, TensorLike) else convert_to_tensor(p) for p in parts]

    def _reduce_values(
        self, op: str, tensors: Sequence[TensorLike], destination: backend.Device
    ) -> Tensor:
        check_same_spec(tensors, f"Reducing ({op}) the replicas' values")
        arrays = [t._data for t in tensors]
        sources = [t._device for t in tensors]
        out = self._cross_device_ops.reduce_arrays(op, arrays, sources, [destination])
        return Tensor(out[0], destination)

    def _input_context(self) -> Any:
        from layerflow._src.distribute.input_lib import InputContext

        return InputContext(1, 0, self._num_replicas_in_sync)

    def _next_step(self, has_next: bool, step: int) -> bool:
        """Whether every worker has another batch at `step` (one process: this one's answer);
        multi-worker strategies check that the workers agree."""
        return has_next

    def _first_replica_value(self, value: Tensor) -> Tensor:
        """The first replica's value (ONLY_FIRST_REPLICA); across processes, rank 0's."""
        return value

    def _sum_over_workers(self, count: int) -> int:
        """`count` summed over the processes of the strategy (one process: `count`)."""
        return count

    def _reduce(self, op: str, value: Any) -> Any:
        destination = backend.scoped_device() or backend.cpu_device()
        return self.reduce_to(op, value, destination)

    def reduce_to(self, reduce_op: Any, value: Any, destinations: Any, options: Any = None) -> Any:
        """Reduce `value` onto `destinations` (a device, a variable, or distributed values)."""
        return reduce_to(
            self._cross_device_ops, reduce_op, value, destinations, self._num_replicas_in_sync
        )

    def batch_reduce_to(
        self, reduce_op: Any, value_destination_pairs: Sequence[Any], options: Any = None
    ) -> list[Any]:
        return [self.reduce_to(reduce_op, v, d) for v, d in value_destination_pairs]

    def _all_reduce(self, op: str, value: Any) -> Any:
        """A PerReplica (or one replicated value) reduced, as a Mirrored over the replicas."""
        if value is None:
            return None
        parts = self._components(value)
        if len(parts) == 1 and self._num_replicas_in_sync > 1:
            parts = parts * self._num_replicas_in_sync
        check_same_spec(parts, f"all_reduce ({op})")
        arrays = [t._data for t in parts]
        sources = [t._device for t in parts]
        outs = self._cross_device_ops.reduce_arrays(op, arrays, sources, list(self._devices))
        return Mirrored([Tensor(a, d) for a, d in zip(outs, self._devices)])

    def _mirror_tensor(self, t: Tensor) -> Mirrored:
        copies = []
        for d in self._devices:
            moved = backend.to_device(t._data, d)
            copies.append(Tensor(moved if d is t._device else moved.copy(), d))
        return Mirrored(copies)

    def _concat(self, parts: Sequence[Any], axis: int, device: backend.Device) -> Tensor:
        tensors = [p if isinstance(p, TensorLike) else convert_to_tensor(p) for p in parts]
        arrays = [backend.to_device(t._data, device) for t in tensors]
        if any(a.ndim == 0 for a in arrays):
            raise ValueError("gather/all_gather needs tensors of rank >= 1; got a scalar.")
        return Tensor(device.xp.concatenate(arrays, axis=axis), device)


# --- strategies -------------------------------------------------------------------------------


class Strategy(StrategyCompatMixin):
    """Base of the distribution strategies (`tf.distribute.Strategy`)."""

    def __init__(self, extended: StrategyExtended) -> None:
        self._extended = extended

    @property
    def extended(self) -> StrategyExtended:
        return self._extended

    @property
    def cluster_resolver(self) -> Any:
        """The cluster resolver of a multi-worker strategy; None for single-process ones (as
        in TF: `MirroredStrategy`, `OneDeviceStrategy` and the default strategy)."""
        return None

    @property
    def num_replicas_in_sync(self) -> int:
        return self._extended._num_replicas_in_sync

    def scope(self) -> contextlib.AbstractContextManager[Strategy]:
        """Make this the current strategy; variables created inside are distributed by it."""
        return _scope(self)

    def _require_cross_replica(self, what: str) -> None:
        entry = context.top()
        if entry is not None and entry.replica_context is not None and entry.strategy is self:
            raise RuntimeError(
                f"strategy.{what}() must be called in cross-replica context (outside "
                "strategy.run). Inside a replica, use "
                "tf.distribute.get_replica_context().all_reduce(...) or merge_call(...)."
            )

    def run(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict | None = None,
        options: Any = None,
    ) -> Any:
        """Run `fn(*args, **kwargs)` on every replica, each under its device and with its part
        of any `PerReplica` argument; returns a `PerReplica` where results differ.

        >>> get_strategy().run(lambda x: x + 1, args=(1,))
        2
        """
        self._require_cross_replica("run")
        if options is not None and not isinstance(options, RunOptions):
            raise TypeError(
                f"strategy.run(options=...) takes a tf.distribute.RunOptions, got "
                f"{type(options).__name__}."
            )
        with self.scope():
            return self._extended._call_for_each_replica(fn, tuple(args), kwargs or {})

    def reduce(self, reduce_op: Any, value: Any, axis: int | Sequence[int] | None = None) -> Any:
        """Combine a per-replica `value` across replicas (and along `axis` within each)."""
        self._require_cross_replica("reduce")
        op = as_reduce_op(reduce_op)
        ext = self._extended
        if axis is not None:
            sums = self._map_local(lambda v: math_ops.reduce_sum(v, axis=axis), value)
            if op == "SUM":
                return ext._reduce("SUM", sums)
            axes = [axis] if isinstance(axis, int) else list(axis)

            def count(v: Any) -> Tensor:
                t = v if isinstance(v, TensorLike) else convert_to_tensor(v)
                n = 1
                for a in axes:
                    n *= int(t.shape[a])
                return Tensor(t._device.xp.asarray(n, dtype=t._data.dtype), t._device)

            numer = ext._reduce("SUM", sums)
            denom = ext._reduce("SUM", self._map_local(count, value))
            return Tensor(numer._data / denom._data, numer._device)
        if (
            not isinstance(value, DistributedValues | MirroredVariable)
            and ext._num_replicas_in_sync == 1
        ):
            return value if isinstance(value, TensorLike) else convert_to_tensor(value)
        return ext._reduce(op, value)

    def _map_local(self, fn: Callable[[Any], Any], value: Any) -> Any:
        if isinstance(value, DistributedValues):
            out = []
            for v in value.values:
                device = v._device if isinstance(v, TensorLike) else None
                with backend.device_scope(device) if device else contextlib.nullcontext():
                    out.append(fn(v))
            return PerReplica(out)
        return fn(value)

    def experimental_local_results(self, value: Any) -> tuple[Any, ...]:
        """The per-replica parts of `value`, in replica order (a 1-tuple for plain values)."""
        return local_results(value, self.num_replicas_in_sync)

    def gather(self, value: Any, axis: int) -> Tensor:
        """Concatenate the per-replica parts of `value` along `axis` on the current device."""
        self._require_cross_replica("gather")
        parts = self.experimental_local_results(value)
        return self._extended._concat(parts, axis, backend.scoped_device() or backend.cpu_device())

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """Split every global batch of `dataset` (any iterable of batches) across replicas."""
        from layerflow._src.distribute.input_lib import DistributedDataset

        return DistributedDataset(self, dataset, options)

    def distribute_datasets_from_function(
        self, dataset_fn: Callable[..., Any], options: Any = None
    ) -> Any:
        """Each replica takes its own batches from the dataset `dataset_fn(input_context)`."""
        from layerflow._src.distribute.input_lib import DatasetsFromFunction

        return DatasetsFromFunction(self, dataset_fn, options)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_values_from_function(self, value_fn: Callable[..., Any]) -> Any:
        """`PerReplica` of `value_fn(ValueContext)` evaluated once per replica on its device."""
        from layerflow._src.distribute.input_lib import ValueContext

        out = []
        n = self.num_replicas_in_sync
        for i, device in enumerate(self._extended._devices):
            with (
                backend.device_scope(device) if self._extended._place else contextlib.nullcontext()
            ):
                out.append(value_fn(ValueContext(i, n)))
        return out[0] if n == 1 else PerReplica(out)

    def __repr__(self) -> str:
        return f"<tf.distribute.{type(self).__name__} over {self._extended.worker_devices}>"


class _StrategyScope:
    __slots__ = ("_strategy", "_stack")

    def __init__(self, strategy: Strategy) -> None:
        self._strategy = strategy
        self._stack: list[contextlib.ExitStack] = []

    def __enter__(self) -> Strategy:
        entry = context.top()
        default = _default_strategy()
        if (
            entry is not None
            and entry.strategy is not self._strategy
            and entry.strategy is not default
            and self._strategy is not default
        ):
            raise ValueError(
                f"Mixing different tf.distribute.Strategy objects: {self._strategy!r} is entered "
                f"inside the scope of {entry.strategy!r}. Leave the outer scope first."
            )
        stack = contextlib.ExitStack()
        stack.enter_context(context.push(Entry(self._strategy)))
        if self._strategy is not default:
            stack.enter_context(variable_creator_scope(self._strategy.extended._creator))
        self._stack.append(stack)
        return self._strategy

    def __exit__(self, *exc: Any) -> None:
        self._stack.pop().__exit__(*exc)


def _scope(strategy: Strategy) -> _StrategyScope:
    return _StrategyScope(strategy)


class _DefaultExtended(StrategyExtended):
    def __init__(self, container: Strategy) -> None:
        super().__init__(container, [], place=False)
        self._default_replica_context = ReplicaContext(container, 0)

    @property
    def _devices(self) -> tuple[backend.Device, ...]:  # type: ignore[override]
        return (backend.current_device(),)

    @_devices.setter
    def _devices(self, value: Any) -> None:
        pass

    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        return next_creator(**kwargs)

    def _call_for_each_replica(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        with context.push(Entry(self._container, self._default_replica_context, 0)):
            return fn(*args, **kwargs)


class _DefaultStrategy(Strategy):
    """What `tf.distribute.get_strategy()` returns outside every scope: one replica, no-ops."""

    def __init__(self) -> None:
        super().__init__(_DefaultExtended(self))

    def __deepcopy__(self, memo: dict) -> Strategy:
        raise RuntimeError("Should only create a single instance of _DefaultDistributionStrategy")


_DEFAULT: list[Strategy] = []


def _default_strategy() -> Strategy:
    if not _DEFAULT:
        _DEFAULT.append(_DefaultStrategy())
    return _DEFAULT[0]


class OneDeviceStrategy(Strategy):
    """Everything on one device: variables, replica functions, input batches.

    >>> OneDeviceStrategy("/cpu:0").extended.worker_devices
    ('/job:localhost/replica:0/task:0/device:CPU:0',)
    """

    def __init__(self, device: str) -> None:
        super().__init__(StrategyExtended(self, [resolve_device(device, "OneDeviceStrategy")]))
