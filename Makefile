# make demo: set up .venv and run the demo; make test: set up .venv and run every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m arrowidx.demo

test: $(STAMP)
	$(PY) -m ruff check src tests integration bench
	$(PY) -m pytest -q tests integration

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) demo-data bench-data .pytest_cache .hypothesis
