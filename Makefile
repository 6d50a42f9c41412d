# vkml's entry points. Each target first runs tools/setup.sh, which creates .venv and installs
# what is missing (a few milliseconds when nothing is), so a fresh clone needs nothing else.

PYTHON := .venv/bin/python
LINT_PATHS := vkml tests tools bench extra examples
# Extra pytest arguments, e.g. `make test ARGS="-k reduce -x"`.
ARGS ?=
# pytest-xdist workers: one per core, at most 4 (each holds torch and a Vulkan device); the suite
# outgrew one core (10.5 minutes serial on a 2-core machine).
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)

.DEFAULT_GOAL := help
.PHONY: help setup test test-all demo lint format clean distclean

help:
	@echo "make demo       set up, then run vkml's demo"
	@echo "make test       set up, then run the test suite (ARGS=... goes to pytest, WORKERS=n processes)"
	@echo "make test-all   the suite plus the exhaustive and stress checks (long: an hour or more)"
	@echo "make lint       ruff check and ruff format --check"
	@echo "make format     ruff format and ruff check --fix"
	@echo "make clean      remove caches and build outputs (keeps .venv)"
	@echo "make distclean  clean, and remove .venv"

setup:
	@bash tools/setup.sh test

# --dist worksteal: each worker starts on its own contiguous half of the suite (files stay together, so
# a file's kernels are compiled once in one process) and an idle worker takes queued tests from the
# other, so one long test near the end does not leave the other core idle.
test: setup
	$(PYTHON) -m pytest -q -n $(WORKERS) --dist worksteal $(ARGS)

# -m "" lifts pyproject's marker filter: every exhaustive and stress test runs too.
test-all: setup
	$(PYTHON) -m pytest -q -n $(WORKERS) --dist worksteal -m "" $(ARGS)

demo:
	@bash tools/setup.sh runtime
	$(PYTHON) -m vkml.demo

lint: setup
	$(PYTHON) -m ruff check $(LINT_PATHS)
	$(PYTHON) -m ruff format --check $(LINT_PATHS)

format: setup
	$(PYTHON) -m ruff format $(LINT_PATHS)
	$(PYTHON) -m ruff check --fix $(LINT_PATHS)

clean:
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +
	rm -rf .pytest_cache .ruff_cache .hypothesis build *.egg-info

distclean: clean
	rm -rf .venv
