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

test: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q -p no:cacheprovider

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
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
