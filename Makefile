# The two commands of the README: `make demo` and `make test`. Each sets itself up.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA := $(abspath ../shared/data)
export LAYERFLOW_DATASETS ?= $(if $(wildcard $(DATA)/fashion-mnist),$(DATA),)

.PHONY: demo test lint bench clean

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
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python bench/op_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
