# aifactory-lab recipes. Every recipe calls the `lab` command or pytest; `just --list` shows them.
set shell := ["bash", "-euo", "pipefail", "-c"]

default_blueprint := "blueprints/default.yaml"

# Bring a lab up (builds images on the first run; idempotent afterwards)
lab-up blueprint=default_blueprint:
    lab up --blueprint {{blueprint}}

# Remove the lab's containers and network (add --purge for volumes, keys and state)
lab-down *args:
    lab down {{args}}

# Containers, daemons, node states with GRES, endpoints
status *args:
    lab status {{args}}

# Unit tests, then the live-lab tests (a lab that is not up is brought up first)
test *args:
    python -m pytest tests {{args}}

# Unit tests only: no container engine needed
unit *args:
    python -m pytest tests/unit {{args}}

fmt-check:
    ruff format --check .

lint:
    ruff check .

typecheck:
    mypy

# Scrape every target of the running lab into captures/LAB (provenance headers, inventories)
capture lab="default" duration="120":
    lab capture --lab {{lab}} --duration {{duration}} --out captures/{{lab}}

# Signal fidelity: a fresh capture (or --capture DIR) diffed against signals/; fails on any gap
dump *args:
    lab dump {{args}}

# Benchmarks that need no lab (results go in BENCHMARKS.md); lab ones: python bench/bench_lab.py --help
bench:
    python bench/bench_job_mapping.py
    python bench/bench_dcgm_shim.py
    python bench/bench_workload.py --plan-only
    python bench/bench_runai.py

# Everything CI checks: format, lint, types, unit and lab tests, signal fidelity
check: fmt-check lint typecheck test dump
