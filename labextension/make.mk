# JupyterLab extension targets, included by the root Makefile (paths from the repo root).
# lab-build builds only when labextension/ sources changed (labextension/build_hook.py decides);
# editable installs never build it; wheels (`make wheel`/`make package`) always carry it.
BIN   ?= .venv/bin
STAMP ?= .venv/.installed
LAB_DIR := labextension
LAB_NPM := npm --prefix $(LAB_DIR) --workspaces=false
LAB_UI_TESTS := tests/jupyter/test_lab_ui.py

.PHONY: lab-build lab-lint lab-unit lab-ui lab-test lab-test-wheel lab-package

lab-build: $(STAMP)
	$(BIN)/python $(LAB_DIR)/build_hook.py

# eslint (typescript-eslint, strict and type-checked) and prettier; part of `make lint`
lab-lint:
	@test -d $(LAB_DIR)/node_modules || $(LAB_NPM) install --no-audit --no-fund
	$(LAB_NPM) run --silent lint

lint: lab-lint

# pure TypeScript: strict typecheck and the unit tests (installs node_modules when missing);
# the tests draw payloads the Python side makes as they start, so they need the .venv
lab-unit: $(STAMP)
	@test -d $(LAB_DIR)/node_modules || $(LAB_NPM) install --no-audit --no-fund
	$(LAB_NPM) run typecheck
	$(LAB_NPM) test

# the UI tests in Chromium against a real `jupyter lab` (they build the extension if stale)
lab-ui: lab-build
	$(BIN)/python -m pytest $(LAB_UI_TESTS) -p no:cacheprovider

# under `make test`, pytest (test-python) has already run tests/jupyter/test_lab_*.py
lab-test: lab-unit $(if $(filter test,$(MAKECMDGOALS)),,lab-ui)

# a fresh venv with only `pip install "<wheel>[jupyter]"`, no Node (cached per source hash)
lab-test-wheel: $(STAMP)
	$(BIN)/python -m pytest tests/jupyter/test_lab_wheel.py -p no:cacheprovider

# the wheel `make wheel` builds carries the lab extension as shared data
lab-package: wheel
	$(BIN)/python -m zipfile -l $$(ls -t dist/gpulens-*.whl | head -1) | grep "share/jupyter/labextensions/gpulens/package.json"
