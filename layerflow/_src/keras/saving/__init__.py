"""Keras saving: the whole-model `.keras` zip (`saving_lib`, `model_config`, `config_json`) and
Keras's weight files (`keras_weights`: `save_weights`/`load_weights` in every format; `h5_weights`:
Keras 2's HDF5 layout). The package imports nothing itself, so the engine can import
`keras_weights` without pulling in `model_config`, which imports the engine."""
