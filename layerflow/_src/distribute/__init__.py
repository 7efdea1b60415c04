"""Distribution strategies (L5): data parallelism over devices and processes."""
