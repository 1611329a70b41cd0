# prmg: two commands on a fresh machine -- `make run` (the main job) and `make test` (the tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint emulator bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

emulator:
	$(MAKE) -C runners/emulator

run: install
	$(BIN)/prmg run cases/

test: install
	$(BIN)/python -m pytest -q -n 2

lint: install
	$(BIN)/python -m compileall -q prmg_cli tests
	$(MAKE) -C runners/emulator lint

bench: install
	$(BIN)/prmg bench --host

clean:
	rm -rf $(VENV) build *.egg-info
	$(MAKE) -C runners/emulator clean
