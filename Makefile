# Every target creates (or reuses) its own virtual environment, so each works on a fresh machine.
# Versions come from constraints.txt, so results mean the same thing on every machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: demo test test-long bench bench-large bench-gate bench-base bench-compare clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# runtime install (+ the plot extra the demo's pictures use, and the onnx extra its predict step uses)
$(VENV)/.runtime: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) -e '.[plot,onnx]'
	touch $@

# development install: runtime plus pytest, hypothesis, asv and the peers tests compare with
$(VENV)/.dev: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) -e '.[dev,plot,mat,onnx]'
	touch $@ $(VENV)/.runtime

# the whole pipeline on generated corpora, into demo-out/ (replacing the demo's own files from an earlier run)
demo: $(VENV)/.runtime
	$(BIN)/rfbench demo --out demo-out --force

# the suite but its long tests, on two workers, in at most 4 minutes on an idle 2-core machine (README "Tests");
# it prints its wall time. Mark a test over ~5 s @pytest.mark.long (tests/conftest.py says how).
PYTEST_WORKERS ?= 2
test: $(VENV)/.dev
	$(BIN)/ruff check .
	@start=$$(date +%s); $(BIN)/python -m pytest -q -m "not long" -n $(PYTEST_WORKERS) --dist loadfile; rc=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s wall (pytest, $(PYTEST_WORKERS) workers)"; exit $$rc

# the long tests: the large fuzz, every docs example, real-corpus conformance, the slow whole-job tests
test-long: $(VENV)/.dev
	@start=$$(date +%s); $(BIN)/python -m pytest -q -m long -n $(PYTEST_WORKERS) --dist loadfile; rc=$$?; \
	echo "make test-long: $$(( $$(date +%s) - start )) s wall (pytest, $(PYTEST_WORKERS) workers)"; exit $$rc

# a quick run (each benchmark once) of every benchmark at its CI sizes against the working tree, in this environment
bench: $(VENV)/.dev
	$(BIN)/asv machine --yes >/dev/null
	$(BIN)/asv run --python=same --quick --show-stderr --dry-run

# the same with the large sizes included (never run by CI)
bench-large: $(VENV)/.dev
	RFBENCH_BENCH_LARGE=1 $(MAKE) bench

# the CI performance gate: asv continuous BASE HEAD over the CI sizes, BASE the commit in .ci/bench-base (the
# last landed main this work started from), then the peer-ratio floors (benchmarks/README.md)
bench-gate: $(VENV)/.dev
	ASV=$(BIN)/asv .ci/bench-gate

# record the current HEAD as the gate's base: run it when work starts, on the last landed main, and commit
bench-base:
	{ sed -n '/^#/p' .ci/bench-base 2>/dev/null || true; git rev-parse HEAD; } > .ci/bench-base.new
	mv .ci/bench-base.new .ci/bench-base
	@echo "bench-base: $$(git rev-parse --short HEAD) recorded in .ci/bench-base; commit it"

# the same gate between main and this branch's last commit
bench-compare: $(VENV)/.dev
	ASV=$(BIN)/asv .ci/bench-gate $$(git rev-parse -q --verify main >/dev/null && echo main || echo origin/main) HEAD

clean:
	rm -rf $(VENV) .asv demo-out
