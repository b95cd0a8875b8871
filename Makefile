# kflow: `make run` runs the offline demo pipeline, `make test` the test suite.
# Both create .venv and install the pinned stack on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-all lint format bench bench-guides docs clean bytecode image screenshots

$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "kflow needs Python 3.11, found " + sys.version.split()[0]'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $@

# Where Python may not write bytecode (PYTHONDONTWRITEBYTECODE: this project's image, many CI machines), every
# process that imports kflow compiles its modules again: ~1 s of each Beam or trainer worker's start. Compiled
# here (up-to-date files are skipped), they are read instead.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 pipeline components schemas

run: bytecode
	$(BIN)/kflow run pipeline/configs/demo.yaml

# A representative, real subset (real MNIST, real Beam pipelines and training runs):
# everything but the tests marked slow. Under 15 minutes on 2 cores. It includes the docs
# (tests/docs: `mkdocs build --strict`, the config reference, the kflow commands the pages show).
# Its files run on TEST_WORKERS pytest-xdist workers, a file's tests on one worker (their module fixtures made once):
# 9-11 minutes of tests on 2 cores, 1.6x faster than one process. TEST_WORKERS=0: one process (a debugger, -x).
TEST_WORKERS ?= 2
test: bytecode
	$(BIN)/python -m pytest -m "not slow and not containers" -q -n $(TEST_WORKERS) --dist loadfile --durations=15

test-all: bytecode
	KFLOW_FUZZ_EXAMPLES=500 $(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/hadolint deploy/Dockerfile

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The kflow image (deploy/Dockerfile) as localhost/kflow:local, with podman, from a wheelhouse made here; on a
# stand-in base where python:3.11.13-slim-bookworm cannot be pulled (deploy/build-image.sh; root, podman, runc,
# debootstrap). Cached in ~/.cache/kflow-image (KFLOW_IMAGE_CACHE) and podman's layers.
image: $(STAMP)
	deploy/build-image.sh

bench: bytecode
	$(BIN)/python bench/mnist_pipeline.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/trainer_strategies.py
	$(BIN)/python bench/orchestration.py

# Each guide's training as its own script against `kflow run` of the config that expresses it (bench/guides/README.md).
bench-guides: bytecode
	$(BIN)/python bench/guides/run.py

# The docs' screenshots of the report and the statistics page (docs/images/*.png): two runs photographed in headless
# Chromium (tests/browser/screenshots.py).
screenshots: bytecode
	$(BIN)/python -m tests.browser.screenshots

# The docs site (mkdocs.yml, docs/), built strict into .venv/site; `$(BIN)/mkdocs serve` to read it while editing.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict -d $(VENV)/site

clean:
	rm -rf $(VENV) runs .pytest_cache
	find pipeline components schemas -name __pycache__ -type d -prune -exec rm -rf {} +
