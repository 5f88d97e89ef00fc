# The README's two commands: `make demo` and `make test`. Both work on a new machine from
# nothing but Python >= 3.11 (and, for the editor clients, Node 20): they make .venv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint package clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

demo: $(STAMP)
	@echo "== gpulens check examples/"
	-$(BIN)/gpulens check examples/
	@echo
	@echo "== gpulens status"
	-$(BIN)/gpulens status

lint: $(STAMP)
	$(BIN)/ruff check server tests benchmarks
	$(BIN)/ruff format --check server tests benchmarks

test: lint
	$(BIN)/python -m pytest -m "not gpu"

package: $(STAMP)
	$(BIN)/python -m pip install --quiet build
	$(BIN)/python -m build --wheel --outdir dist .

clean:
	rm -rf $(VENV) dist build .pytest_cache .ruff_cache
