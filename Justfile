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

# Three xdist workers on two cores: each lab's tests are one scope, run in order on one worker while the
# others run other labs' (tests/lab_groups.py), longest lab first; the unit tests' modules fill in
# wherever a worker is free. A lab test mostly waits (for a scrape, an evaluation, a notification), so
# a third worker shortens the run by about a third without a core of its own (BENCHMARKS.md, "CI").

# Unit and live-lab tests on three workers (a default lab that is not up is brought up first)
test *args:
    python -m pytest tests -n 3 --dist loadscope {{args}}

# Unit tests only: no container engine needed
unit *args:
    python -m pytest tests/unit -n auto {{args}}

fmt-check:
    ruff format --check .

lint:
    ruff check .

typecheck:
    mypy

# [tool.mypy] files cannot name scripts without a .py suffix, and its overrides are lab/'s (hence no
# unused-config note). The epilog is a symlink to the prolog. tests/unit/test_shipped_scripts.py fails
# on a tracked script missing here.
# Strict mypy on the shipped Python scripts (prolog, health check, GPU app, slurmctld's tools)
typecheck-scripts:
    mypy --strict --scripts-are-modules --no-warn-unused-configs \
        prolog/dcgm-job-mapping healthcheck/dcgm-xid-check containers/node/lab-gpu-app \
        ansible/roles/slurmctld/files/slurm-accounting-sync ansible/roles/slurmctld/files/slurm-site-state

# Debian's shellcheck on the tracked shell scripts (shell inside Ansible's .j2 templates is not linted)
shellcheck:
    shellcheck containers/base/lab-daemon containers/base/policy-rc.d .ci/run bench/job-mapping-naive.sh

# Regenerate what is generated: Ansible's copy of the contract, the rendered-config goldens
gen:
    python -c "from lab import contract; contract.write_ansible_vars()"
    UPDATE_GOLDEN=1 python -m pytest -q tests/unit/bringup/test_rendering.py

# Everything generated is current (run `just gen` when this fails)
gen-check:
    python -m pytest -q tests/unit/test_contract.py tests/unit/bringup/test_rendering.py

# What this machine lacks to run the lab, and how to fix it
env-check:
    lab doctor

# Every link, `lab` command and `just` recipe named in README and docs exists
docs-check:
    python -m pytest -q tests/unit/test_docs.py

# The concurrency tests: prolog/epilog pairs under a reader, job classes, counters, the lab lock
race:
    python -m pytest -q -m race tests/unit

# No keys, host paths or large files in git; no upward import or duplicate module name in lab/
hygiene:
    python -m pytest -q tests/unit/test_hygiene.py tests/unit/test_layers.py

# ansible-lint on ansible/ (profile production; ansible/.ansible-lint says what it skips and why)
ansible-lint:
    cd ansible && ansible-lint

# The deployable roles as the Ansible collection aifactory_lab.gpu_observability (a tarball in OUT)
collection out="dist":
    python3 ansible/collection/build.py --out {{out}}

# No counterpart: the lab has no web UI of its own
ui-check:
    @echo "ui-check: no UI in aifactory-lab (Prometheus' own UI is upstream's)"

# No counterpart: the lab brings containers up with the docker SDK, not a compose file
compose-check:
    @echo "compose-check: no compose file (lab/bringup/containers.py drives the engine)"

# No counterpart yet: no Helm chart is shipped (no lab kind deploys onto a Kubernetes cluster yet)
helm-test:
    @echo "helm-test: no Helm chart in aifactory-lab yet"

# The live-lab tests (a lab that is not up is brought up first)
lab-check *args:
    python -m pytest tests/lab -n 3 --dist loadscope {{args}}

# Scrape every target of the running lab into captures/LAB (provenance headers, inventories)
capture lab="default" duration="120":
    lab capture --lab {{lab}} --duration {{duration}} --out captures/{{lab}}

# Signal fidelity: a fresh capture (or --capture DIR) diffed against signals/; fails on any gap
dump *args:
    lab dump {{args}}

signal-fidelity: dump

# Benchmarks that need no lab (results go in BENCHMARKS.md); lab ones: python bench/bench_lab.py --help
bench:
    python bench/bench_job_mapping.py
    python bench/bench_dcgm_shim.py
    python bench/bench_workload.py --plan-only

# The rule files pass `promtool check rules`, and their unit tests (tests/rules/, cut from captures/)
# pass `promtool test rules`, with the lab's pinned promtool (the Prometheus image `lab up` builds)
rules-test:
    python3 tests/rules/cut_series.py --check
    image="$(python3 -c 'from lab.contract import role_image; print(role_image("prometheus"))')"; \
    upstream="$(mktemp -d)"; trap 'rm -rf "$upstream"' EXIT; \
    python3 -m lab.slurm_exporter.upstream_rules "$upstream" >/dev/null; \
    docker run --rm -v "$PWD:/w:ro" -v "$upstream:/upstream:ro" -w /w "$image" promtool check rules \
        ansible/roles/prometheus/files/rules/*.yml ansible/roles/central_store/files/rules/*.yml $(cd "$upstream" && printf '/upstream/%s ' *.yml); \
    docker run --rm -v "$PWD:/w:ro" -v "$upstream:/upstream:ro" -w /w "$image" promtool test rules tests/rules/*.test.yml

# The checks that need no running lab (CI runs them before `just test`)
static: fmt-check lint typecheck typecheck-scripts shellcheck gen-check env-check docs-check race hygiene ansible-lint rules-test ui-check compose-check helm-test

# Everything the definition of done names: the static checks, every test (unit and lab), signal fidelity
check: static test signal-fidelity
