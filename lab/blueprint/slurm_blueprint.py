"""Blueprint: the YAML that declares one lab (nodes, racks, partitions, accounts, users, QOS, ports).

Loading validates everything up front and turns any mistake into a :class:`BlueprintError` that names
the file, the field and what is allowed, so nothing downstream ever sees a half-valid lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from lab import contract, versions
from lab.blueprint import hostlist, strict
from lab.blueprint.egress_spec import SlurmEgress
from lab.blueprint.strict import Strict
from lab.blueprint.workload_spec import WorkloadSpec

NAME = r"^[a-z][a-z0-9-]{0,30}$"
_SLURM_NAME = r"^[a-z][a-z0-9_-]{0,62}$"
SlurmName = Annotated[str, Field(pattern=_SLURM_NAME)]
Port = Annotated[int, Field(ge=1024, le=65535)]
_SLURM_DURATION = r"^(UNLIMITED|\d+|\d+-\d{2}:\d{2}:\d{2}|\d{1,2}:\d{2}:\d{2})$"


class BlueprintError(ValueError):
    """A blueprint that cannot be used; the message names file, field and fix."""


class NodeShape(Strict):
    """What every compute node declares to Slurm (SlurmdParameters=config_overrides)."""

    sockets: int = Field(ge=1, le=8)
    cores_per_socket: int = Field(ge=1, le=256)
    threads_per_core: int = Field(default=1, ge=1, le=4)
    real_memory_mb: int = Field(ge=1024)
    gpus: int = Field(ge=1, le=16)
    gpu_type: SlurmName

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core


class Nodes(Strict):
    prefix: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,20}$")]
    count: int = Field(ge=1, le=1024)
    shape: NodeShape

    @cached_property
    def names(self) -> list[str]:
        width = max(3, len(str(self.count)))
        return [f"{self.prefix}-{index:0{width}d}" for index in range(1, self.count + 1)]


class Topology(Strict):
    """``per-node``: one container per node. ``racks``: containers of many slurmd (multiple-slurmd)."""

    layout: Literal["per-node", "racks"] = "per-node"
    nodes_per_rack: int | None = Field(default=None, ge=1, le=512)
    first_slurmd_port: Port = 17001

    @model_validator(mode="after")
    def _rack_size_only_for_racks(self) -> Topology:
        if self.layout == "racks" and self.nodes_per_rack is None:
            raise ValueError("layout 'racks' needs nodes_per_rack (a DGX SuperPOD SU is 32)")
        if self.layout == "per-node" and self.nodes_per_rack is not None:
            raise ValueError("nodes_per_rack applies only to layout 'racks'")
        return self


class Partition(Strict):
    name: SlurmName
    nodes: str = Field(description="'ALL' or a hostlist such as dgx-[001-004]")
    default: bool = False
    max_time: str = Field(pattern=_SLURM_DURATION)


class Account(Strict):
    name: SlurmName
    description: str = ""
    fairshare: int = Field(default=1, ge=1, le=100000)


class User(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")]
    uid: int = Field(ge=1000, le=60000)
    account: SlurmName


class GeneratedUsers(Strict):
    """Pseudonymous users at scale: ``<prefix>NNN`` spread round-robin over the accounts."""

    count: int = Field(ge=1, le=5000)
    prefix: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,20}$")] = "user"
    first_uid: int = Field(default=3000, ge=1000, le=55000)


class Qos(Strict):
    name: SlurmName
    priority: int = Field(default=0, ge=0, le=1_000_000)
    max_wall: str | None = None
    description: str = ""


# scontrol(1) of Slurm 24.11.5, RESERVATIONS, Flags= (SPEC_NODES is "output only": Slurm sets it).
ReservationFlag = Literal[
    "ANY_NODES", "DAILY", "FLEX", "HOURLY", "IGNORE_JOBS", "LICENSE_ONLY", "MAGNETIC", "MAINT",
    "NO_HOLD_JOBS_AFTER", "OVERLAP", "PART_NODES", "PURGE_COMP", "REPLACE", "REPLACE_DOWN",
    "STATIC_ALLOC", "TIME_FLOAT", "USER_DELETE", "WEEKDAY", "WEEKEND", "WEEKLY",
]  # fmt: skip


class License(Strict):
    """A Slurm license: local (``Licenses=`` in slurm.conf) or, with ``server``, remote (served by
    slurmdbd, made with ``sacctmgr add resource``; its name in Slurm is ``<name>@<server>``)."""

    name: SlurmName
    count: int = Field(ge=1, le=1_000_000)
    server: SlurmName | None = None
    server_type: SlurmName = "flexlm"

    @property
    def slurm_name(self) -> str:
        """The name Slurm shows (scontrol show licenses): remote licenses are ``name@server``."""
        return f"{self.name}@{self.server}" if self.server else self.name


class Reservation(Strict):
    """An advance reservation made at bring-up with ``scontrol create reservation`` (kept if it exists)."""

    name: SlurmName
    nodes: str = Field(description="'ALL' or a hostlist such as dgx-[001-004]")
    start: str = Field(
        pattern=r"^now(\+\d+(minutes|hours|days|weeks))?$",
        description="'now', or 'now+N' minutes/hours/days/weeks (scontrol's StartTime= syntax)",
    )
    duration: str = Field(pattern=_SLURM_DURATION)
    flags: list[ReservationFlag] = Field(default_factory=list)
    users: list[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")]] = Field(
        default_factory=lambda: ["root"], min_length=1
    )


class Drain(Strict):
    """Nodes held out of service at bring-up (``scontrol update State=DRAIN Reason=…``), as a real
    cluster always holds some for repair. The workload plans without them."""

    nodes: str = Field(description="a hostlist such as dgx-003")
    reason: str = Field(min_length=1, max_length=200, pattern=r"^[^|\n\"]+$")


class Ports(Strict):
    """Host ports; every one is published on 127.0.0.1 only."""

    slurmrestd: Port = contract.SLURMRESTD_PORT
    prometheus: Port = contract.PROMETHEUS_PORT
    alertmanager: Port = contract.ALERTMANAGER_PORT
    slurm_exporter: Port = contract.SLURM_EXPORTER_PORT
    central_metrics: Port = contract.VICTORIA_METRICS_PORT  # the centre's VictoriaMetrics (egress on)
    central_logs: Port = contract.VICTORIA_LOGS_PORT  # the centre's VictoriaLogs (egress on)
    central_alerts: Port = contract.VMALERT_PORT  # the centre's vmalert, its rules' state (egress on)


class Slurm(Strict):
    cluster_name: SlurmName
    # The Slurm release the lab runs (lab/versions.py pins each one's Debian suite and packages).
    version: str = versions.DEFAULT_SLURM_SERIES
    max_job_count: int = Field(default=10000, ge=100, le=1_000_000)
    min_job_age_s: int = Field(default=300, ge=2, le=86400)
    # slurmctld's own metrics endpoints (MetricsType=metrics/openmetrics), scraped beside the exporter;
    # unset: on wherever the release serves them (25.11 and later).
    native_metrics: bool | None = None

    @field_validator("version")
    @classmethod
    def _a_release_the_lab_pins(cls, version: str) -> str:
        if version not in versions.SLURM_RELEASES:
            known = ", ".join(f'"{series}"' for series in versions.SLURM_RELEASES)
            raise ValueError(f"Slurm {version!r} is not a release the lab runs; use one of {known} (quoted)")
        return version

    @model_validator(mode="after")
    def _native_metrics_need_a_release_with_them(self) -> Slurm:
        if self.native_metrics and not self.release.native_metrics:
            raise ValueError(
                f"native_metrics: Slurm {self.version} has no metrics/openmetrics plugin (it came in 25.11); "
                'set version: "26.05" or drop native_metrics'
            )
        return self

    @property
    def release(self) -> versions.SlurmRelease:
        return versions.SLURM_RELEASES[self.version]

    @property
    def serves_native_metrics(self) -> bool:
        return self.release.native_metrics if self.native_metrics is None else self.native_metrics


class Blueprint(Strict):
    kind: Literal["slurm"] = "slurm"  # lab/kinds: a Run:ai blueprint says `kind: runai`
    name: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    slurm: Slurm
    nodes: Nodes
    topology: Topology = Topology()
    partitions: list[Partition] = Field(min_length=1)
    accounts: list[Account] = Field(min_length=1)
    users: list[User] = Field(default_factory=list)
    generated_users: GeneratedUsers | None = None
    qos: list[Qos] = Field(default_factory=list)
    licenses: list[License] = Field(default_factory=list)
    reservations: list[Reservation] = Field(default_factory=list)
    drains: list[Drain] = Field(default_factory=list)
    ports: Ports = Ports()
    workload: WorkloadSpec | None = None
    egress: SlurmEgress = SlurmEgress()  # what crosses the site's fence (lab/egress)

    @field_validator("partitions")
    @classmethod
    def _one_default_partition(cls, partitions: list[Partition]) -> list[Partition]:
        defaults = [p.name for p in partitions if p.default]
        if len(defaults) > 1:
            raise ValueError(f"only one partition may be default, found {defaults}")
        strict.require_unique("partition", [p.name for p in partitions])
        return partitions

    @model_validator(mode="after")
    def _references_resolve(self) -> Blueprint:
        known_nodes = set(self.nodes.names)
        listed: dict[str, Sequence[Partition | Reservation | Drain]] = {
            "partitions": self.partitions,
            "reservations": self.reservations,
            "drains": self.drains,
        }
        for field_name, entries in listed.items():
            for index, entry in enumerate(entries):
                self._check_nodes(f"{field_name}[{index}].nodes", entry.nodes, known_nodes)
        strict.require_unique("reservation", [r.name for r in self.reservations])
        strict.require_unique("license", [lic.slurm_name for lic in self.licenses])
        accounts = [a.name for a in self.accounts]
        strict.require_unique("account", accounts)
        for user in self.users:
            if user.account not in accounts:
                raise ValueError(f"user {user.name!r} has account {user.account!r}, not in {accounts}")
        strict.require_unique("user", [u.name for u in self.all_users])
        strict.require_unique("uid", [str(u.uid) for u in self.all_users])
        strict.require_unique("qos", [q.name for q in self.qos])
        if self.topology.layout == "racks":
            last_port = self.topology.first_slurmd_port + self.nodes.count - 1
            if last_port > 65535:
                raise ValueError(f"topology.first_slurmd_port leaves node ports past 65535 ({last_port})")
        return self

    def _check_nodes(self, where: str, nodes: str, known_nodes: set[str]) -> None:
        if nodes == "ALL":
            return
        try:
            members = hostlist.expand(nodes)
        except hostlist.HostlistError as error:
            raise ValueError(f"{where}: {error}") from error
        unknown = sorted(set(members) - known_nodes)
        if unknown:
            raise ValueError(
                f"{where} names nodes the blueprint does not declare: "
                f"{unknown[:5]} (declared: {hostlist.compress(self.nodes.names)})"
            )

    @cached_property
    def drained_nodes(self) -> list[str]:
        """Nodes the blueprint holds drained, in node order."""
        held = {node for drain in self.drains for node in hostlist.expand(drain.nodes)}
        return [node for node in self.nodes.names if node in held]

    @cached_property
    def all_users(self) -> list[User]:
        users = list(self.users)
        if self.generated_users is not None:
            spec = self.generated_users
            width = max(3, len(str(spec.count)))
            users += [
                User(
                    name=f"{spec.prefix}{index:0{width}d}",
                    uid=spec.first_uid + index,
                    account=self.accounts[(index - 1) % len(self.accounts)].name,
                )
                for index in range(1, spec.count + 1)
            ]
        return users

    def partition_nodes(self, partition: Partition) -> list[str]:
        return self.nodes.names if partition.nodes == "ALL" else hostlist.expand(partition.nodes)

    @cached_property
    def racks(self) -> dict[str, list[str]]:
        """Rack container host name → the node names its slurmd processes serve."""
        size = self.topology.nodes_per_rack
        if self.topology.layout != "racks" or size is None:
            return {}
        names = self.nodes.names
        count = (len(names) + size - 1) // size
        return {f"rack{index + 1:02d}": names[index * size : (index + 1) * size] for index in range(count)}

    def slurmd_port(self, node: str) -> int | None:
        """Rack layout gives each slurmd its own port; one node per container keeps the default."""
        if self.topology.layout != "racks":
            return None
        return self.topology.first_slurmd_port + self.nodes.names.index(node)

    @cached_property
    def nodes_by_container(self) -> dict[str, list[str]]:
        """Node container host name → the node names its slurmd processes serve (one, or a rack's)."""
        return self.racks or {name: [name] for name in self.nodes.names}

    @cached_property
    def _container_of_node(self) -> dict[str, str]:
        return {node: host for host, nodes in self.nodes_by_container.items() for node in nodes}

    def node_container_host(self, node: str) -> str:
        """The container host name that runs ``node``'s slurmd."""
        return self._container_of_node.get(node, node)

    @property
    def node_containers(self) -> list[str]:
        return list(self.nodes_by_container)


def load(path: Path) -> Blueprint:
    """Read and validate ``path``; every failure is a :class:`BlueprintError` naming the fix."""
    data = strict.read_mapping(path, "blueprint", "name, slurm, nodes", BlueprintError)
    return parse(data, source=str(path))


def parse(data: dict[str, Any], source: str = "<blueprint>") -> Blueprint:
    return strict.validate(Blueprint, data, source, "blueprint", "blueprints/default.yaml", BlueprintError)
