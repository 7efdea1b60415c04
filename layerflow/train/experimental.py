"""`tf.train.experimental`: Python state in checkpoints. Re-exports only.

TF's checkpoint sharding API (`ShardingCallback`, `ShardByTaskPolicy`, `MaxShardSizePolicy`,
`ShardableTensor`) is absent on purpose: a layerflow checkpoint is one safetensors file per save,
never split into shards, so a policy for splitting it would have nothing to act on.
"""

from layerflow._src.saving.python_state import PythonState

_SHARDING = ("ShardingCallback", "ShardByTaskPolicy", "MaxShardSizePolicy", "ShardableTensor")


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name in _SHARDING:
        raise AttributeError(
            f"layerflow has no tf.train.experimental.{name}: TF uses it to split a checkpoint "
            "into several shard files, and a layerflow checkpoint is always one safetensors "
            "file (written atomically), so there is nothing to shard. Save as usual with "
            "tf.train.Checkpoint(...).save(prefix); CheckpointOptions(experimental_sharding_"
            "callback=...) is not needed."
        )
    raise AttributeError(f"module 'layerflow.train.experimental' has no attribute {name!r}")
