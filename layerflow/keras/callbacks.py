"""`tf.keras.callbacks`: hooks into fit/evaluate/predict."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.keras.training.callbacks import (
    Callback,
    CallbackList,
    CSVLogger,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    ModelCheckpoint,
    ProgbarLogger,
    ReduceLROnPlateau,
    TerminateOnNaN,
)
from layerflow._src.keras.training.callbacks_extra import (
    BackupAndRestore,
    BaseLogger,
    RemoteMonitor,
    TensorBoard,
)
from layerflow._src.keras.training.sidecar import SidecarEvaluatorModelExport
from layerflow.keras import _callbacks_experimental as experimental
