# make test: set up .venv if needed, lint, and run the whole suite.
# make demo: set up .venv if needed and run the demo (see README).
# make lock: pin requirements*.in, with hashes, into requirements*.txt (README: Dependencies).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

LOCKS := requirements.txt requirements-dev.txt
COMPILE := $(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-index-url --no-emit-find-links

.PHONY: test demo lint format venv lock clean

venv: $(STAMP)

# Reinstalled whenever a lock is newer than the stamp; pip checks every hash (--require-hashes).
$(STAMP): $(LOCKS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements.txt -r requirements-dev.txt
	touch $(STAMP)

lock: venv
	$(COMPILE) -o requirements.txt requirements.in
	$(COMPILE) -o requirements-dev.txt requirements-dev.in

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# Two pytest-xdist workers: the timed end-to-end and Spark modules one after another on
# one, the in-process modules on the other, a module at a time; then the long-deadline
# ones two at once, never beside a timed one (the kinds and the scheduler:
# tests/conftest.py). Two timed modules at once on two cores missed deadlines
# (docs/benchmarks.md, issue 22, goal 6). `make test PYTEST_ARGS=` runs one process.
PYTEST_ARGS ?= -n 2 --dist loadgroup --no-loadscope-reorder

test: lint
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest $(PYTEST_ARGS)

demo: venv
	$(PY) -m cdcweb.demo

clean:
	test ! -x $(PY) || $(PY) -m cdcweb.dbserver stop
	rm -rf var .pytest_cache
