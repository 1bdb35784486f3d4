# aikito_mem — every target does its own set-up (virtual environment, installs).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two stamps: the runtime package alone (make demo) and with the test and lint tools
# (make test, make lint, make bench).  Both are editable installs of this tree; the
# second one satisfies the first.
VENV_STAMP := $(VENV)/.created
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed

$(VENV_STAMP):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	touch $(VENV_STAMP)

$(RUNTIME_STAMP): pyproject.toml $(VENV_STAMP)
	$(PY) -m pip install -q --config-settings editable_mode=compat -e .
	$(PY) -m compileall -q aikito_mem
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml $(VENV_STAMP)
	$(PY) -m pip install -q --config-settings editable_mode=compat -e '.[test,lint]'
	$(PY) -m compileall -q aikito_mem
	touch $(RUNTIME_STAMP) $(STAMP)

# In parallel (one worker per core), printing the ten slowest tests.
PYTEST_ARGS ?= -n auto --durations=10
test: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# The suite on every supported Python found here (pyenv or PATH), each in its own
# environment; a version that is not installed is reported and skipped.
PYTHONS ?= 3.11 3.12 3.13 3.14
test-all:
	@for v in $(PYTHONS); do \
	  exe=$$(command -v python$$v || true); \
	  if [ -z "$$exe" ] || ! "$$exe" -c pass 2>/dev/null; then \
	    echo "test-all: python$$v not installed here: skipped"; continue; fi; \
	  $(MAKE) --no-print-directory test PYTHON=$$exe VENV=.venv-$$v || exit 1; \
	done

# The suite against the lowest version of every runtime dependency pyproject.toml declares.
LOWEST ?= .venv-lowest
test-lowest:
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install -q --upgrade pip
	$(LOWEST)/bin/python -c "import tomllib; d = tomllib.load(open('pyproject.toml', 'rb')); print('\n'.join(r.replace('>=', '==') for r in d['project']['dependencies']))" > $(LOWEST)/lowest.txt
	$(LOWEST)/bin/python -m pip install -q -c $(LOWEST)/lowest.txt --config-settings editable_mode=compat -e '.[test]'
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(LOWEST)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

test-long: $(STAMP)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest -q -p no:cacheprovider --run-slow

lint: $(STAMP)
	$(VENV)/bin/ruff check aikito_mem tests bench
	$(VENV)/bin/mypy

demo: $(RUNTIME_STAMP)
	$(PY) fixtures/demo.py

bench: $(STAMP)
	$(PY) -m compileall -q aikito_mem
	$(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venv-3.* $(LOWEST) build *.egg-info .pytest_cache .hypothesis
