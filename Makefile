# prmg: two commands on a fresh machine -- `make run` (the main job) and `make test` (the tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser run test test-verdict mutate lint emulator bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q prmg_cli    # an editable install gets no .pyc; PYTHONDONTWRITEBYTECODE=1 stops Python writing them
	touch $(STAMP)

emulator:
	$(MAKE) -C runners/emulator

run: install
	$(BIN)/prmg run cases/

# The HTML report's test opens it in Debian's headless chromium (CI machines start without it, as root).
browser:
	@command -v chromium >/dev/null || (echo 'make browser: no chromium found; installing it with apt-get (needs root)' && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

test: install browser
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# The tests that pin verdicts and exit codes (marked `verdict`), in under 30 s: what `make mutate` runs first.
VERDICT_FILES = $(shell grep -l "mark.verdict" tests/test_*.py)
test-verdict: install
	$(BIN)/python -m pytest -q -n 2 -m verdict $(VERDICT_FILES)

# Each mutant of tests/mutants.yaml applied alone in a scratch copy and the tests run against it (docs/developing.md);
# CPU-heavy and not part of `make test`.
mutate: install
	$(BIN)/python tests/mutate.py

lint: install
	$(BIN)/python -m compileall -q prmg_cli tests
	$(MAKE) -C runners/emulator lint
	$(BIN)/python -m prmg_cli.native --lint

bench: install
	$(BIN)/prmg bench --host

clean:
	rm -rf $(VENV) build *.egg-info
	$(MAKE) -C runners/emulator clean
