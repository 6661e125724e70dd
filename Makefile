# Two commands: `make run` (set up, open the workbench; a fresh data dir starts with the shipped seeds) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.sandmle-installed

.PHONY: setup run lint test test-fast sandbox-deps screenshots clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# CPU torch first where none is installed (a local wheel on these machines); GPU users keep theirs.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0 || $(BIN)/python -m pip install -q torch
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

# What the sandbox backends need: bubblewrap (local) and docker.io (the docker backend; its tests start dockerd),
# and tmux (the tests start the installed `sandmle` in a real 80x24 terminal), installed when we are root with
# apt-get; elsewhere a note (the docker tests then skip, saying why).
sandbox-deps:
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing=" bubblewrap"; \
	command -v dockerd >/dev/null 2>&1 || missing="$$missing docker.io"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null 2>&1 \
	      || echo "note: could not install$$missing; see 'sandmle doctor'"; \
	  else echo "note: not installed:$$missing; 'sandmle doctor' says how to add it"; fi; \
	fi

setup: $(STAMP) sandbox-deps

run: setup
	$(BIN)/sandmle

# The import contracts (pyproject [tool.importlinter]) and the types (pyproject [tool.mypy]) first, then the suite.
lint: setup
	$(BIN)/lint-imports
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

test-fast: lint
	$(BIN)/python -m pytest -q -m "not slow"

# The README's screenshots of the workbench (SVG + text capture) on the demo store.
screenshots: setup
	$(BIN)/python -m workbench.screenshots docs/screenshots

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
