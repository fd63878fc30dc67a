# Every target creates (or reuses) its own virtual environment, so each works on a fresh machine.
# Versions come from constraints.txt, so results mean the same thing on every machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: demo test bench bench-large clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# runtime install (+ the plot extra the demo's pictures use)
$(VENV)/.runtime: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) -e '.[plot]'
	touch $@

# development install: runtime plus pytest, hypothesis, asv and the peers tests compare with
$(VENV)/.dev: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) -e '.[dev,plot,mat]'
	touch $@ $(VENV)/.runtime

# the whole pipeline on generated corpora, into demo-out/ (replacing the demo's own files from an earlier run)
demo: $(VENV)/.runtime
	$(BIN)/rfbench demo --out demo-out --force

test: $(VENV)/.dev
	$(BIN)/python -m pytest -q

# a quick run of every benchmark against the working tree, in this environment
bench: $(VENV)/.dev
	$(BIN)/asv machine --yes >/dev/null
	$(BIN)/asv run --python=same --quick --show-stderr --dry-run

# the same with the large sizes included
bench-large: $(VENV)/.dev
	RFBENCH_BENCH_LARGE=1 $(MAKE) bench

clean:
	rm -rf $(VENV) .asv demo-out
