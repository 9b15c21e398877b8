# Set-up and test entry points; every target installs what it needs itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install broker test test-fast bench native clean

$(STAMP): pyproject.toml setup.py $(wildcard native/*.pyx native/*.pxd native/*.h)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

native: $(STAMP)
	$(BIN)/python setup.py -q build_ext --inplace

# Single node, no ZooKeeper, data under ./data, listening on 127.0.0.1:9092.
broker: install
	$(BIN)/kcore broker --override log.dirs=./data

# kcat comes from Debian; the compat suite runs it as a real client.
system-deps:
	command -v kcat >/dev/null || (apt-get update -qq && apt-get install -y -qq kcat >/dev/null)

test: install system-deps
	$(BIN)/python -m pytest -q tests

test-fast: install
	$(BIN)/python -m pytest -q tests/unit

bench: install
	$(BIN)/python -m pytest -q bench --benchmark-enable --benchmark-only

clean:
	rm -rf build native/*.c kcore/_native/*.so $(VENV)
