"""The fence in an inventory: the egress rule files' records as the allow-list, both hosts, nothing
when egress is off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.blueprint.egress_spec import JOB_ID_LABELS, SlurmEgress
from lab.egress import fence
from lab.kinds.slurm_lab import EGRESS_AREAS, EGRESS_LOGS


def _document() -> dict[str, Any]:
    return {"all": {"vars": {"prometheus_rule_areas": ["dcgm", "slurm"]}, "children": {}}}


def test_the_allow_list_is_every_record_of_the_areas_files_in_order(tmp_path: Path) -> None:
    (tmp_path / "egress-a.yml").write_text(
        "groups:\n  - name: a\n    rules:\n      - record: x:a:sum\n        expr: sum(a)\n"
        "      - alert: NotARecord\n        expr: vector(1)\n"
    )
    (tmp_path / "egress-b.yml").write_text(
        "groups:\n  - name: b\n    rules:\n      - record: x:b:max\n        expr: max(b)\n"
    )
    assert fence.records(("b", "a"), tmp_path) == ["x:b:max", "x:a:sum"]


def test_the_shipped_files_have_no_record_twice() -> None:
    records = fence.records(("dcgm", "slurm", "runai"))
    assert len(records) == len(set(records)) == 7 + 23 + 9


def test_the_fence_adds_its_rule_files_both_hosts_and_what_the_gateway_sends() -> None:
    document = _document()
    fence.apply(document, SlurmEgress(), ("dcgm", "slurm"), lambda host: {"ansible_host": f"lab-x-{host}"})
    areas = document["all"]["vars"]["prometheus_rule_areas"]
    assert areas == ["dcgm", "slurm", "egress-dcgm", "egress-slurm"]
    children = document["all"]["children"]
    assert children["central"] == {"hosts": {"central": {"ansible_host": "lab-x-central"}}}
    gateway = children["egress"]["vars"]
    assert gateway["egress_gateway_series"] == fence.records(("dcgm", "slurm"))
    assert gateway["egress_gateway_pseudonymised_labels"] == ["user", "account", "users"]
    assert gateway["egress_gateway_job_id_labels"] == list(JOB_ID_LABELS)
    assert gateway["egress_gateway_job_logs"] == gateway["egress_gateway_slurmctld_logs"] == []


def test_the_slurm_labs_job_log_is_what_the_gateway_reads_from_every_hosts_log_volume() -> None:
    document = _document()
    fence.apply(document, SlurmEgress(), EGRESS_AREAS, lambda host: {}, logs=EGRESS_LOGS)
    gateway = document["all"]["children"]["egress"]["vars"]
    assert gateway["egress_gateway_job_logs"] == [
        "/var/log/site/*/dcgm-job-mapping.log",
        "/var/log/site/*/dcgm-xid-check.log",
    ]
    assert gateway["egress_gateway_slurmctld_logs"] == ["/var/log/site/controller/slurmctld.log"]


def test_with_egress_off_the_inventory_is_left_as_it_was() -> None:
    document = _document()
    fence.apply(document, SlurmEgress(enabled=False), ("dcgm", "slurm"), lambda host: {})
    assert document == _document()
