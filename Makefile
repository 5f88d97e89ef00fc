# The README's two commands: `make demo` and `make test`. Both work on a new machine from
# nothing but Python >= 3.11 and Node 20: they make .venv (and node_modules) themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-python neovim-test lint package wheel clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# reinstall when the dependencies change
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

demo: $(STAMP)
	@echo "== gpulens check examples/   (pitfalls, then the same code written well)"
	@# exit 1 means "found problems": what these files are for
	$(BIN)/gpulens check examples/train_pitfalls.py examples/cupy_pitfalls.py examples/pitfalls.ipynb; test $$? -eq 1
	$(BIN)/gpulens check examples/train_fixed.py examples/cupy_fixed.py
	@echo
	@echo "== gpulens check --explain GPU001"
	@$(BIN)/gpulens check --explain GPU001 | head -12
	@echo
	@echo "== gpulens status"
	$(BIN)/gpulens status
	@echo
	@echo "== gpulens profile examples/profile_demo.py --cell 2   (host backend where there is no GPU)"
	$(BIN)/gpulens profile examples/profile_demo.py --cell 2
	@echo
	@echo "== gpulens profile --replay: cell 3 (the GPU training loop) as recorded on an H200"
	$(BIN)/gpulens profile --replay tests/fixtures/profiler/demo_cell3_h200_payload.json

# the editor clients' fragments add their eslint and prettier checks to this target
lint: $(STAMP)
	$(BIN)/ruff check server tests benchmarks scripts
	$(BIN)/ruff format --check server tests benchmarks scripts
	$(BIN)/mypy

test-python: lint
	$(BIN)/python -m pytest -m "not gpu"

# Neovim's built-in LSP client, headless, against the server (test-python runs it too);
# Debian's neovim is installed on first use, as the e2e tests install Chromium
neovim-test: $(STAMP)
	tests/editors/setup_neovim.sh >/dev/null
	$(BIN)/python -m pytest tests/editors -p no:cacheprovider

# the editor clients add their targets (vscode-test, lab-test, ...) in these fragments
-include extension/make.mk
-include labextension/make.mk

test: test-python $(if $(wildcard extension/make.mk),vscode-test) $(if $(wildcard labextension/make.mk),lab-test)

wheel: $(STAMP)
	$(BIN)/python -m build --wheel --outdir dist .

package: wheel $(if $(wildcard extension/make.mk),vscode-package)

clean:
	rm -rf $(VENV) dist build .pytest_cache .ruff_cache extension/out
