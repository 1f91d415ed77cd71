# make demo: set up .venv and run the demo; make test: set up .venv and run every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test interop peer fuzz lint bench clean

$(STAMP): pyproject.toml
	@echo "make: creating $(VENV) and installing arrowidx with its extras (pyarrow, pyroaring, polars, pyspark, pandas, tqdm, test tools)"
	@echo "make: the first time this downloads a few hundred MB and takes a few minutes; pip shows what it fetches"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	@echo "make: running the demo; the first run generates a 10,000,000-row Parquet lake under demo-data/ (cached; make clean removes it)"
	$(PY) -m arrowidx.demo

# What the Java and pypaimon round trips need from the network (integration/test_paimon_rewrite_*.py):
# the Paimon 0.9.0 bundle (PyPI's pypaimon==0.2.0 sdist) into ~/.cache/arrowidx and the
# build/pypaimon-venv virtualenv. No test downloads anything: without these they skip, naming
# this step. Kept once fetched; make clean removes the virtualenv.
interop: $(STAMP)
	$(PY) bench/paimon_writer/setup_interop.py

# make test runs make interop first; offline, that step fails (ignored here, "-") and the
# round trips skip saying so. CI (.ci/run) runs make interop on its own first, where a
# failed download fails the build.
test: $(STAMP)
	-$(MAKE) --no-print-directory interop
	$(PY) -m ruff check src tests integration bench
	$(PY) -m pytest -q tests integration

# The engines' own tests through arrowidx's adapters, every file (make test runs the Parquet,
# scan and Hive files): Polars' io and lazyframe tests and pyarrow's test_dataset.py, each run
# as published and routed through arrowidx in one pytest run (integration/test_peer_suites.py).
peer: $(STAMP)
	ARROWIDX_PEER=all $(PY) -m pytest -q -p no:cacheprovider integration/test_peer_suites.py

# The differential suite's long profile (issue 15): many random examples, no deadline.
# FUZZ_EXAMPLES sets the examples per test.
FUZZ_EXAMPLES ?= 20000
fuzz: $(STAMP)
	ARROWIDX_FUZZ=long ARROWIDX_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider \
		tests/test_differential.py tests/test_differential_polars.py integration/test_spark_differential.py tests/test_directory.py \
		"tests/test_range_bitmap.py::test_many_rows_against_pyarrow"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) demo-data bench-data build .pytest_cache .hypothesis
