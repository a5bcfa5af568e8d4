# The two set-up commands (`make run`, `make test`) install everything they need into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-streaming verify lint typecheck bench bench-peer build fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(BIN)/python -m compileall -q src  # bytecode, as an installed wheel would have
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m magi_code.demo

# The suite over TEST_WORKERS processes (pytest-xdist): most tests wait on a child process, so
# four workers keep two cores busy. `TEST_WORKERS=0` runs it in this one process. The npm peers
# the tests drive are installed first, all at once (tests/support/npm.py).
TEST_WORKERS ?= 4
test: $(STAMP)
	$(BIN)/python tests/support/npm.py
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal

# Provider response boundaries: SSE decoder partitions and local-HTTP fixtures, no credentials.
test-streaming: $(STAMP)
	$(BIN)/python -m pytest tests/providers/test_sse.py tests/providers/test_http_bounds.py \
		tests/providers/test_wire_apis.py tests/providers/test_wire_errors.py \
		tests/providers/test_stream_boundaries.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

verify: lint typecheck test

bench: $(STAMP)
	$(BIN)/python -m bench

# magi-code beside the Codex app-server on one mock provider; only this target needs npm.
CODEX_VERSION ?= 0.171.0
PEER := .cache/peer
bench-peer: $(STAMP)
	test -x $(PEER)/node_modules/.bin/codex || \
		npm install --prefix $(PEER) --no-audit --no-fund @openai/codex@$(CODEX_VERSION)
	$(BIN)/python -m bench.peer

# A wheel and an sdist into dist/ (hatchling, in the isolated environment `build` makes).
build: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

# Fuzz targets (fuzz/targets.py: the decoders, and what hostile servers and clients send) under
# atheris, FUZZ_SECONDS each; inputs that found something land in fuzz/findings/. `make test`
# runs a second of each without atheris.
FUZZ_SECONDS ?= 60
fuzz: $(STAMP)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[fuzz]'
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(BIN)/python -m fuzz

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
