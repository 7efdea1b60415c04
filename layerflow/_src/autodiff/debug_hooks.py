"""`tf.debugging.enable_check_numerics` and `tf.debugging.set_log_device_placement`: watch every
op's outputs as it runs.

Both install a *watcher* among the active tapes of the current thread. Every recorded op is
handed to each active tape, so the watcher sees each op with its inputs and outputs; when
neither is enabled there is no watcher and an op pays nothing. The watcher records nothing and
keeps nothing: it checks the outputs for NaN/Inf (raising TF's InvalidArgumentError naming the
op) or prints the op's device, as TF does. Ops that have no gradient (integer and comparison
ops, which produce no NaN) are not shown to tapes and so are not checked or logged.
"""

from __future__ import annotations

import sys
from typing import Any

from layerflow._src import backend
from layerflow._src.autodiff.tape import _state
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import TensorLike


class _EveryId:
    """A tape's watched set that contains every value, and forgets what is added."""

    __slots__ = ()

    def __contains__(self, key: object) -> bool:
        return True

    def __setitem__(self, key: object, value: object) -> None:
        pass

    def get(self, key: object, default: Any = None) -> Any:
        return default

    def values(self) -> list[Any]:
        return []


class _Watcher:
    """Looks like a tape to `record` (`_watched`, `_nodes.append`); see the module docstring."""

    def __init__(self) -> None:
        self._watched = _EveryId()
        self._watch_accessed = False
        self._nodes = self  # record() appends each op's node here
        self._recording = True
        self.check_numerics = False
        self.log_placement = False
        # `enable_dump_debug_info`'s recorder (`debug_dump.py`), or None.
        self.dump: Any = None

    def append(self, node: tuple) -> None:
        prim, inputs, result, _, _ = node
        outs = result if prim.multi_out else (result,)
        if self.log_placement:
            device = outs[0].device if outs else "?"
            print(f"Executing op {prim.name} in device {device}", file=sys.stderr)
        if self.dump is not None:
            self.dump(prim, inputs, outs)
        if self.check_numerics:
            for i, out in enumerate(outs):
                _check(prim.name, i, len(outs), out, inputs)

    # The rest of the tape interface, for code that walks every active tape.
    def watched_variables(self) -> tuple:
        return ()

    def _pop(self) -> None:
        pass

    def _push(self) -> None:
        pass


def _check(opname: str, index: int, n_outputs: int, out: Any, inputs: Any) -> None:
    data = out._data
    if data.dtype.kind not in "fc":
        return
    xp = out._device.xp
    finite = xp.isfinite(data)
    if bool(xp.all(finite)):
        return
    host = backend.to_host(data)
    nan = int((host != host).sum())
    pos, neg = int((host == float("inf")).sum()), int((host == float("-inf")).sum())
    counts = "".join(
        f"  # of {label} elements: {n}\n"
        for label, n in (("+NaN", nan), ("-Inf", neg), ("+Inf", pos))
        if n
    )
    tensors = [x for x in inputs if isinstance(x, TensorLike)]
    if len(tensors) == 1:
        shown = f"  Input tensor: {tensors[0]}\n"
    else:
        shown = f"  Input tensors ({len(tensors)}):\n" + "".join(
            f"         {i}: {t}\n" for i, t in enumerate(tensors)
        )
    kinds = " and ".join(k for k, n in (("NaN", nan), ("+Inf", pos), ("-Inf", neg)) if n)
    raise errors.InvalidArgumentError(
        None,
        opname,
        f"\n\n!!! Detected Infinity or NaN in output {index} of eagerly-executing op "
        f'"{opname}" (# of outputs: {n_outputs}) !!!\n  dtype: {out.dtype}\n  shape: '
        f"{out.shape}\n{counts}\n{shown}\n : Tensor had {kinds} values",
    )


def _find_watcher() -> _Watcher | None:
    for tape in _state.tapes:
        if isinstance(tape, _Watcher):
            return tape
    return None


def _ensure_watcher() -> _Watcher:
    watcher = _find_watcher()
    if watcher is None:
        watcher = _Watcher()
        _state.tapes.insert(0, watcher)
    return watcher


def _drop_if_idle(watcher: _Watcher) -> None:
    if not (watcher.check_numerics or watcher.log_placement or watcher.dump is not None):
        _state.tapes.remove(watcher)


def enable_check_numerics(stack_height_limit: int = 30, path_length_limit: int = 50) -> None:
    """From now on (in this thread), every op whose float output holds NaN or Inf raises
    InvalidArgumentError naming the op, its output, and its inputs.

    >>> import layerflow as tf
    >>> tf.debugging.enable_check_numerics()
    >>> try:
    ...     tf.constant([float("inf")]) * 2.0
    ... except tf.errors.InvalidArgumentError as e:
    ...     print("Infinity or NaN" in str(e))
    True
    >>> tf.debugging.disable_check_numerics()
    """
    _ensure_watcher().check_numerics = True


def disable_check_numerics() -> None:
    watcher = _find_watcher()
    if watcher is not None:
        watcher.check_numerics = False
        _drop_if_idle(watcher)


def set_log_device_placement(enabled: bool) -> None:
    """Print each op and the device it ran on to stderr, as TF does."""
    watcher = _ensure_watcher() if enabled else _find_watcher()
    if watcher is not None:
        watcher.log_placement = bool(enabled)
        _drop_if_idle(watcher)


def get_log_device_placement() -> bool:
    watcher = _find_watcher()
    return watcher is not None and watcher.log_placement
