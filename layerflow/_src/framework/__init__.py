"""dtypes, TensorShape, Tensor, Variable, the Trackable protocol and TF's error classes."""
