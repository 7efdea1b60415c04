"""`tf.distribute.MirroredStrategy`: synchronous data parallelism over the devices of a process.

Each replica of `strategy.run` runs in its own thread (as in TF), under its device scope, with
its own tapes. `merge_call` (and so `all_reduce` and replica-context variable updates) is a
rendezvous: every replica hands in its arguments and waits; the calling thread runs the merge
function once, in cross-replica context, and releases them with their part of the result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from layerflow._src import backend
from layerflow._src.distribute import context
from layerflow._src.distribute.context import Entry
from layerflow._src.distribute.cross_device_ops import CrossDeviceOps, select_cross_device_ops
from layerflow._src.distribute.distribute_lib import (
    ReplicaContext,
    Strategy,
    StrategyExtended,
    resolve_device,
)
from layerflow._src.distribute.values import MirroredVariable, regroup, select_replica
from layerflow._src.framework.variables import variable_creator_scope
from layerflow._src.utils import naming

_log = logging.getLogger("layerflow")


class _Aborted(Exception):
    """Raised in a replica thread when another replica (or the merge function) failed."""


class _Coordinator:
    """The rendezvous of one `strategy.run`: replicas wait in merge_call, the caller merges."""

    def __init__(self, strategy: Strategy, n: int) -> None:
        self.strategy = strategy
        self.n = n
        self.cond = threading.Condition()
        self.slots: list[Any] = [None] * n
        self.waiting: list[int] = []
        self.generation = 0
        self.finished: list[int] = []
        self.result: Any = None
        self.error: BaseException | None = None
        self.broken = False

    # --- replica side -------------------------------------------------------------------
    def merge(self, index: int, merge_fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        with self.cond:
            if self.broken:
                raise _Aborted
            self.slots[index] = (merge_fn, args, kwargs)
            self.waiting.append(index)
            generation = self.generation
            self.cond.notify_all()
            while self.generation == generation and not self.broken:
                self.cond.wait()
            if self.broken:
                raise _Aborted
            return select_replica(index, self.result)

    def replica_done(self, index: int, error: BaseException | None) -> None:
        with self.cond:
            self.finished.append(index)
            if error is not None and not isinstance(error, _Aborted) and self.error is None:
                self.error = error
                self.broken = True
            self.cond.notify_all()

    # --- caller side --------------------------------------------------------------------
    def serve(self) -> None:
        """Run merges until every replica has finished (or something failed)."""
        while True:
            with self.cond:
                while True:
                    if len(self.finished) == self.n:
                        return
                    if self.broken:
                        self.cond.wait()
                        continue
                    if self.waiting and self.finished:
                        self._mismatch()
                        continue
                    if len(self.waiting) == self.n:
                        break
                    self.cond.wait()
                slots = [self.slots[i] for i in range(self.n)]
            try:
                result = self._run_merge(slots)
            except BaseException as err:  # noqa: BLE001 - re-raised by run() after the join
                with self.cond:
                    self.error, self.broken = err, True
                    self.cond.notify_all()
                continue
            with self.cond:
                self.result = result
                self.waiting.clear()
                self.generation += 1
                self.cond.notify_all()

    def _mismatch(self) -> None:
        self.error = RuntimeError(
            f"Replica(s) {sorted(self.finished)} returned from the function given to "
            f"strategy.run while replica(s) {sorted(self.waiting)} wait in merge_call "
            "(all_reduce, a variable update, ...). Every replica must make the same collective "
            "calls in the same order."
        )
        self.broken = True
        self.cond.notify_all()

    def _run_merge(self, slots: Sequence[Any]) -> Any:
        merge_fn = slots[0][0]
        args = regroup([s[1] for s in slots])
        kwargs = regroup([s[2] for s in slots])
        with context.push(Entry(self.strategy)):
            return merge_fn(self.strategy, *args, **kwargs)


class MirroredExtended(StrategyExtended):
    """Mirrored variables on every device, one replica per device, threads per `run`."""

    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        entry = context.top()
        ctx = entry.replica_context if entry is not None else None
        if ctx is not None and ctx._coordinator is not None:
            # Created inside strategy.run: every replica asks, one variable is made for all.
            def create(strategy: Strategy, grouped: Any) -> MirroredVariable:
                return self._make_mirrored(next_creator, select_replica(0, grouped).kwargs)

            return ctx.merge_call(create, args=(_Opaque(kwargs),))
        return self._make_mirrored(next_creator, kwargs)

    def _make_mirrored(self, next_creator: Callable[..., Any], kwargs: dict) -> MirroredVariable:
        with context.push(Entry(self._container)), backend.device_scope(self._devices[0]):
            primary = next_creator(**kwargs)
        return MirroredVariable._mirror(primary, self._devices, self._container)

    def _call_for_each_replica(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        n = len(self._devices)
        if n == 1:
            return super()._call_for_each_replica(fn, args, kwargs)
        coordinator = _Coordinator(self._container, n)
        results: list[Any] = [None] * n
        errors: list[BaseException | None] = [None] * n
        scope_prefix = naming.current_scope()

        def body(i: int) -> None:
            error = None
            try:
                ctx = ReplicaContext(self._container, i, i, coordinator)
                with (
                    self._replica_scope(i, ctx),
                    variable_creator_scope(self._creator),
                    naming.name_scope(scope_prefix or None),
                ):
                    results[i] = fn(*select_replica(i, args), **select_replica(i, kwargs))
            except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
                error = errors[i] = err
            finally:
                coordinator.replica_done(i, error)

        threads = [
            threading.Thread(target=body, args=(i,), name=f"replica_{i}", daemon=True)
            for i in range(n)
        ]
        for t in threads:
            t.start()
        try:
            coordinator.serve()
        finally:
            with coordinator.cond:
                if len(coordinator.finished) < n:
                    coordinator.broken = True
                    coordinator.cond.notify_all()
            for t in threads:
                t.join()
        if coordinator.error is not None:
            raise coordinator.error
        for err in errors:
            if err is not None and not isinstance(err, _Aborted):
                raise err
        return regroup(results)


class _Opaque:
    """Carries a replica's keyword arguments through merge_call as one leaf."""

    __slots__ = ("kwargs",)

    def __init__(self, kwargs: dict) -> None:
        self.kwargs = kwargs


class MirroredStrategy(Strategy):
    """Synchronous training on several devices of one machine (`tf.distribute.MirroredStrategy`).

    Variables created in `scope()` are mirrored on every device; `run` executes a function once
    per device; `reduce` and the replica context's `all_reduce` combine results.

    >>> MirroredStrategy(["/cpu:0"]).num_replicas_in_sync
    1
    """

    def __init__(
        self, devices: Sequence[str] | None = None, cross_device_ops: CrossDeviceOps | None = None
    ) -> None:
        if devices is None:
            gpus = backend.list_logical_devices("GPU")
            names = [d.name for d in gpus] or ["/device:CPU:0"]
        else:
            if isinstance(devices, str):
                raise TypeError(
                    f"MirroredStrategy(devices=...) takes a list of device names, got the string "
                    f"{devices!r}; write devices=[{devices!r}]."
                )
            names = list(devices)
        if not names:
            raise ValueError("MirroredStrategy: `devices` cannot be empty; pass at least one.")
        resolved = [resolve_device(d, "MirroredStrategy") for d in names]
        if len({d.name for d in resolved}) != len(resolved):
            raise ValueError(
                f"No duplicates allowed in `devices` argument: {tuple(d.name for d in resolved)}."
            )
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise TypeError(
                "cross_device_ops must be a tf.distribute.CrossDeviceOps such as "
                f"tf.distribute.ReductionToOneDevice(), got {type(cross_device_ops).__name__}."
            )
        ops = cross_device_ops or select_cross_device_ops(resolved)
        super().__init__(MirroredExtended(self, resolved, ops))
        _log.info("Using MirroredStrategy with devices %r", tuple(d.name for d in resolved))
