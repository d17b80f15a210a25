# serverbench — two entry points: `make bench` (quick default benchmark + report)
# and `make test` (every test). Everything they need is installed from here.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
SB := $(VENV)/bin/serverbench
LOADGEN := loadgen/target/release/loadgen
export CARGO_BUILD_JOBS ?= 2

.PHONY: bench seeds study test system venv loadgen tools build verify pytest cargo-test clean crosscheck-tools

bench: system venv loadgen
	$(SB) bench

# The published studies re-measured (issue 39): what their tables and claims read and no stored
# run has, one run per workload with 3 repetitions, then their section. Run it again after an
# interruption: it resumes. `$(SB) seeds --plan` prints the plan only.
seeds: system venv loadgen
	$(SB) seeds --measure

# Every row on every kind of work the report's profile table shows (issue 49): quick sizes, 3 repetitions,
# one run per workload, then the report. Resumable: run it again after an interruption.
# `$(SB) study --plan` prints the plan and its planned load only. Its store is studies/study.db, tracked
# in git: a study takes longer than a session and a fresh checkout resumes what the last one committed.
STUDY_DB ?= studies/study.db
study: system venv loadgen tools
	$(SB) study --db $(STUDY_DB)

test: system venv loadgen tools
	$(VENV)/bin/pytest -q tests
	cd loadgen && cargo test --release --locked -q
	cd servers/_shared/rust-contract && cargo test --locked -q
	cd servers/_shared/go-contract && GOTOOLCHAIN=local go test ./...
	$(SB) build
	$(SB) verify

system:
	@bash scripts/install-system.sh

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

loadgen:
	cd loadgen && cargo build --release --locked -q

# Toolchains the contestants need (apt/npm, from each server.toml's [install]).
tools: venv
	$(SB) install

# The load tools `serverbench crosscheck` compares loadgen with (wrk, ab, oha, hey, k6, drill,
# Locust) at pinned versions, into .tools/; not part of `test` (its tests use recorded outputs).
crosscheck-tools:
	bash scripts/install-crosscheck-tools.sh

build: venv
	$(SB) build

verify: venv
	$(SB) verify

clean:
	rm -rf build results/logs $(VENV) loadgen/target servers/_shared/rust-contract/target
