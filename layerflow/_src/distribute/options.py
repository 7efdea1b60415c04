"""`tf.distribute.InputOptions`, `InputReplicationMode` and `RunOptions`."""

from __future__ import annotations

import collections
import enum
from typing import Any


class InputReplicationMode(enum.Enum):
    """How `distribute_datasets_from_function` calls `dataset_fn`: once per worker
    (`PER_WORKER`, its elements dealt to the replicas in turn) or once per replica
    (`PER_REPLICA`, each replica reads its own dataset)."""

    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class InputOptions(
    collections.namedtuple(
        "InputOptions",
        [
            "experimental_fetch_to_device",
            "experimental_replication_mode",
            "experimental_place_dataset_on_device",
            "experimental_per_replica_buffer_size",
        ],
    )
):
    """Options of `experimental_distribute_dataset(s_from_function)`.

    `experimental_fetch_to_device=False` leaves the input batches on the host (CPU) instead of
    moving each replica's part to its device.

    >>> InputOptions().experimental_fetch_to_device
    True
    """

    def __new__(
        cls,
        experimental_fetch_to_device: bool | None = None,
        experimental_replication_mode: InputReplicationMode = InputReplicationMode.PER_WORKER,
        experimental_place_dataset_on_device: bool = False,
        experimental_per_replica_buffer_size: int = 1,
    ) -> InputOptions:
        if experimental_fetch_to_device is None:
            experimental_fetch_to_device = True
        return super().__new__(
            cls,
            experimental_fetch_to_device,
            experimental_replication_mode,
            experimental_place_dataset_on_device,
            experimental_per_replica_buffer_size,
        )


class RunOptions(
    collections.namedtuple(
        "RunOptions",
        [
            "experimental_enable_dynamic_batch_size",
            "experimental_bucketizing_dynamic_shape",
            "experimental_xla_options",
        ],
    )
):
    """Options of `strategy.run`; they concern TPU compilation in TF and change nothing for
    the strategies here, which run each replica eagerly or through `tf.function`."""

    def __new__(
        cls,
        experimental_enable_dynamic_batch_size: bool = True,
        experimental_bucketizing_dynamic_shape: bool = False,
        experimental_xla_options: Any = None,
    ) -> RunOptions:
        return super().__new__(
            cls,
            experimental_enable_dynamic_batch_size,
            experimental_bucketizing_dynamic_shape,
            experimental_xla_options,
        )


def check_input_options(options: Any, from_function: bool) -> InputOptions:
    """`options` (None: the defaults) checked as TF checks them."""
    if options is None:
        return InputOptions()
    if not isinstance(options, InputOptions):
        raise TypeError(
            f"options must be a tf.distribute.InputOptions, got {type(options).__name__}."
        )
    per_replica = options.experimental_replication_mode == InputReplicationMode.PER_REPLICA
    if per_replica and not from_function:
        raise NotImplementedError(
            "InputReplicationMode.PER_REPLICA is only supported in "
            "`distribute_datasets_from_function`."
        )
    if not per_replica and options.experimental_place_dataset_on_device:
        raise ValueError(
            "When `experimental_place_dataset_on_device` is set for dataset placement, you "
            "must also specify `PER_REPLICA` for the replication mode"
        )
    if (
        per_replica
        and options.experimental_fetch_to_device
        and (options.experimental_place_dataset_on_device)
    ):
        raise ValueError(
            "`experimental_place_dataset_on_device` can not be set to True when "
            "experimental_fetch_to_device is True and replication mode is set to `PER_REPLICA`"
        )
    return options
