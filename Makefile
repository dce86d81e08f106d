# tileir: the two commands are `make run` (set up, then compile the bundled seed
# kernels through the default pipeline and run one on the numpy back end) and
# `make test` (set up, then run every test). Both set up a virtualenv in .venv.

VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
MLIR_OPT := /usr/lib/llvm-22/bin/mlir-opt
HYPOTHESIS_PROFILE ?= ci
export HYPOTHESIS_PROFILE

.PHONY: setup run test lint mlir-opt bench

setup: $(VENV)/.installed

# torch is pinned to the CPU build that pip takes from local disk; an unpinned torch
# (pulled in by pypto) would download a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test,pypto]"
	touch $@

# The real MLIR, to check that the generic form tileir prints is MLIR (Debian package).
mlir-opt:
	@test -x $(MLIR_OPT) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq mlir-22-tools >/dev/null; \
	  else echo "note: $(MLIR_OPT) missing; install Debian's mlir-22-tools to run the mlir-opt test"; fi; }

run: setup
	$(PY) examples/run_seed_kernels.py

# The venv's bin goes first on PATH: tests and lit run `tileir-opt` / `tileir-run`.
test: setup mlir-opt
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/pytest -n auto -q
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/lit -q tests/filecheck

lint: setup
	$(BIN)/ruff format --check tileir frontends tests benchmarks examples
	$(BIN)/ruff check tileir frontends tests benchmarks examples

bench: setup
	$(PY) benchmarks/numpy_backend.py
	$(PY) benchmarks/passes.py
	$(PY) benchmarks/parse.py
