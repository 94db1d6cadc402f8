"""The blueprint's ``egress:`` section: what may leave the site for a central store, and which labels'
values are replaced by keyed pseudonyms before it does (signals/egress.md).

``enabled`` (default true) says whether the lab sends anything across the fence at all; false sends
nothing (it never sends names in clear). ``pseudonymised_labels`` lists the label names whose values
are pseudonymised: by default the labels whose values are blueprint names of people, teams and
workloads. A site may add labels the lab's series carry (partitions, node pools, node names …); it may
not leave a default out, since those values are the names the fence exists to keep on the site.

Each kind has its own catalogue of labels (:data:`SLURM_LABELS`, :data:`RUNAI_LABELS`, read from
signals/slurm.md, signals/runai.md and signals/dcgm.md), so a label the kind's series never carry is an
error that names the field and the labels allowed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import field_validator, model_validator

from lab.blueprint.strict import Strict

# Label name → what its values are, in the series of a Slurm lab (signals/slurm.md, signals/dcgm.md).
SLURM_LABELS: dict[str, str] = {
    "user": "Slurm users: slurm_user_*, slurm_queue_*, slurm_cores_*, the fairshare and RPC families",
    "account": "Slurm accounts: slurm_account_*, the fairshare families",
    "users": "a reservation's users, comma-separated: slurm_reservation_info",
    "partition": "partitions: slurm_partition_*, slurm_queue_*, slurm_cores_*",
    "reservation_name": "reservations: slurm_reservation_*",
    "reservation": "reservations holding nodes: slurm_reservation_nodes_*",
    "node": "node names: slurm_node_*",
    "Hostname": "node names: the DCGM families",
}
SLURM_DEFAULT: tuple[str, ...] = ("user", "account", "users")

# Label name → what its values are, in the series of a Run:ai lab (signals/runai.md, signals/dcgm.md).
RUNAI_LABELS: dict[str, str] = {
    "project": "projects: runai_*",
    "department": "departments: runai_project_info, runai_queue_info",
    "queue_name": "projects and their per-pool KAI queues: runai_queue_info, kai_queue_*, kai_*",
    "user": "project users: runai_*_per_workload",
    "workload_name": "workloads (made at run time): runai_*_per_workload",
    "job_name": "workloads (made at run time): runai_active_job_*, kube_job_*",
    "pod_name": "pods (made at run time): runai_*_per_pod",
    "pod_namespace": "project namespaces: runai_*_per_pod",
    "pod": "pods (made at run time): the DCGM families, kube_pod_*",
    "namespace": "project namespaces and Kubernetes' own: the DCGM families, kube_*",
    "job_namespace": "project namespaces: training_operator_jobs_*",
    "created_by_name": "workloads (made at run time): kube_pod_info",
    "owner_name": "workloads (made at run time): kube_pod_owner",
    "label_project": "projects: kube_pod_labels",
    "label_runai_queue": "projects: kube_pod_labels",
    "label_kai_scheduler_queue": "projects' per-pool KAI queues: kube_pod_labels",
    "label_user": "project users: kube_pod_labels",
    "nodepool": "node pools: runai_queue_info, runai_node_nodepool",
    "node": "node names: runai_*_per_node, runai_*_per_gpu, kube_node_*",
    "Hostname": "node names: the DCGM families",
}
RUNAI_DEFAULT: tuple[str, ...] = (
    "project",
    "department",
    "queue_name",
    "user",
    "workload_name",
    "job_name",
    "pod_name",
    "pod_namespace",
    "pod",
    "namespace",
    "job_namespace",
    "created_by_name",
    "owner_name",
    "label_project",
    "label_runai_queue",
    "label_kai_scheduler_queue",
    "label_user",
)


# Labels whose values are job ids: they never cross at all, pseudonymised or not (`hpc_job` of the DCGM
# series; `workload_id`, `job_uuid`, `pod_uuid` of runai_*; `uid` of kube_*; KAI's `podgroup`).
JOB_ID_LABELS: tuple[str, ...] = ("hpc_job", "workload_id", "job_uuid", "pod_uuid", "uid", "podgroup")


class EgressSpec(Strict):
    """What both kinds' ``egress:`` sections share; each kind names its labels and defaults."""

    KIND: ClassVar[str] = ""
    LABELS: ClassVar[dict[str, str]] = {}
    DEFAULT: ClassVar[tuple[str, ...]] = ()

    enabled: bool = True
    pseudonymised_labels: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _a_mapping_with_the_kinds_defaults(cls, data: Any) -> Any:
        if isinstance(data, EgressSpec):
            return data
        if not isinstance(data, dict):
            raise ValueError(
                f"a mapping is expected, not {_type_name(data)}. Fix: "
                f"`egress: {{enabled: true, pseudonymised_labels: [{', '.join(cls.DEFAULT)}]}}`"
            )
        return {"pseudonymised_labels": list(cls.DEFAULT), **data}

    @field_validator("enabled", mode="before")
    @classmethod
    def _a_yaml_boolean(cls, value: Any) -> Any:
        if not isinstance(value, bool):
            raise ValueError(
                f"must be true or false, not {_type_name(value)} {value!r}. Fix: `enabled: true` "
                "(false sends nothing across the fence)"
            )
        return value

    @field_validator("pseudonymised_labels", mode="before")
    @classmethod
    def _known_labels_with_every_default(cls, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise ValueError(
                f"must be a list of label names, not {_type_name(value)}. "
                f"Fix: `pseudonymised_labels: [{', '.join(cls.DEFAULT)}]`"
            )
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise ValueError(
                    f"item {index} is {_type_name(item)} {item!r}, not a label name. "
                    "Fix: write label names as strings, e.g. `user`"
                )
        unknown = [label for label in value if label not in cls.LABELS]
        if unknown:
            raise ValueError(
                f"{', '.join(map(repr, unknown))}: not a label whose values a {cls.KIND} lab's series carry "
                f"from the blueprint. Fix: use labels of {', '.join(cls.LABELS)}"
            )
        duplicates = sorted({label for label in value if value.count(label) > 1})
        if duplicates:
            raise ValueError(f"{', '.join(duplicates)} listed more than once. Fix: list each label once")
        missing = [label for label in cls.DEFAULT if label not in value]
        if missing:
            raise ValueError(
                f"leaves out {', '.join(missing)}: their values are real names, which never cross the "
                f"fence. Fix: keep every one of {', '.join(cls.DEFAULT)} and add labels to them "
                "(or `enabled: false` to send nothing)"
            )
        return value


class SlurmEgress(EgressSpec):
    """A Slurm lab's ``egress:``: users, accounts and reservations' users pseudonymised by default."""

    KIND = "Slurm"
    LABELS = SLURM_LABELS
    DEFAULT = SLURM_DEFAULT


class RunaiEgress(EgressSpec):
    """A Run:ai lab's ``egress:``: projects, departments, queues, users, workloads, namespaces and pods
    pseudonymised by default."""

    KIND = "Run:ai"
    LABELS = RUNAI_LABELS
    DEFAULT = RUNAI_DEFAULT


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    if value is None:
        return "empty (null)"
    return names.get(type(value), "a mapping" if isinstance(value, dict) else type(value).__name__)
