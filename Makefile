# prmg: two commands on a fresh machine -- `make run` (the main job) and `make test` (the tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser run test test-verdict mutate lint emulator bench clean geir-syntax

install: $(STAMP)

# compileall: an editable install gets no .pyc (PYTHONDONTWRITEBYTECODE=1 stops Python writing them). No comment
# on a recipe line: make echoes it, past 80 columns, on a newcomer's first `make run`.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q prmg_cli
	touch $(STAMP)

emulator:
	$(MAKE) -C runners/emulator

run: install
	$(BIN)/prmg run cases/

# The HTML report's test opens it in Debian's headless chromium (CI machines start without it, as root).
# apt's and dpkg's lines go to a temporary file, printed only when the install fails.
browser:
	@command -v chromium >/dev/null || { echo 'make browser: no chromium found; installing it with apt-get (needs root)'; \
		log=$$(mktemp); if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
		>$$log 2>&1; then rm -f $$log; echo 'make browser: chromium installed'; else cat $$log; rm -f $$log; exit 1; fi; }

test: install browser
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# The tests that pin verdicts and exit codes (marked `verdict`), in under 30 s: what `make mutate` runs first. One
# process (xdist's start costs more than it saves here) without the hypothesis and xdist plugins (no verdict test
# uses them; with bytecode off, pytest rewrote all of hypothesis on every start); the emulator and compiled helper
# are built once into $(VENV)/test-builds (by source hash) and reused by later runs.
VERDICT_FILES = $(shell grep -l "mark.verdict" tests/test_*.py)
test-verdict: install
	PRMG_TEST_EMULATOR_HOME=$(abspath $(VENV))/test-builds $(BIN)/python -m pytest -q -p no:hypothesispytest \
		-p no:xdist -m verdict $(VERDICT_FILES)

# Each mutant of tests/mutants.yaml applied alone in a scratch copy and the tests run against it (docs/developing.md);
# CPU-heavy and not part of `make test`.
mutate: install
	$(BIN)/python tests/mutate.py

lint: install
	$(BIN)/python -m compileall -q prmg_cli tests
	$(MAKE) -C runners/emulator lint
	$(BIN)/python -c 'from prmg_cli import native; native.lint()'

# The graph-mode shim (runners/geir/) against GE's public headers, syntax only: GE_INCLUDE names the folders to -I,
# e.g. a CANN toolkit's compiler/include, or checkouts of github.com/hicann/ge and hicann/metadef (docs/runners.md).
CXX ?= g++
geir-syntax:
	@test -n "$(GE_INCLUDE)" || { echo 'make geir-syntax: set GE_INCLUDE="DIR ..." (folders holding ge/ge_api.h and' \
	  'graph/; docs/runners.md)'; exit 2; }
	$(CXX) -std=c++17 -fsyntax-only -Wall -Wextra -Werror $(addprefix -I,$(GE_INCLUDE)) runners/geir/prmg_geir.cpp

bench: install
	$(BIN)/prmg bench --host

clean:
	rm -rf $(VENV) build *.egg-info
	$(MAKE) -C runners/emulator clean
