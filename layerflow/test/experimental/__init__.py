"""`tf.test.experimental`: `sync_devices`."""

from layerflow._src.testing.tools import sync_devices

__all__ = ["sync_devices"]
