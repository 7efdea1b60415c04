"""callbacks.py split into callback_base, progbar and checkpoint_callbacks: the old import path
and the public facade still give the same classes."""

import layerflow as tf
from layerflow._src.keras.training import callback_base, callbacks, checkpoint_callbacks
from layerflow._src.keras.utils import progbar


def test_old_path_re_exports_the_split_classes():
    assert callbacks.Callback is callback_base.Callback is tf.keras.callbacks.Callback
    assert callbacks.ProgbarLogger is progbar.ProgbarLogger is tf.keras.callbacks.ProgbarLogger
    assert callbacks.ModelCheckpoint is checkpoint_callbacks.ModelCheckpoint
    assert tf.keras.callbacks.ModelCheckpoint is callbacks.ModelCheckpoint
    for name in callbacks.__all__:
        assert isinstance(getattr(callbacks, name), type), name


def test_configure_adds_history_and_progbar():
    cbl = callbacks.configure([], model=None, verbose=1, _history=True, epochs=1)
    kinds = [type(c) for c in cbl.callbacks]
    assert callbacks.History in kinds and progbar.ProgbarLogger in kinds
    quiet = callbacks.configure([], model=None, verbose=0, epochs=1)
    assert progbar.ProgbarLogger not in [type(c) for c in quiet.callbacks]
