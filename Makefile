# Two commands set up everything on a fresh Linux or macOS machine with Python 3.11:
#   make app   - create .venv (first time), install the locked requirements, run the lab on http://localhost:8501
#   make test  - the same environment plus test tools; lint and the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# Extra pip options for every install, e.g. PIP_ARGS="--index-url https://mirror.example/simple" (README: Quick start).
PIP_ARGS ?=
# The lock files: every package at an exact version with its hashes (make lock writes them from pyproject.toml).
# CPU_RETRY: the Linux lock takes torch's CPU build (2.13.0+cpu), which plain PyPI does not serve (its Linux torch is
# the multi-GB CUDA build, which the lab never uses), so there an install that finds no such torch is tried once more
# with PyTorch's CPU index. macOS's torch is PyPI's own.
ifeq ($(shell uname -s),Darwin)
LOCK := requirements-macos.txt
LOCK_DEV := requirements-macos-dev.txt
CPU_RETRY := 0
else
LOCK := requirements.txt
LOCK_DEV := requirements-dev.txt
CPU_RETRY := 1
endif
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
INSTALL = $(PY) -m pip install -q --require-hashes --no-deps $(PIP_ARGS) -r
# Install lock $(1): first exactly as configured (pip's own index and settings); only where that finds no
# torch==2.13.0+cpu (and CPU_RETRY), once more with PyTorch's CPU index, said in one line. pip's messages wait in a
# log, shown afterwards for the last try only, less its "Ignored the following versions" line and with every line cut
# at 300 characters (pip lists every torch release it skipped on one line of some 2,000).
define install_lock
log=$$(mktemp); \
if $(INSTALL) $(1) 2>$$log; then ok=1; \
elif [ "$(CPU_RETRY)" = 1 ] && grep -q "No matching distribution found for torch" $$log; then \
  echo "make: this index has no torch==2.13.0+cpu (PyTorch's CPU build): installing $(1) from $(TORCH_CPU_INDEX) too" >&2; \
  if $(INSTALL) $(1) --extra-index-url $(TORCH_CPU_INDEX) 2>$$log; then ok=1; else ok=0; fi; \
else ok=0; fi; \
sed -e '/Ignored the following/d' -e 's/^\(.\{300\}\).*/\1 .../' $$log >&2; rm -f $$log; \
[ $$ok = 1 ] || { echo "make: installing $(1) failed (pip's messages above). Another index or mirror: run make again \
with PIP_ARGS=\"--index-url URL\" or PIP_ARGS=\"--extra-index-url URL\"." >&2; exit 1; }
endef

.PHONY: app test test-fast lint bench lock clean-cache screenshots

$(VENV)/.python:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else \
	  "make: the lock files are for Python 3.11, and .venv has %d.%d: remove .venv and run make PYTHON=python3.11 ..." \
	  % sys.version_info[:2])'
	touch $@

$(VENV)/.installed: $(VENV)/.python $(LOCK)
	@echo "make: installing $(LOCK) into $(VENV)"
	@$(call install_lock,$(LOCK))
	touch $@

$(VENV)/.installed-dev: $(VENV)/.python $(LOCK_DEV)
	@echo "make: installing $(LOCK_DEV) into $(VENV)"
	@$(call install_lock,$(LOCK_DEV))
	touch $@ $(VENV)/.installed

app: $(VENV)/.installed
	$(PY) -m app.serve --server.port $(PORT)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest

# For every change: the unit and page tiers (tests/conftest.py's TIERS), without the browser, slow and null tiers.
test-fast: lint
	$(PY) -m pytest -m "not browser and not slow and not nulls"

# The README's pictures (docs/screenshots/) from a store warmed in the real recipe, never quick mode: the default views
# are computed first (idempotent), then every page is photographed in Chromium (tests/screenshots.py).
screenshots: $(VENV)/.installed-dev
	$(PY) -m lab warm --defaults-only
	$(PY) -m tests.screenshots

bench: $(VENV)/.installed
	# issue 29's goals: no cached view over 0.3 s in 200 reruns; a newcomer's first number <= 15 s; warm and suite <= 10 min
	PYTHONPATH=. $(PY) bench/bench_views.py --before $${BEFORE:-main} --reruns 200
	PYTHONPATH=. $(PY) bench/bench_first_number.py
	PYTHONPATH=. $(PY) bench/bench_warm.py
	PYTHONPATH=. $(PY) bench/bench_suite.py
	PYTHONPATH=. $(PY) bench/bench_load.py --before $${BEFORE:-main}
	PYTHONPATH=. $(PY) bench/bench_walk.py
	PYTHONPATH=. $(PY) bench/bench_batched.py --lanes
	PYTHONPATH=. $(PY) bench/bench_train_step.py
	PYTHONPATH=. $(PY) bench/bench_delete.py
	PYTHONPATH=. $(PY) bench/bench_vit.py
	PYTHONPATH=. $(PY) bench/bench_shuffle_page.py
	PYTHONPATH=. $(PY) bench/bench_engine.py
	PYTHONPATH=. $(PY) bench/bench_cluster_idle.py
	PYTHONPATH=. $(PY) bench/bench_memory.py
	PYTHONPATH=. $(PY) bench/bench_hall.py
	PYTHONPATH=. $(PY) bench/bench_hall_light.py

# Resolve pyproject.toml's dependencies again into the four lock files (uv, in a throwaway environment): Linux x86_64
# with torch's CPU build, and macOS 14+ on Apple silicon; each with and without the test tools.
UV_VENV := $(shell mktemp -u /tmp/layerlab-uv.XXXXXX)
UV_COMPILE = $(UV_VENV)/bin/uv pip compile pyproject.toml --generate-hashes --python-version 3.11 -q \
  --custom-compile-command "make lock"
# Where the lock finds torch's CPU build: a local folder of wheels where there is one (TORCH_WHEELS, or this kind of
# machine's /opt/wheels), else PyTorch's CPU index, whose published hashes the lock then records.
TORCH_WHEELS ?= /opt/wheels
TORCH_SOURCE = $(if $(wildcard $(TORCH_WHEELS)/torch-*.whl),--find-links $(TORCH_WHEELS) --no-emit-find-links,\
  --extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match --no-emit-index-url)
lock:
	$(PYTHON) -m venv $(UV_VENV) && $(UV_VENV)/bin/pip install -q uv
	echo "torch==2.13.0+cpu" > $(UV_VENV)/linux.txt && echo "torch==2.13.0" > $(UV_VENV)/macos.txt
	for extra in "" "--extra test"; do \
	  suffix=$$( [ -n "$$extra" ] && echo -dev ); \
	  $(UV_COMPILE) $$extra --python-platform x86_64-manylinux_2_28 --override $(UV_VENV)/linux.txt \
	    $(TORCH_SOURCE) -o requirements$$suffix.txt && \
	  MACOSX_DEPLOYMENT_TARGET=14.0 $(UV_COMPILE) $$extra --python-platform aarch64-apple-darwin \
	    --override $(UV_VENV)/macos.txt -o requirements-macos$$suffix.txt || exit 1; \
	done
	rm -rf $(UV_VENV)

clean-cache:
	find cache -mindepth 1 ! -name README.md -delete
