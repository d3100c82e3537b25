# One-command set-up: every target creates .venv and installs the project if needed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-all lint docs app bench data clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/decisions demo

lint: $(STAMP)
	$(BIN)/ruff check decisions apps tests
	$(BIN)/lint-imports --no-cache

# The documentation site (mkdocs.yml) into site/; --strict fails on a broken link or an unreadable docstring.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint docs
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --max-worker-restart=0

test-all: lint docs
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --max-worker-restart=0 -m ""

app: $(STAMP)
	$(BIN)/decisions app

# Every registered bench at its default budget, each stored in benchmarks/<name>.json, then the
# README's figure tables regenerated from them (install the peers extra first for the peer blocks).
bench: $(STAMP)
	$(BIN)/decisions bench --all --save
	$(BIN)/decisions bench report

# Fashion-MNIST for the split learning study (Debian's dataset-fashion-mnist, MIT; needs root).
data:
	test -d /usr/share/datasets/fashion-mnist || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist)

clean:
	rm -rf $(VENV) build *.egg-info
