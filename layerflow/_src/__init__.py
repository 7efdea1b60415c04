"""The implementation; the public API is the facade in `layerflow/`.

Who may touch arrays. A Tensor's backend array (`._data`) and the array module (`xp`,
NumPy or CuPy) belong to the layers that compute:

- `backend/` is the only code that knows NumPy from CuPy: devices, host copies, and the
  device collectives (`backend/collectives.py`: NCCL). Nothing above it names `cupy`,
  `cuda` or `nccl`.
- `framework/`, `autodiff/` and `ops/` compute on arrays: every op's forward (and the
  Variable's in-place write, `Variable._update`) is here.
- The services (`saving/`, `distribute/`, `data/`) move arrays between devices and the host
  and wrap them into tensors (a batch, a checkpoint, a replica's copy); they do not compute
  model math on them.
- `keras/` never touches an array: no `._data`, no `xp`, no `__array_namespace__`. It
  computes with ops (a metric's statistics and an optimizer's update are gradient-free ops in
  `ops/metric_ops.py` and `ops/optimizer_ops.py`), changes state through `Variable`
  (`assign`, `assign_add`, `assign_sub`, `_update`), reads values with the public Tensor API
  (`shape`, `dtype`, `numpy()`), and feeds in-memory data through `data/arrays.py`. So a
  traced `tf.function` sees every computation as an op and every state change as a
  Variable write.

`tests/test_array_access.py` enforces the keras rule and the device rule.
"""
