# Two commands do all the set-up on a fresh machine:
#   make demo   devices, the check table on whatever device is present, generated/ sources
#   make test   the test suite (CPU OpenCL/SYCL on Intel's CPU runtime, CUDA compile matrix)
# A machine whose python3 already has pycuda (the GPU machine, after .gpu/setup.sh) uses it
# directly; otherwise everything goes into .venv.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
EXTRAS := opencl,sycl,cpu-runtime,pocl,test

ifeq ($(CI),true)
  # CI: keep pip, pyopencl, pocl and qkgen caches out of $$HOME.
  export XDG_CACHE_HOME := $(CURDIR)/.cache
  export PIP_CACHE_DIR := $(CURDIR)/.cache/pip
  export POCL_CACHE_DIR := $(CURDIR)/.cache/pocl
  export QKGEN_CACHE_DIR := $(CURDIR)/.cache/qkgen
endif

HAS_GPU_STACK := $(shell $(PYTHON) -c "import pycuda.driver, qkgen" >/dev/null 2>&1 && echo yes)
ifeq ($(HAS_GPU_STACK),yes)
  PY := $(PYTHON)
  SETUP :=
else
  PY := $(VENV)/bin/python
  SETUP := $(VENV)/.installed
endif

.PHONY: demo test test-gpu clean

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

demo: $(SETUP)
	$(PY) -m qkgen devices
	$(PY) -m qkgen check
	$(PY) -m qkgen dump --all -o generated/

test: $(SETUP)
	$(PY) -m pytest -q

test-gpu: $(SETUP)
	$(PY) -m pytest -q -m gpu

clean:
	rm -rf $(VENV) generated .cache .pytest_cache
