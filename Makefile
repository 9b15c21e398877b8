# Set-up and test entry points; every target installs what it needs itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SOURCES := pyproject.toml setup.py $(wildcard native/*.pyx native/*.pxd native/*.h)
BASE_STAMP := $(VENV)/.installed-base
TEST_STAMP := $(VENV)/.installed-test

.PHONY: install install-test broker lint test test-fast test-pythons bench faults native dist system-deps kafkajs-deps clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The broker alone: the package and its runtime dependencies.
$(BASE_STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# Tests add the real clients, Hypothesis, PySpark and friends.
$(TEST_STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(BASE_STAMP)

install: $(BASE_STAMP)
install-test: $(TEST_STAMP)

native: $(BASE_STAMP)
	$(BIN)/python setup.py -q build_ext --inplace

# Single node, no ZooKeeper, data under ./data, listening on 127.0.0.1:9092.
broker: install
	$(BIN)/kcore broker --override log.dirs=./data

# kcat (a real client), a JRE (PySpark in the report test), ZooKeeper's
# jars (the servers of tests/cluster/) and Chromium (the browser that
# tests/console/ drives through Playwright) come from Debian, ss(8)
# (iproute2) reads socket buffer sizes and brokers' connections back for
# the tests, and mkfs.ext4 (e2fsprogs) and losetup (mount) make the
# loop-device disk whose power tests/faults cuts. Node and npm run
# KafkaJS, the JavaScript client of tests/compat/test_kafkajs.py.
system-deps:
	command -v node >/dev/null || (apt-get update -qq && apt-get install -y -qq nodejs >/dev/null)
	command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq npm >/dev/null)
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	command -v ss >/dev/null || (apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null)
	command -v kcat >/dev/null || (apt-get update -qq && apt-get install -y -qq kcat >/dev/null)
	command -v java >/dev/null || (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null)
	test -f /usr/share/java/zookeeper.jar || (apt-get update -qq && apt-get install -y -qq zookeeper >/dev/null)
	command -v mkfs.ext4 >/dev/null || (apt-get update -qq && apt-get install -y -qq e2fsprogs >/dev/null)
	command -v losetup >/dev/null || (apt-get update -qq && apt-get install -y -qq mount >/dev/null)
	command -v cc >/dev/null || (apt-get update -qq && apt-get install -y -qq gcc libc6-dev >/dev/null)

# KafkaJS and its codec plugins at the versions of package-lock.json; the
# lz4 and zstd plugins compile native addons with node-gyp (about 2 min on
# 2 cores), so the install is redone only when the lock file changes.
# build_from_source: zstd-napi would first try to download a prebuilt
# binary from outside the npm registry.
KAFKAJS := tests/compat/kafkajs
KAFKAJS_STAMP := $(KAFKAJS)/node_modules/.installed
$(KAFKAJS_STAMP): $(KAFKAJS)/package.json $(KAFKAJS)/package-lock.json | system-deps
	cd $(KAFKAJS) && npm_config_build_from_source=true npm ci --no-audit --no-fund
	touch $@

kafkajs-deps: $(KAFKAJS_STAMP)

# Static checks: ruff (lint + import order), mypy on kcore/, stubtest of
# the .pyi stubs against the built kernels, and the layer map as import
# contracts (lint-imports); see pyproject.toml.
lint: install-test
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m mypy.stubtest kcore._native
	$(BIN)/lint-imports

# The static checks run first: a lint or type regression fails CI before
# the tests. The suite mostly waits (on brokers, clients, ZooKeeper), so
# all but the `serial` tests (tests/conftest.py) run on TEST_WORKERS
# pytest-xdist workers, a file to a worker (files share module fixtures);
# then the serial ones run alone. Both parts run, and either failing fails.
TEST_WORKERS ?= 3
test: lint system-deps kafkajs-deps
	$(BIN)/python -m pytest -q --durations=30 -n $(TEST_WORKERS) --dist loadfile -m "not serial" tests; \
	parallel=$$?; \
	$(BIN)/python -m pytest -q --durations=20 -m serial tests; \
	serial=$$?; \
	$(MAKE) --no-print-directory test-pythons; \
	pythons=$$?; \
	test $$parallel -eq 0 && test $$serial -eq 0 && test $$pythons -eq 0

# The unit suite under the newer CPythons the package claims
# (requires-python >= 3.11), each in a venv of its own (.venv-3.13 ...):
# about 2 minutes each here. The interpreter is python3.13 on the PATH, or
# else pyenv's build of that version. An interpreter this machine lacks, or a venv
# the package index cannot fill, is reported and skipped; a failing test
# fails the target. `make test-pythons NEWER_PYTHONS="3.12 3.13"` for more.
NEWER_PYTHONS ?= 3.13
test-pythons:
	@status=0; for version in $(NEWER_PYTHONS); do \
	  venv=.venv-$$version; python=; \
	  for candidate in python$$version \
	      $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$version*/bin/python$$version 2>/dev/null | sort -V | tail -1); do \
	    if $$candidate -c "import sys" >/dev/null 2>&1; then python=$$candidate; break; fi; done; \
	  if [ -z "$$python" ]; then \
	    echo "test-pythons: no python$$version here, skipped"; continue; fi; \
	  if ! { test -x $$venv/bin/python || $$python -m venv $$venv; } \
	      || ! $$venv/bin/pip install -q -e '.[test]'; then \
	    echo "test-pythons: cannot install into $$venv, skipped"; continue; fi; \
	  echo "test-pythons: tests/unit under python$$version"; \
	  $$venv/bin/python -m pytest -q -n $(TEST_WORKERS) tests/unit || status=1; \
	done; exit $$status

test-fast: install-test
	$(BIN)/python -m pytest -q tests/unit

bench: install-test
	$(BIN)/python -m pytest -q bench --benchmark-enable --benchmark-only

# The sdist and, built from it in a clean environment, the wheel for this
# platform (docs/testing.md says why not manylinux) into dist/.
dist: install-test
	$(BIN)/python -m build --outdir dist .

# The fault suite's long run (tests/faults/harness/run.py), as root: every
# nemesis for MINUTES each against every workload on 3 (or BROKERS=5)
# brokers and a 3-server ZooKeeper ensemble in network namespaces;
# results.jsonl, failover.jsonl and each round's history under FAULTS_OUT.
MINUTES ?= 2
BROKERS ?= 3
FAULTS_OUT ?= faults-runs
faults: install-test system-deps
	$(BIN)/python -m tests.faults.harness.run --minutes $(MINUTES) --brokers $(BROKERS) --out $(FAULTS_OUT)

clean:
	rm -rf build dist native/*.c kcore/_native/*.so $(VENV) .venv-3.*
