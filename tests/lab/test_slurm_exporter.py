"""The pinned Slurm exporter (SckyzO/slurm_exporter v1.8.4) against the live default lab, through the
lab's real Prometheus: every group of families holds the values Slurm itself holds (the blueprint's
licenses, reservations, drained node and accounts; jobs this test submits), no series carries a job
id, and the v1.8.4 defects that bite on Slurm 24.11.5 are shown as they are."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from testinfra.host import Host

from lab import promql
from lab.blueprint.slurm_blueprint import Blueprint

from .conftest import run_lab, wait_for

pytestmark = pytest.mark.lab

SCRAPE_WAIT_S = 60  # four scrape intervals of 15 s


@pytest.fixture(scope="module")
def prometheus(default_lab: Blueprint) -> str:
    return f"http://127.0.0.1:{default_lab.ports.prometheus}"


def _by(prometheus: str, expr: str, label: str) -> dict[str, float]:
    """``expr``'s values keyed by one label."""
    return {s.labels[label]: s.value for s in promql.query(prometheus, expr)}


def _eventually(prometheus: str, expr: str, what: str) -> list[promql.Series]:
    """The series of ``expr`` once it has any (each poll is a real PromQL query)."""
    found = wait_for(lambda: promql.query(prometheus, expr), SCRAPE_WAIT_S, what, every_s=2)
    assert isinstance(found, list)
    return found


@pytest.fixture(scope="module")
def queued_jobs(host: Callable[[str], Host], default_lab: Blueprint) -> Iterator[dict[str, str]]:
    """One job running for bob and one pending for dave (held until tomorrow: reason BeginTime)."""
    controller = host("controller")
    sbatch = "sbatch --parsable --time=10 --output=/dev/null"
    running = controller.check_output(f"su - bob -c \"{sbatch} --gres=gpu:1 --wrap 'sleep 600'\"").strip()
    pending = controller.check_output(
        f"su - dave -c \"{sbatch} --begin=now+1day --gres=gpu:1 --wrap 'sleep 600'\""
    ).strip()
    jobs = {"running": running, "pending": pending}
    yield jobs
    controller.run(f"scancel {running} {pending}")


def test_prometheus_scrapes_the_exporter_as_job_slurm(prometheus: str) -> None:
    targets = [t for t in promql.targets(prometheus) if t["labels"]["job"] == "slurm"]
    assert [t["labels"]["instance"] for t in targets] == ["controller:9341"]
    up = _eventually(prometheus, 'up{job="slurm"} == 1', "the slurm target up")
    assert up[0].labels["instance"] == "controller:9341"


def test_the_exporter_is_the_pinned_tag_and_answers_on_loopback(
    host: Callable[[str], Host], default_lab: Blueprint
) -> None:
    version = host("controller").check_output("/usr/local/bin/slurm_exporter --version 2>&1")
    assert (
        "version 1.8.4 (branch: release-1.8, revision: b535433eb2f290f3e7a6c4ce953892a172619861)" in version
    )
    url = f"http://127.0.0.1:{default_lab.ports.slurm_exporter}/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        body = response.read().decode()
    assert "# TYPE slurm_partition_cpus_total gauge" in body
    report = json.loads(run_lab("status", "--lab", default_lab.name, "--json").stdout)
    assert report["endpoints"]["slurm_exporter"] == f"http://127.0.0.1:{default_lab.ports.slurm_exporter}"
    assert report["slurm_exporter"].startswith(("go install ", "go build of "))


@pytest.mark.parametrize(
    ("group", "family"),
    [
        ("partition", "slurm_partition_cpus_total"),
        ("partition", "slurm_partition_gpus_idle"),
        ("node", "slurm_node_status"),
        ("node", "slurm_nodes_idle"),
        ("node", "slurm_nodes_total"),
        ("cluster", "slurm_cpus_total"),
        ("gpus", "slurm_gpus_total"),
        ("scheduler", "slurm_scheduler_threads"),
        ("scheduler", "slurm_rpc_stats"),
        ("scheduler", "slurm_user_rpc_stats"),
        ("fairshare", "slurm_account_fairshare_raw_shares"),
        ("fairshare", "slurm_user_fairshare_raw_shares"),
        ("licenses", "slurm_license_total"),
        ("reservations", "slurm_reservation_info"),
        ("reservations", "slurm_reservation_nodes_healthy"),
        ("drain", "slurm_node_drain_reason_info"),
        ("info", "slurm_info"),
        ("self", "slurm_exporter_collector_success"),
        ("self", "slurm_exporter_command_duration_seconds_count"),
        ("process", "process_resident_memory_bytes"),
    ],
)
def test_every_group_has_series(prometheus: str, group: str, family: str) -> None:
    _eventually(prometheus, f'{family}{{job="slurm"}}', f"{group}: {family}")


def test_gpus_per_state_add_up_and_a_drained_nodes_gpus_read_idle_in_v1_8_4(
    prometheus: str, host: Callable[[str], Host], default_lab: Blueprint
) -> None:
    """gpus.go@v1.8.4 counts idle GPUs with `sinfo --state=idle,allocated`, and sinfo's state filter
    matches a drained node by its base state (IDLE+DRAIN), so the held node's GPUs read idle, not other."""
    total = default_lab.nodes.count * default_lab.nodes.shape.gpus
    series = _eventually(prometheus, 'slurm_gpus_total{job="slurm"}', "slurm_gpus_total")
    assert series[0].value == total
    listed = host("controller").check_output("sinfo -h -N --state=idle,allocated -o %N")
    assert default_lab.drained_nodes[0] in listed.split()
    states = {
        name: promql.query(prometheus, f'slurm_gpus_{name}{{job="slurm"}}')[0].value
        for name in ("alloc", "idle", "other")
    }
    assert sum(states.values()) == total, states
    assert states["other"] == 0, f"the drained node's GPUs should read idle or allocated: {states}"


def test_the_drained_node_and_its_reason(prometheus: str, default_lab: Blueprint) -> None:
    drain = default_lab.drains[0]
    expr = f'slurm_node_drain_reason_info{{job="slurm",node="{default_lab.drained_nodes[0]}"}}'
    [series] = _eventually(prometheus, expr, "the drained node's drain series")
    assert series.labels["reason"] == drain.reason
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", series.labels["since"])
    assert series.value == 1
    nodes_drain = promql.query(prometheus, 'sum(slurm_nodes_drain{job="slurm",partition="gpu"})')
    assert [s.value for s in nodes_drain] == [len(default_lab.drained_nodes)]
    # node.go@v1.8.4 puts sinfo's StateLong in `status` as printed: "$" (in a MAINT reservation) stays.
    status = _by(prometheus, f'slurm_node_status{{job="slurm",node="{series.labels["node"]}"}}', "status")
    assert status == {"drained$": 1}


def test_reservations_carry_the_blueprints_values(prometheus: str, default_lab: Blueprint) -> None:
    info = {
        s.labels["reservation_name"]: s.labels
        for s in promql.query(prometheus, 'slurm_reservation_info{job="slurm"}')
    }
    assert set(info) == {r.name for r in default_lab.reservations}
    repair, monthly = default_lab.reservations
    assert info[repair.name]["state"] == "ACTIVE" and info[repair.name]["nodes"] == repair.nodes
    assert "MAINT" in info[repair.name]["flags"] and info[repair.name]["users"] == "root"
    assert info[monthly.name]["state"] == "INACTIVE"
    counts = _by(prometheus, 'slurm_reservation_node_count{job="slurm"}', "reservation_name")
    assert counts == {repair.name: 1, monthly.name: default_lab.nodes.count}
    start = promql.query(
        prometheus, f'slurm_reservation_start_time_seconds{{reservation_name="{monthly.name}"}}'
    )
    end = promql.query(prometheus, f'slurm_reservation_end_time_seconds{{reservation_name="{monthly.name}"}}')
    assert end[0].value - start[0].value == 4 * 3600


def test_a_drained_node_in_a_reservation_counts_as_healthy_in_v1_8_4(
    prometheus: str, default_lab: Blueprint
) -> None:
    """Defect #142 (fixed after the tag): reservation_nodes classifies by the state before the first '+',
    so IDLE+DRAIN+MAINTENANCE+RESERVED is 'idle' and healthy, and the drain count stays 0."""
    repair = default_lab.reservations[0].name
    expr = f'slurm_reservation_nodes_healthy{{job="slurm",reservation="{repair}"}}'
    [healthy] = _eventually(prometheus, expr, "the repair reservation's node counts")
    assert healthy.value == 1
    drained = promql.query(prometheus, f'slurm_reservation_nodes_drain{{reservation="{repair}"}}')
    assert [s.value for s in drained] == [0]


def test_licenses_carry_the_blueprints_counts(prometheus: str, default_lab: Blueprint) -> None:
    _eventually(prometheus, 'slurm_license_total{job="slurm"}', "licenses")
    expected = {lic.slurm_name: lic.count for lic in default_lab.licenses}
    assert _by(prometheus, 'slurm_license_total{job="slurm"}', "license") == expected
    # The workload requests no license, so every seat is free.
    assert _by(prometheus, 'slurm_license_free{job="slurm"}', "license") == expected


def test_fairshare_reads_the_blueprints_shares(prometheus: str, default_lab: Blueprint) -> None:
    _eventually(prometheus, 'slurm_account_fairshare_raw_shares{job="slurm"}', "fairshare")
    shares = _by(prometheus, 'slurm_account_fairshare_raw_shares{job="slurm"}', "account")
    assert {a.name: shares[a.name] for a in default_lab.accounts} == {
        a.name: a.fairshare for a in default_lab.accounts
    }


def test_the_queue_per_user_account_and_reason(
    prometheus: str, queued_jobs: dict[str, str], default_lab: Blueprint
) -> None:
    _eventually(prometheus, 'slurm_queue_running{job="slurm",user="bob",partition="gpu"} >= 1', "bob running")
    [pending] = _eventually(
        prometheus, 'slurm_queue_pending{job="slurm",user="dave",reason="BeginTime"} >= 1', "dave pending"
    )
    assert pending.labels["partition"] == "gpu"
    _eventually(prometheus, 'slurm_account_jobs_running{job="slurm",account="llm-pretrain"} >= 1', "account")
    _eventually(
        prometheus, 'slurm_account_jobs_pending{job="slurm",account="vision"} >= 1', "account pending"
    )
    _eventually(prometheus, 'slurm_user_gpus_running{job="slurm",user="bob"} >= 1', "bob's GPUs")
    _eventually(prometheus, 'slurm_partition_jobs_pending{job="slurm",partition="gpu"} >= 1', "partition")


def test_scheduler_counters_move_with_submissions(
    prometheus: str, host: Callable[[str], Host], queued_jobs: dict[str, str]
) -> None:
    before = _eventually(prometheus, 'slurm_scheduler_jobs_submitted{job="slurm"}', "sdiag")[0].value
    host("controller").check_output(
        'su - erin -c "sbatch --parsable --time=1 --output=/dev/null --wrap true"'
    )
    wait_for(
        lambda: promql.query(prometheus, f'slurm_scheduler_jobs_submitted{{job="slurm"}} > {before}'),
        SCRAPE_WAIT_S,
        "slurm_scheduler_jobs_submitted to grow",
        every_s=2,
    )


def test_no_exporter_series_carries_a_job_id(prometheus: str, queued_jobs: dict[str, str]) -> None:
    _eventually(prometheus, 'slurm_queue_pending{job="slurm",user="dave"}', "the queued jobs scraped")
    series = promql.query(prometheus, '{job="slurm"}')
    assert len(series) > 300
    ids = set(queued_jobs.values())
    for s in series:
        assert not {"jobid", "job_id", "slurm_job_id"} & set(s.labels), s.labels
        assert not ids & set(s.labels.values()), s.labels


def test_terminal_job_states_read_zero_in_v1_8_4(prometheus: str, host: Callable[[str], Host]) -> None:
    """slurm_exporter defect (github.com/SckyzO/slurm_exporter/issues/27, pull 161; fixed after the
    tag): squeue runs without --states=all, so a completed job is in sacct but never in
    slurm_jobs_completed."""
    controller = host("controller")
    job = controller.check_output('su - frank -c "sbatch --parsable --time=1 --output=/dev/null --wrap true"')
    wait_for(
        lambda: "COMPLETED" in controller.check_output(f"sacct -X -n -P -j {job.strip()} -o State"),
        60,
        f"job {job.strip()} COMPLETED in sacct",
        every_s=1,
    )
    scraped_after = _eventually(prometheus, 'timestamp(slurm_jobs_completed{job="slurm"})', "a scrape")[
        0
    ].value
    wait_for(
        lambda: promql.query(prometheus, f'timestamp(slurm_jobs_completed{{job="slurm"}}) > {scraped_after}'),
        SCRAPE_WAIT_S,
        "a scrape after the job completed",
        every_s=2,
    )
    assert [s.value for s in promql.query(prometheus, 'slurm_jobs_completed{job="slurm"}')] == [0]
