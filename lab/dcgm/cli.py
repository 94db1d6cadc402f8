"""``python3 -m lab.dcgm``: dcgm-exporter's flags plus the lab's own.

Upstream flags keep upstream names, short forms and environment variables (``pkg/cmd/app.go``):
``-a/--address`` (DCGM_EXPORTER_LISTEN), ``-f/--collectors`` (DCGM_EXPORTER_COLLECTORS),
``--hpc-job-mapping-dir`` (DCGM_HPC_JOB_MAPPING_DIR), ``-k/--kubernetes``
(DCGM_EXPORTER_KUBERNETES), ``-n/--no-hostname`` (DCGM_EXPORTER_NO_HOSTNAME), ``--debug``
(DCGM_EXPORTER_DEBUG); ``NODE_NAME`` sets the Hostname label. ``-n`` is accepted and, as at the tag,
changes nothing: ``app.go@4.5.3-4.8.2`` parses it into ``Config.NoHostname`` and nothing reads it
since 4.0.0 (#437), so ``Hostname`` is always present. A flag beats its variable, as in
urfave/cli. Everything else is lab-only and says so in ``--help``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from lab import contract
from lab.dcgm import UPSTREAM_TAG, h100, logfmt, uuid_file
from lab.dcgm.counters import CountersError, load_counters
from lab.dcgm.gpu_model import EMULATED_FIELDS
from lab.dcgm.job_classes import JobClassesError, JobClassesReader, load_job_classes
from lab.dcgm.logfmt import node_logger
from lab.dcgm.node import EmulatedNode, NodeConfig
from lab.dcgm.server import parse_listen_address, serve
from lab.dcgm.throttle import CAUSES
from lab.dcgm.workloads import DEFAULT_CLASS, PROFILES

log = logging.getLogger("lab.dcgm")
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False", ""}


class UsageError(ValueError):
    """Bad flags or inputs; printed as one line naming the flag and the fix."""


def _env_bool(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "")
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise UsageError(f"{name}={value!r} is not a boolean; use true or false")


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m lab.dcgm",
        description=f"Fake-GPU DCGM shim, compatible with dcgm-exporter {UPSTREAM_TAG}.",
    )
    up = parser.add_argument_group("dcgm-exporter flags (upstream names and variables)")
    up.add_argument(
        "-a",
        "--address",
        default=env.get("DCGM_EXPORTER_LISTEN", f":{contract.DCGM_EXPORTER_PORT}"),
        help="Listen address as <HOST>:<PORT> [$DCGM_EXPORTER_LISTEN] (default :9400)",
    )
    up.add_argument(
        "-f",
        "--collectors",
        type=Path,
        default=env.get("DCGM_EXPORTER_COLLECTORS"),
        help="Path to the file that contains the DCGM fields to collect "
        f"[$DCGM_EXPORTER_COLLECTORS] (default: packaged {UPSTREAM_TAG} default set)",
    )
    up.add_argument(
        "--hpc-job-mapping-dir",
        default=env.get("DCGM_HPC_JOB_MAPPING_DIR", ""),
        help="Path to HPC job mapping file directory used for mapping GPUs to jobs "
        "[$DCGM_HPC_JOB_MAPPING_DIR]; lab: %%n expands to the node name",
    )
    up.add_argument(
        "-k",
        "--kubernetes",
        action="store_true",
        default=_env_bool(env, "DCGM_EXPORTER_KUBERNETES"),
        help="Enable kubernetes mapping metrics to kubernetes pods [$DCGM_EXPORTER_KUBERNETES]",
    )
    up.add_argument(
        "-n",
        "--no-hostname",
        action="store_true",
        default=_env_bool(env, "DCGM_EXPORTER_NO_HOSTNAME"),
        help="Omit the hostname information from the output [$DCGM_EXPORTER_NO_HOSTNAME] "
        "(ignored, as by the tag: Hostname is always present)",
    )
    up.add_argument(
        "--debug",
        action="store_true",
        default=_env_bool(env, "DCGM_EXPORTER_DEBUG"),
        help="Enable debug output [$DCGM_EXPORTER_DEBUG]",
    )
    lab = parser.add_argument_group("lab-only flags (not in dcgm-exporter)")
    lab.add_argument("--gpus", type=int, default=8, help="LAB: GPUs per node (default 8)")
    lab.add_argument(
        "--model", default=h100.MODEL_NAME, help=f"LAB: modelName label (default {h100.MODEL_NAME!r})"
    )
    lab.add_argument(
        "--driver-version",
        default=h100.DRIVER_VERSION,
        help=f"LAB: DCGM_FI_DRIVER_VERSION label (default {h100.DRIVER_VERSION})",
    )
    lab.add_argument(
        "--node",
        action="append",
        default=[],
        metavar="NAME[:ADDR]",
        help="LAB: emulate node NAME (its Hostname) listening on ADDR; repeat to serve "
        "several nodes from one process, one scrape target each",
    )
    lab.add_argument(
        "--fault-dir", type=Path, help="LAB: XID injection: file DIR/<node>/<gpu> holds a decimal XID code"
    )
    lab.add_argument(
        "--throttle-dir",
        type=Path,
        help="LAB: throttle injection: file DIR/<node>/<gpu> holds a cause ("
        + "|".join(CAUSES)
        + "); no file: not throttled",
    )
    lab.add_argument(
        "--pcie-replay-dir",
        type=Path,
        help="LAB: PCIe replay injection: file DIR/<node>/<gpu> holds extra replays per minute; "
        "no file: a healthy link",
    )
    lab.add_argument(
        "--job-classes",
        type=Path,
        help='LAB: JSON {"<job id>|<namespace>/<pod>": "'
        + '"|"'.join(PROFILES)
        + f'"}}; unlisted jobs are {DEFAULT_CLASS}',
    )
    lab.add_argument(
        "--pod-resources",
        type=Path,
        help="LAB: Kubernetes mode reads GPU->pod assignments from this JSON file "
        "(written by the Run:ai lab's device assignment) instead of the kubelet socket",
    )
    lab.add_argument(
        "--gpu-uuids-file",
        metavar="PATH",
        help="LAB: at start, write each node's GPUs as `nvidia-smi --query-gpu=index,uuid "
        "--format=csv,noheader` prints them (%%n = the node's name), for the Prolog's UUIDs",
    )
    lab.add_argument("--seed", type=int, default=0, help="LAB: seed of the value model (default 0)")
    return parser


def _split_node(spec: str) -> tuple[str, str | None]:
    name, sep, address = spec.partition(":")
    if not name:
        raise UsageError(f"--node {spec!r}: NAME is empty; use NAME or NAME:HOST:PORT")
    return name, (address if sep else None)


def node_configs(args: argparse.Namespace, env: Mapping[str, str]) -> list[NodeConfig]:
    """One NodeConfig per emulated node, paths expanded, addresses checked."""
    if args.gpus < 1:
        raise UsageError(f"--gpus {args.gpus}: a node needs at least one GPU")
    if args.pod_resources and not args.kubernetes:
        raise UsageError("--pod-resources needs -k/--kubernetes (or DCGM_EXPORTER_KUBERNETES=true)")
    if args.node:
        specs = [_split_node(spec) for spec in args.node]
    else:
        # Upstream: Hostname is $NODE_NAME, else the host name.
        specs = [(env.get("NODE_NAME") or socket.gethostname(), None)]
    names = [name for name, _ in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"--node names must be unique, got {', '.join(names)}")
    if len(specs) > 1 and any(address is None for _, address in specs):
        raise UsageError("with several --node entries every one needs its address: NAME:HOST:PORT")
    configs = []
    for name, address in specs:
        listen = address if address is not None else args.address
        try:
            parse_listen_address(listen)
        except ValueError as error:
            raise UsageError(f"node {name}: {error}") from error
        mapping = args.hpc_job_mapping_dir
        configs.append(
            NodeConfig(
                name=name,
                address=listen,
                gpus=args.gpus,
                model_name=args.model,
                driver_version=args.driver_version,
                hostname=name,
                mapping_dir=Path(mapping.replace("%n", name)) if mapping else None,
                kubernetes=args.kubernetes,
                pod_resources=args.pod_resources,
                fault_dir=args.fault_dir,
                throttle_dir=args.throttle_dir,
                pcie_replay_dir=args.pcie_replay_dir,
                seed=args.seed,
            )
        )
    return configs


def build_nodes(argv: Sequence[str], env: Mapping[str, str]) -> list[EmulatedNode]:
    return nodes_of(build_parser(env).parse_args(list(argv)), env)


def nodes_of(args: argparse.Namespace, env: Mapping[str, str]) -> list[EmulatedNode]:
    logging.getLogger("lab.dcgm").setLevel(logging.DEBUG if args.debug else logging.INFO)
    configs = node_configs(args, env)
    counters = load_counters(args.collectors, supported_fields=EMULATED_FIELDS)
    if args.job_classes is None:
        return [EmulatedNode(config, counters) for config in configs]
    if args.job_classes.exists():  # present at start: it must be valid (the runner may write it later)
        load_job_classes(args.job_classes)
    return [
        EmulatedNode(
            config, counters, job_classes=JobClassesReader(args.job_classes, node_logger(config.name))
        )
        for config in configs
    ]


def run(argv: Sequence[str], env: Mapping[str, str], stop: threading.Event) -> int:
    """Serve until ``stop`` is set; returns the process exit code."""
    try:
        args = build_parser(env).parse_args(list(argv))
        nodes = nodes_of(args, env)
    except (UsageError, CountersError, JobClassesError) as error:
        log.error(str(error))
        return 2
    try:
        for node in nodes if args.gpu_uuids_file else []:
            uuid_file.write(args.gpu_uuids_file, node.config.name, node.config.gpus)
    except OSError as error:
        log.error(f"LAB: --gpu-uuids-file: {error}")
        return 1
    try:
        shim = serve(nodes)
    except OSError as error:
        log.error(f"Failed to Listen and Server HTTP server: {error}")
        return 1
    # The exporter's own start-up lines (app.go:447, server.go:189, app.go:523, and exporter-toolkit's
    # web/tls_config.go:354-357); DCGM's initialisation lines are left out: there is no DCGM here.
    log.info("Starting dcgm-exporter", extra={"attrs": {"Version": UPSTREAM_TAG}})
    for name, address in shim.addresses.items():
        for message in ("Starting webserver", "HTTP server started - ready to serve metrics"):
            log.info(message, extra={"attrs": {"node": name}})
        log.info("Listening on", extra={"attrs": {"address": address, "node": name}})
        log.info("TLS is disabled.", extra={"attrs": {"http2": "false", "address": address, "node": name}})
    stop.wait()
    shim.shutdown()
    return 0


def main(argv: list[str]) -> int:
    logfmt.configure()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        return run(argv, os.environ, stop)
    except UsageError as error:  # raised while parsing environment defaults
        log.error(str(error))
        return 2
