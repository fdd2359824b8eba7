# make test: set up .venv if needed, lint, and run the whole suite.
# make demo: set up .venv if needed and run the demo (see README).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo lint format venv clean

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: lint
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest

demo: venv
	$(PY) -m partitions.demo

clean:
	rm -rf var .pytest_cache
