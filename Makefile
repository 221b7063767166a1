# Two commands on a fresh machine (README): `make demo` runs the main job, `make test` passes the tests.
# Both create the virtualenv (.venv) from pyproject.toml first; Maven fetches the Kafka jars on first use.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

setup: $(STAMP)

# recipes quiet, progress on stderr: `make demo ARGS=--once > incidents.txt` captures the incidents alone (their
# table under its title, "20 incidents (11 open, 9 resolved)")
# pip's run of setuptools: its harmless "BuildBackendWarning: Editable installation." (11 lines on stderr, the first
# thing a fresh user saw) is not shown; nothing else is filtered. pip runs quietly: a line says each stage before it
# (the first one said nothing for ~90 s: a fresh user's trial); the demo says when it fetches the Kafka jars
$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required"'
	@echo "creating $(VENV) and installing firstfault with its test extras (a few minutes the first time) …" >&2
	@$(PY) -m venv $(VENV)
	@echo "  updating pip …" >&2
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@echo "  installing firstfault and its dependencies (pyarrow, duckdb, aiokafka, fastapi, …) …" >&2
	@PYTHONWARNINGS="$${PYTHONWARNINGS:+$$PYTHONWARNINGS,}ignore:Editable installation" \
		$(BIN)/pip install --quiet -e '.[test]' >&2
	@touch $(STAMP)
	@echo "  $(VENV) ready" >&2

demo: $(STAMP)
	@$(BIN)/firstfault demo $(ARGS)

test: $(STAMP)
	scripts/test-deps.sh
	$(BIN)/python -m pytest $(ARGS)

bench: $(STAMP)
	@$(BIN)/python -m benchmarks.ingest $(ARGS)

clean:
	-$(BIN)/firstfault kafka stop
	rm -rf $(VENV) .firstfault *.egg-info
