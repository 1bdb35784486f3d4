# aikito_mem — every target does its own set-up (virtual environment, installs).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-long lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --config-settings editable_mode=compat -e '.[test,lint]'
	$(PY) -m compileall -q aikito_mem
	touch $(STAMP)

test: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q -p no:cacheprovider

test-long: $(STAMP)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest -q -p no:cacheprovider --run-slow

lint: $(STAMP)
	$(VENV)/bin/ruff check aikito_mem tests bench
	$(VENV)/bin/mypy

demo: $(STAMP)
	$(PY) fixtures/demo.py

bench: $(STAMP)
	$(PY) -m compileall -q aikito_mem
	$(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
