# privlab: two commands on a fresh machine.
#   make demo       -- create .venv, install privlab (runtime dependencies only, at the locked
#                      versions), audit Anatomy on the bundled Adult data
#   make test       -- create .venv, install the locked test environment (requirements/test.lock),
#                      run ruff, the import contract, the declared-imports check and every test
#   make test-fast  -- the unit tests only (no CLI subprocesses, README tour, Spark or
#                      reproductions): the inner loop, a few minutes on 2 cores
# Installs go through uv (pinned below, bootstrapped into .venv by pip); the lock is made by
# `make lock` from pyproject.toml and resolves to what a plain `pip install privlab` gets.
# Bytecode is compiled at install (as pip does, uv does not by default): where
# PYTHONDONTWRITEBYTECODE is set, every `privlab` process would otherwise recompile pandas,
# scipy and the rest (1.5 s a process, measured; the suite starts hundreds).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV_VERSION := 0.13.9
UV     := $(BIN)/uv
LOCK   := requirements/test.lock
# Anonymeter (tests/test_anonymeter_adapter.py, privlab.attacks.anonymeter): 1.1.0 pins
# numpy<1.27 and pyarrow<22, which privlab's numpy>=2 excludes, yet runs on numpy 2; its
# other dependencies (scikit-learn, pandas, joblib, numba, polars) are in the lock.
ANONYMETER := anonymeter==1.1.0
# every import in src/ is a declared dependency (the shared tool where there is one, else its copy)
UNDECLARED := $(firstword $(wildcard ../shared/tools/undeclared_imports.py) tools/undeclared_imports.py)
# pytest's workers: `make test JOBS=1` runs in one process
JOBS   ?= auto
# The workers already fill the cores: each keeps OpenMP (scikit-learn, BLAS) to one thread, as
# threads that wait on each other across workers cost more than they gain (the app's tests,
# 2 workers on 2 cores: 162 s with OpenMP's default threads, 132 s with one). Numba's and
# JAX's threads are their own and unchanged; a test that needs threads sets them itself.
WORKERS_ENV := OMP_NUM_THREADS=1

.PHONY: demo test test-fast test-lowest lock lint format bench mutation smoke docs clean

$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv==$(UV_VERSION)'

# the demo: privlab and its runtime dependencies, constrained to the locked versions
$(VENV)/.demo-installed: pyproject.toml $(LOCK) | $(UV)
	$(UV) pip install --quiet --compile-bytecode --python $(BIN)/python -c $(LOCK) -e .
	touch $@

# the test environment: exactly the lock (anything else in .venv is removed), then privlab
$(VENV)/.test-installed: pyproject.toml $(LOCK) | $(UV)
	$(UV) pip sync --quiet --compile-bytecode --python $(BIN)/python $(LOCK)
	$(UV) pip install --quiet --compile-bytecode --python $(BIN)/python --no-deps -e . '$(ANONYMETER)'
	rm -f $(VENV)/.demo-installed
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/python -m compileall -q src >/dev/null
	$(BIN)/privlab demo --force   # replaces demo-out/ of an earlier run

test: $(VENV)/.test-installed
	$(BIN)/python -m compileall -q src >/dev/null
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools
	$(BIN)/lint-imports
	$(BIN)/python $(UNDECLARED)
	$(WORKERS_ENV) $(BIN)/pytest -n $(JOBS) --dist worksteal -m "not serial"
	# memory measurements, alone on the machine (only the files that hold one are collected)
	$(BIN)/pytest -n 0 -m serial $$(grep -l "mark.serial" tests/test_*.py)

test-fast: $(VENV)/.test-installed
	$(BIN)/python -m compileall -q src >/dev/null
	$(WORKERS_ENV) $(BIN)/pytest -n $(JOBS) -m "not slow and not system and not spark and not serial"

# The suite on the oldest versions pyproject.toml admits (uv's lowest-direct resolution of the
# runtime dependencies), in its own venv: how the lower bounds are tested.  The test tools are
# the newest that install beside those versions (mlxtend 0.25, say, needs a newer matplotlib).
LOWEST_TEST_TOOLS := pytest pytest-xdist hypothesis packaging pgmpy statsmodels mlxtend \
    playwright polars pyspark sphinx
test-lowest: | $(UV)
	rm -rf .venv-lowest
	$(UV) venv --quiet --python $(BIN)/python .venv-lowest
	$(UV) pip compile --quiet --resolution lowest-direct --python-version 3.11 \
	    pyproject.toml -o .venv-lowest/runtime.txt
	$(UV) pip install --quiet --compile-bytecode --python .venv-lowest/bin/python \
	    -r .venv-lowest/runtime.txt -c .venv-lowest/runtime.txt $(LOWEST_TEST_TOOLS)
	$(UV) pip install --quiet --compile-bytecode --python .venv-lowest/bin/python --no-deps -e . '$(ANONYMETER)'
	.venv-lowest/bin/python -c "import numpy, pandas, scipy, sklearn, typer; print('lowest:', numpy.__version__, pandas.__version__, scipy.__version__, sklearn.__version__, typer.__version__)"
	.venv-lowest/bin/pytest -n $(JOBS) $(PYTEST_ARGS)

# Regenerate the lock from pyproject.toml (newest versions that resolve; commit the result).
lock: | $(UV)
	$(UV) pip compile --quiet --universal --python-version 3.11 --extra test \
	    pyproject.toml -o $(LOCK)

# The wheel, installed without extras into a clean venv with the newest versions, used as a
# user would (what .ci/run does after `make test`).
smoke: | $(UV)
	bash tools/wheel_smoke.sh

# The API reference from the docstrings (docs/api, Sphinx) into build/docs/index.html; any
# warning fails (tests/test_api_docs.py builds it in `make test` too).
docs: $(VENV)/.test-installed
	$(BIN)/python -m sphinx -E -q -W --keep-going -b html docs/api build/docs
	@echo "the API reference: build/docs/index.html"

lint: $(VENV)/.test-installed
	$(BIN)/ruff check --fix src tests benchmarks tools
	$(BIN)/ruff format src tests benchmarks tools

bench: $(VENV)/.test-installed
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f; done

# Mutation testing of the privacy-critical modules (docs/mutation.md); slow, not part of test.
# A sample (a new seed each run), then every EQUIVALENT entry of the same modules re-run
# (--check-equivalent ignores -n, --seed, --table and --json).
mutation: $(VENV)/.test-installed
	nice -n 10 $(BIN)/python tools/mutation.py $(MUTATION_ARGS)
	nice -n 10 $(BIN)/python tools/mutation.py $(MUTATION_ARGS) --check-equivalent

clean:
	rm -rf $(VENV) .venv-lowest build dist *.egg-info src/*.egg-info .pytest_cache .ruff_cache
