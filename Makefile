# privlab: two commands on a fresh machine.
#   make demo   -- create .venv, install privlab, anatomize (and attack) the bundled Adult data
#   make test   -- create .venv, install privlab with test extras, run ruff, the import
#                  contract (lint-imports) and pytest
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint format bench mutation clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
# Anonymeter (tests/test_anonymeter_adapter.py, privlab.attacks.anonymeter): 1.1.0 pins
# numpy<1.27 and pyarrow<22, which privlab's numpy>=2 excludes, yet runs on numpy 2; its
# other dependencies (scikit-learn, pandas, joblib, numba, polars) are installed above.
	$(BIN)/python -m pip install --quiet --no-deps 'anonymeter==1.1.0'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/privlab demo --force   # replaces demo-out/ of an earlier run

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools
	$(BIN)/lint-imports
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks tools
	$(BIN)/ruff format src tests benchmarks tools

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f; done

# Mutation testing of the privacy-critical modules (docs/mutation.md); slow, not part of test.
mutation: $(STAMP)
	nice -n 10 $(BIN)/python tools/mutation.py $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache
