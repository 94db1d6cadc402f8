"""``python3 -m lab.kube control-plane|drive …``: the Kubernetes path inside the Run:ai lab's container."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from lab import contract


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.kube", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    plane = commands.add_parser(
        "control-plane", help="run etcd, the API server, KAI, kwok, kube-state-metrics"
    )
    plane.add_argument("--pools", required=True, help="node pools, comma-separated: one KAI scheduler each")
    plane.add_argument("--verbosity", type=int, default=3, help="KAI scheduler --v")
    plane.add_argument("--logs", type=Path, required=True, help="directory for <process>.log")
    drive = commands.add_parser("drive", help="tenancy, workloads, device assignment and Run:ai series")
    drive.add_argument("--blueprint", type=Path, required=True)
    drive.add_argument("--scenario", default="baseline")
    drive.add_argument("--time-scale", type=float, default=1.0)
    drive.add_argument("--seed", type=int, default=0)
    drive.add_argument("--out", type=Path, required=True)
    drive.add_argument("--address", default=f"0.0.0.0:{contract.RUNAI_API_PORT}")
    drive.add_argument("--dcgm-address", default=f"0.0.0.0:{contract.RUNAI_DCGM_FIRST_PORT}")
    drive.add_argument("--rest-address", default=f"0.0.0.0:{contract.RUNAI_REST_PORT}")
    drive.add_argument(
        "--rest-keys", type=Path, help="the REST API's credentials directory; without it, no REST API"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if args.command == "control-plane":
        from lab.kube.controlplane import run

        return run([p for p in args.pools.split(",") if p], args.verbosity, args.logs)
    from lab.blueprint.runai_blueprint import load
    from lab.kube import controlplane
    from lab.kube.api import Client
    from lab.kube.driver import Driver
    from lab.kube.driver import drive as run_driver
    from lab.kube.scenarios import Scenario

    bp = load(args.blueprint)
    host, first = args.dcgm_address.rsplit(":", 1)
    nodes = [n for p in bp.node_pools for n in p.node_names()]
    dcgm = {n: f"{host}:{int(first) + i}" for i, n in enumerate(nodes)}
    client = Client(
        controlplane.PKI / "runai-driver.kubeconfig",
        server=f"https://127.0.0.1:{contract.KUBE_APISERVER_PORT}",
    )
    args.out.mkdir(parents=True, exist_ok=True)
    driver = Driver(
        bp,
        client,
        args.out,
        Scenario(args.scenario),
        args.time_scale,
        args.seed,
        controlplane.BIN.parent / "kai",
    )
    if args.rest_keys is not None:
        from lab.kube.manifests import IMAGE
        from lab.runai import RestApi, rest_auth

        driver.rest = RestApi(rest_auth.Credentials.read(args.rest_keys), IMAGE)
    run_driver(driver, args.address, dcgm, args.rest_address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
