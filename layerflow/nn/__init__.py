"""`tf.nn`: activations, losses and layers' building blocks."""

from layerflow._src.ops.math_ops import relu, sigmoid, tanh
