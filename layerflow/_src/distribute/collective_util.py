"""`CommunicationImplementation` and `CommunicationOptions`: hints for collectives.

Layerflow's collectives are the cross-device ops of `MirroredStrategy` (one process) and MPI
(`MultiWorkerMirroredStrategy`); the implementation and packing hints are accepted and
validated as in TF, and, as TF documents, "may or may not change the actual behavior".
"""

from __future__ import annotations

import copy
import enum
from typing import Any


class CommunicationImplementation(enum.Enum):
    """Which collective implementation to prefer: AUTO, RING or NCCL."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


# TF's deprecated alias (the same enum).
CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Options for `all_reduce`/`batch_reduce_to` and multi-worker strategies.

    >>> o = CommunicationOptions(bytes_per_pack=1024, implementation="nccl")
    >>> o.bytes_per_pack, o.implementation
    (1024, <CommunicationImplementation.NCCL: 'NCCL'>)
    """

    def __init__(
        self,
        bytes_per_pack: int = 0,
        timeout_seconds: float | None = None,
        implementation: Any = CommunicationImplementation.AUTO,
    ) -> None:
        if bytes_per_pack < 0:
            raise ValueError(f"Argument `bytes_per_pack` must be >=0, Received {bytes_per_pack}.")
        if isinstance(implementation, str):
            try:
                implementation = CommunicationImplementation(implementation.upper())
            except ValueError:
                raise ValueError(
                    f"Unknown communication implementation {implementation!r}; expected one of "
                    "'AUTO', 'RING', 'NCCL'."
                ) from None
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError(
                "Argument `implementation` must be instance of "
                "`tf.distribute.experimental.CommunicationImplementation`."
            )
        if timeout_seconds is not None and timeout_seconds < 0:
            raise ValueError(f"Argument `timeout_seconds` must be >= 0, got {timeout_seconds}.")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options: CommunicationOptions | None) -> CommunicationOptions:
        """A copy of these options overridden by the non-default fields of `options`."""
        merged = copy.deepcopy(self)
        if options is None:
            return merged
        if options.bytes_per_pack != 0:
            merged.bytes_per_pack = options.bytes_per_pack
        if options.timeout_seconds is not None:
            merged.timeout_seconds = options.timeout_seconds
        if options.implementation != CommunicationImplementation.AUTO:
            merged.implementation = options.implementation
        return merged

    def __str__(self) -> str:
        return (
            f"Options(bytes_per_pack={self.bytes_per_pack},"
            f"timeout_seconds={self.timeout_seconds}, "
            f"implementation={self.implementation})"
        )


class CollectiveHints:
    """TF's deprecated spelling: `CollectiveHints(...)` makes a `CommunicationOptions`."""

    def __new__(  # type: ignore[misc]
        cls, bytes_per_pack: int = 0, timeout_seconds: float | None = None
    ) -> CommunicationOptions:
        return CommunicationOptions(bytes_per_pack=bytes_per_pack, timeout_seconds=timeout_seconds)
