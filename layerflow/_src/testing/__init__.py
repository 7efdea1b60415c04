"""`tf.test`'s implementation: `TestCase` (case.py) and the gradient, device and benchmark
tools (tools.py)."""
