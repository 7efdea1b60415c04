# The two commands of the README: `make demo` and `make test`. Each sets itself up.
# `make gpu-check` runs the device tests and the MLP/LeNet benchmarks on CuPy (GPU machines).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA := $(abspath ../shared/data)
export LAYERFLOW_DATASETS ?= $(if $(wildcard $(DATA)/fashion-mnist),$(DATA),)
# A Python with real TensorFlow/Keras for the interop tests and the benchmarks' peers.
PEERS := $(abspath ../peers/bin/python)
export LAYERFLOW_PEERS ?= $(if $(wildcard $(PEERS)),$(PEERS),)
NO_OPENBLAS_HINTS := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE

.PHONY: demo test lint bench gpu-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[demo]'
	touch $@

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest

demo: $(VENV)/.demo-installed
	$(BIN)/python -m layerflow.demo

lint: $(VENV)/.test-installed
	$(BIN)/ruff check layerflow tests bench

bench: $(VENV)/.test-installed
	$(NO_OPENBLAS_HINTS) $(BIN)/python bench/op_overhead.py

# The GPU is layerflow's default device when CuPy sees one, so the benches run there; the same
# benches with CUDA_VISIBLE_DEVICES= give the CPU figures of the same machine beside them.
GPU_PROBE := import sys, layerflow as tf; gpus = tf.config.list_logical_devices("GPU"); \
	print("gpu-check: devices", [d.name for d in tf.config.list_logical_devices()]); sys.exit(0 if gpus else 3)
BENCH_ONLY := --only numpy,layerflow_tape,layerflow_fit

gpu-check: $(VENV)/.test-installed
	@$(BIN)/python -c '$(GPU_PROBE)'; status=$$?; \
	if [ $$status -eq 3 ]; then \
		echo "gpu-check: SKIPPED: no GPU visible to layerflow (CuPy not importable, no CUDA driver or no device)."; \
		echo "gpu-check: on an NVIDIA machine, pip install -e '.[gpu]' and run make gpu-check again."; \
		exit 0; \
	fi; \
	[ $$status -eq 0 ] || exit $$status; \
	set -ex; \
	$(BIN)/python -m pytest -m gpu -p no:cacheprovider -rs; \
	$(NO_OPENBLAS_HINTS) $(BIN)/python bench/mlp_epoch.py --epochs 3 $(BENCH_ONLY); \
	$(NO_OPENBLAS_HINTS) CUDA_VISIBLE_DEVICES= $(BIN)/python bench/mlp_epoch.py --epochs 3 $(BENCH_ONLY); \
	$(NO_OPENBLAS_HINTS) $(BIN)/python bench/lenet_epoch.py --epochs 2 $(BENCH_ONLY); \
	$(NO_OPENBLAS_HINTS) CUDA_VISIBLE_DEVICES= $(BIN)/python bench/lenet_epoch.py --epochs 2 $(BENCH_ONLY)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
