"""The fence on the default lab: what reaches the centre (VictoriaMetrics behind the egress gateway) is
the egress set and nothing else, no job id crosses as a label, and every name crosses only as its keyed
pseudonym (signals/egress.md). A 2-GPU job of alice's (account llm-pretrain) runs while the tests look,
so the site's series carry its id (`hpc_job`) and its account, as under the live workload."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator

import pytest
import testinfra

from lab import promql
from lab.blueprint.egress_spec import JOB_ID_LABELS
from lab.blueprint.slurm_blueprint import Blueprint
from lab.bringup.provision import ProvisionError, private_dir, run_playbook
from lab.central import builds, fence_install
from lab.egress import crossing, fence, gateway, key, names, pseudonyms
from lab.kinds.slurm_lab import EGRESS_AREAS
from lab.progress import Progress
from tests.lab.conftest import logsql, run_lab, running_job_gpus, submit_gpu_job, wait_for

# The gateway reads every 5 s and sends every 5 s; the site scrapes and evaluates every 15 s: a
# record is at the centre within a minute of its first evaluation, with margin.
AT_THE_CENTRE_S = 120
JOB_S = 600  # alice's job outlives the module's tests; the fixture cancels it
# The centre away for a minute and a half in CI (bench/bench_fence_loss.py takes it away for 10 minutes):
# six evaluations of every egress record that the gateway must hold and send late.
OUTAGE_S = 90
# What the loss test counts: the cluster's GPUs (one series) and every GPU's utilisation (one per GPU).
COUNTED = ("cluster:slurm_gpus_total:sum", "Hostname_gpu_UUID:DCGM_FI_DEV_GPU_UTIL:max")


@pytest.fixture(scope="module")
def central(default_lab: Blueprint) -> str:
    url = f"http://127.0.0.1:{default_lab.ports.central_metrics}"
    wait_for(
        lambda: promql.query(url, "cluster:slurm_gpus_total:sum"),
        AT_THE_CENTRE_S,
        "the first egress record at the centre",
        every_s=2,
    )
    return url


@pytest.fixture(scope="module")
def alices_job(default_lab: Blueprint, host: Callable[[str], testinfra.host.Host]) -> Iterator[str]:
    """A running 2-GPU job of alice's: its id labels its GPUs' series at the site."""
    controller = host("controller")
    job = submit_gpu_job(controller, "--gres=gpu:2", JOB_S, time_limit_min=15)
    try:
        running_job_gpus(controller, job)
        yield job
    finally:
        controller.run(f"scancel {job}")


def _accounts(central: str, lab: Blueprint) -> list[promql.Series]:
    """The accounts' GPU use at the centre, once alice's job (account llm-pretrain) reached it."""
    alices = pseudonyms.pseudonym(key.load(lab.name), "llm-pretrain")

    def with_alices() -> list[promql.Series]:
        found = promql.query(central, "account:slurm_account_gpus_running:sum")
        return found if alices in {series.labels.get("account") for series in found} else []

    return wait_for(  # type: ignore[return-value]
        with_alices, AT_THE_CENTRE_S, "alice's account's GPU use at the centre", every_s=2
    )


def test_the_centre_holds_the_egress_records_and_nothing_else(default_lab: Blueprint, central: str) -> None:
    allowed = {*fence.records(EGRESS_AREAS), *fence.READ_HEALTH}
    now = time.time()
    at_centre = {s["__name__"] for s in promql.series(central, '{__name__=~".+"}', now - 3600, now)}
    assert at_centre <= allowed, f"not in the egress set: {sorted(at_centre - allowed)}"
    # Each area crossed: the GPUs' records, the cluster's and the alert path's.
    assert "Hostname_gpu_UUID:DCGM_FI_DEV_GPU_UTIL:max" in at_centre
    assert "partition:slurm_partition_gpus_allocated:sum" in at_centre
    assert promql.query(central, "cluster:alertmanager_up:min")[0].value == 1
    gpus = promql.query(central, "count(Hostname_gpu_UUID:DCGM_FI_DEV_GPU_UTIL:max)")
    assert gpus[0].value == default_lab.nodes.count * default_lab.nodes.shape.gpus
    # The site's cluster label travels with every series, so a centre tells sites apart.
    records = promql.query(central, '{__name__=~".+:.+:.+"}')
    assert {s.labels.get("cluster") for s in records} == {default_lab.slurm.cluster_name}
    # No label of the collector's own (otel_scope_*) and no scrape target's resource (target_info).
    assert not [s for s in records if any(name.startswith("otel_") for name in s.labels)]
    assert not promql.query(central, "target_info")


def test_no_job_id_crosses_as_a_label(
    default_lab: Blueprint, central: str, alices_job: str, host: Callable[[str], testinfra.host.Host]
) -> None:
    started = time.time() - 3600
    _accounts(central, default_lab)
    # At the site, the job's id labels its GPUs' series ...
    prometheus = f"http://127.0.0.1:{default_lab.ports.prometheus}"
    wait_for(
        lambda: promql.query(prometheus, f'DCGM_FI_DEV_GPU_UTIL{{hpc_job="{alices_job}"}}'),
        AT_THE_CENTRE_S,
        f"job {alices_job}'s GPU series at the site",
    )
    # ... and nothing at the centre carries it, or any other id Slurm ran in the last hour.
    ran = host("controller").check_output("sacct -X -n -P -a -S now-1hours -o JobIDRaw").split()
    job_ids = set(ran)
    assert alices_job in job_ids
    crossed = promql.series(central, '{__name__=~".+"}', started, time.time())
    assert crossed
    gpu_indices = {str(i) for i in range(default_lab.nodes.shape.gpus)}
    for labels in crossed:
        assert not set(labels) & set(JOB_ID_LABELS), labels
        # A GPU index may equal a small job id; it is the only number-valued label and holds no other.
        assert labels.get("gpu", "0") in gpu_indices, labels
        leaked = {name: value for name, value in labels.items() if name != "gpu" and value in job_ids}
        assert not leaked, f"job ids crossed as label values: {leaked} in {labels}"


def test_names_cross_only_as_keyed_pseudonyms(default_lab: Blueprint, central: str, alices_job: str) -> None:
    """Every account at the centre is the keyed pseudonym of a blueprint account, not its plain SHA-256;
    no label value at the centre is a name the fence keeps; `lab egress reveal` finds the name."""
    accounts = _accounts(central, default_lab)
    lab_key = key.load(default_lab.name)
    kept = names.of_blueprint(default_lab)
    real = {name.value for name in kept.fixed}
    by_pseudonym = {pseudonyms.pseudonym(lab_key, name): name for name in real}
    crossed = [series.labels["account"] for series in accounts]
    assert pseudonyms.pseudonym(lab_key, "llm-pretrain") in crossed  # alice's account
    for value in crossed:
        assert value in by_pseudonym, f"{value}: not the keyed pseudonym of any name of the blueprint"
        assert value != hashlib.sha256(by_pseudonym[value].encode()).hexdigest()
        # Another key gives another pseudonym: the key, not the name alone, decides it.
        assert pseudonyms.pseudonym(key.new_key(), by_pseudonym[value]) != value
    revealed = run_lab("egress", "reveal", crossed[0], "--lab", default_lab.name).stdout
    assert by_pseudonym[crossed[0]] in revealed
    now = time.time()
    values = {v for s in promql.series(central, '{__name__=~".+"}', now - 3600, now) for v in s.values()}
    assert not values & real, f"names crossed in clear: {sorted(values & real)}"


def test_the_job_log_crosses_with_the_job_id_in_a_field_and_no_name(
    default_lab: Blueprint, alices_job: str, host: Callable[[str], testinfra.host.Host]
) -> None:
    """The Prolog's line of alice's job and slurmctld's allocation reach the centre's log store, the job
    id, node and GPUs as fields; no field at the centre is a name of the blueprint (the lines carry
    none), and no slurmctld line crosses but the job lines (signals/logs.md)."""
    logs = f"http://127.0.0.1:{default_lab.ports.central_logs}"
    node, gpus = running_job_gpus(host("controller"), alices_job)

    def prolog() -> list[dict[str, str]]:
        return logsql(logs, f"prog:=dcgm-job-mapping action:=prolog job_id:={alices_job}")

    (line,) = wait_for(prolog, AT_THE_CENTRE_S, f"job {alices_job}'s Prolog line at the centre", every_s=2)
    assert (line["node"], set(line["gpus"].split(",")), line["result"]) == (node, gpus, "ok"), line
    allocated = logsql(logs, f"prog:=slurmctld job_id:={alices_job}")
    assert [entry["msg"].split(" NodeList=")[0] for entry in allocated] == [
        f"sched: Allocate JobId={alices_job}"
    ]
    crossed = logsql(logs, "_time:1h")
    kinds = {(entry["prog"], entry.get("msg", "").split(" JobId=")[0]) for entry in crossed}
    assert {prog for prog, _ in kinds} <= {"dcgm-job-mapping", "dcgm-xid-check", "slurmctld"}, kinds
    assert {msg for prog, msg in kinds if prog == "slurmctld"} <= {
        "sched: Allocate",
        "sched/backfill: _start_job: Started",
        "sched: _slurm_rpc_allocate_resources",
        "_job_complete:",
    }, kinds
    real = {name.value for name in names.of_blueprint(default_lab).fixed}
    values = {value for entry in crossed for value in entry.values()}
    assert not values & real, f"names crossed in the job log: {sorted(values & real)}"


def test_lab_status_lists_the_gateway_and_the_centre(default_lab: Blueprint) -> None:
    status = run_lab("status", "--lab", default_lab.name).stdout
    assert "fence (egress gateway → centre): installed" in status
    assert f"http://127.0.0.1:{default_lab.ports.central_metrics}" in status
    assert f"http://127.0.0.1:{default_lab.ports.central_logs}" in status
    assert f"http://127.0.0.1:{default_lab.ports.central_alerts}" in status
    for daemon in ("egress-gateway", "victoria-metrics", "victoria-logs", "vmalert"):
        assert f"{daemon}=running" in status, status


@pytest.mark.parametrize(
    ("key_file", "said"),
    [
        ("/etc/aifactory-lab/egress-key/missing.key", "missing"),
        ("/tmp/readable.key", "mode 0644, readable beyond its owner"),
    ],
)
def test_a_missing_or_readable_key_stops_the_gateways_role_before_it_changes_anything(
    default_lab: Blueprint, host: Callable[[str], testinfra.host.Host], key_file: str, said: str
) -> None:
    """The fence's playbook with a bad key: the role fails on its first tasks, naming the file and the
    fix; the running gateway keeps its configuration and its key."""
    egress = host("egress")
    if "readable" in said:  # a good key's shape, at a mode that lets others read it
        egress.run(
            f"head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > {key_file}; chmod 0644 {key_file}"
        )
    config = egress.file("/etc/otelcol-lab/config.yaml").content_string
    private = private_dir(default_lab.name)
    binaries = fence_install.install_vars(builds.cached())
    assert binaries, "the fence's binaries are not cached"
    try:
        with pytest.raises(ProvisionError) as refused:
            run_playbook(
                private,
                private / "inventory" / "hosts.yml",
                {**binaries, "egress_gateway_key_file": key_file},
                Progress(quiet=True),
                playbook=fence_install.PLAYBOOK,
            )
    finally:
        egress.run("rm -f /tmp/readable.key")
    message = " ".join(str(refused.value).split())
    assert f"{key_file}: {said}" in message and "The gateway was not started" in message
    assert "lab egress rotate-key" in message
    assert egress.file("/etc/otelcol-lab/config.yaml").content_string == config
    assert "egress-gateway running" in egress.check_output("/usr/local/sbin/lab-daemon status egress-gateway")


def test_nothing_is_lost_while_the_centre_is_away_or_the_gateway_restarts(
    default_lab: Blueprint, central: str, host: Callable[[str], testinfra.host.Host]
) -> None:
    """VictoriaMetrics stopped for OUTAGE_S, started again, then the gateway restarted: every sample the
    site stored of the counted records over the whole window is at the centre (the remote write's
    write-ahead log holds what the centre did not take, across the gateway's restart)."""
    site = f"http://127.0.0.1:{default_lab.ports.prometheus}"
    centre = host(fence.CENTRAL_HOST)
    start = time.time()
    centre.check_output("/usr/local/sbin/lab-daemon stop victoria-metrics")
    try:
        with pytest.raises(promql.PrometheusError):
            promql.query(central, "up")
        time.sleep(OUTAGE_S)  # the outage is the fault under test, not a wait for a condition
    finally:
        centre.check_output("/usr/local/sbin/lab-daemon start victoria-metrics")
    wait_for(lambda: _answers(central), 60, "the centre answering again")
    assert gateway.restart(default_lab.name)
    end = time.time() + 30  # samples the restarted gateway reads too
    # The centre answers 30 s behind (-search.latencyOffset): the window's end is readable from then on.
    wait_for(lambda: time.time() > end + 40, 120, "the window's end readable at the centre", every_s=1)
    for record in COUNTED:
        crossed = crossing.count(site, central, record, start, end)
        deadline = time.monotonic() + 120  # what the gateway still sends from its write-ahead log
        while crossed.missing and time.monotonic() < deadline:
            time.sleep(5)
            crossed = crossing.count(site, central, record, start, end)
        assert not crossed.missing, (
            f"{record}: {len(crossed.missing)} of {crossed.at_site} missing {crossed.missing[:5]}"
        )
        series = (
            1 if record.startswith("cluster:") else default_lab.nodes.count * default_lab.nodes.shape.gpus
        )
        # One sample per series and 15 s evaluation over the window, less the edges.
        assert crossed.at_site >= series * ((end - start) // 15 - 2), crossed
        print(f"{record}: {crossed.crossed} of {crossed.at_site} samples at the centre")  # BENCHMARKS.md


def _answers(url: str) -> bool:
    try:
        return bool(promql.query(url, "vector(1)"))
    except promql.PrometheusError:
        return False
