"""The site's centre beyond the fence: its builds from cold, then each binary started once on
127.0.0.1 to show it runs.

    python3 bench/bench_central_builds.py [--warm-go-caches] [--fresh-state] [--keep-go-caches]

Builds: ``lab.central.builds.ensure`` (which runs each build under ``nice -n 10``) with new, empty Go
module and build caches (``GOMODCACHE``, ``GOCACHE`` in a temporary directory, removed at the end unless
``--keep-go-caches``; the caller's with ``--warm-go-caches``) into the lab's state root, which must hold
no build of the centre yet (else ``--fresh-state``: a temporary state root). Prints each build's seconds
and each binary's size.

Then, each on 127.0.0.1 only, at a free port, on temporary data directories, stopped at the end:
VictoriaMetrics (``/health``, its version on ``/metrics``), VictoriaLogs (the same), vmalert with one
rule against that VictoriaMetrics (``/health``, the rule group evaluated), the gateway's ``components``
and ``validate --config`` on a configuration that uses every component, and then the gateway itself for
a few seconds on that configuration: a scrape of a probe series with a ``user`` label through the
redaction processor into VictoriaMetrics, and a job-log line through ``file_log`` into VictoriaLogs over
OTLP/HTTP, the log queue and the file offsets in ``file_storage``. Every listening socket of the started
processes is printed (``ss``), to show that none binds beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from lab import versions
from lab.central import builds
from lab.egress.pseudonyms import pseudonym
from lab.paths import state_root
from lab.progress import Progress

LOOPBACK = "127.0.0.1"
KEY = "bench-central-builds-key-of-32-bytes-or-more"  # a throwaway HMAC key, at least 32 bytes
PROBE = 'lab_central_probe{user="alice",gpu="0"} 1\n'
JOB_LINE = "slurm job 4242 started on dgx-001 gpus=0-3"


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def get(url: str, timeout_s: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:  # loopback only
        return str(answer.read().decode())


def wait_for(url: str, deadline_s: float = 60.0) -> str:
    until = time.monotonic() + deadline_s
    while True:
        try:
            return get(url)
        except OSError:
            if time.monotonic() > until:
                raise
            time.sleep(0.5)


def poll(what: str, check: Callable[[], object], deadline_s: float = 90.0) -> str:
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        found = check()
        if found:
            return str(found)
        time.sleep(1.0)
    raise SystemExit(f"{what}: nothing within {deadline_s:.0f} s")


class Processes:
    """The processes this script starts: each stopped by its own pid at the end."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.started.append((name, process))
        say(f"started {name} (pid {process.pid}): {' '.join(argv)}")
        return process

    def listening(self) -> list[str]:
        table = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=False).stdout
        pids = {f"pid={p.pid}," for _, p in self.started}
        return [
            " ".join(line.split()[3:4] + line.split()[5:])
            for line in table.splitlines()
            if any(p in line for p in pids)
        ]

    def stop(self) -> None:
        for name, process in reversed(self.started):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            say(f"stopped {name} (pid {process.pid}, exit {process.returncode})")


def build(args: argparse.Namespace, scratch: Path) -> builds.CentralBinaries:
    root = scratch / "state" if args.fresh_state else state_root()
    if not args.fresh_state and any(builds.cache_dir(root).glob("*")):
        raise SystemExit(f"{builds.cache_dir(root)} already holds builds: --fresh-state measures from cold")
    if not args.warm_go_caches:
        os.environ["GOMODCACHE"] = str(scratch / "gomodcache")
        os.environ["GOCACHE"] = str(scratch / "gocache")
    go = builds.go_path()
    version = subprocess.run([go or "go", "version"], capture_output=True, text=True, check=False).stdout
    say(f"{version.strip()}; GOMODCACHE={os.environ.get('GOMODCACHE', '(the caller’s)')}; state root {root}")
    began = time.monotonic()
    built = builds.ensure(Progress(), root=root)
    total = time.monotonic() - began
    print("\n| build | seconds | binary | MiB |\n|---|---|---|---|")
    for name, path in built.binaries().items():
        size = path.stat().st_size / 2**20
        print(f"| {name} | {built.seconds.get(name, 0.0):.1f} | `{path.name}` | {size:.1f} |")
    print(f"| builder {versions.OTELCOL_CORE_VERSION} (tool) | {built.seconds.get('builder', 0.0):.1f} | | |")
    print(f"\nall builds: {total:.1f} s\n")
    return built


def gateway_config(scratch: Path, probe_port: int, vm_port: int, vl_port: int) -> Path:
    """A configuration that uses every component of the manifest (file_storage holds both queues)."""
    queue, logs = scratch / "queue", scratch / "joblogs"
    queue.mkdir()
    logs.mkdir()
    config = f"""
extensions:
  file_storage:
    directory: {queue}
receivers:
  prometheus:
    config:
      scrape_configs:
        - job_name: egress
          scrape_interval: 2s
          static_configs:
            - targets: ["{LOOPBACK}:{probe_port}"]
  file_log:
    include: [{logs}/*.log]
    start_at: beginning
    storage: file_storage
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 200
  redaction:
    allow_all_keys: true
    blocked_key_patterns: ["^user$"]
    hash_function: hmac-sha256
    hmac_key: ${{env:LAB_EGRESS_HMAC_KEY}}
    summary: silent
  batch:
    timeout: 1s
exporters:
  prometheus_remote_write:
    endpoint: http://{LOOPBACK}:{vm_port}/api/v1/write
  otlp_http:
    logs_endpoint: http://{LOOPBACK}:{vl_port}/insert/opentelemetry/v1/logs
    sending_queue:
      storage: file_storage
service:
  extensions: [file_storage]
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [prometheus]
      processors: [memory_limiter, redaction, batch]
      exporters: [prometheus_remote_write]
    logs:
      receivers: [file_log]
      processors: [memory_limiter, batch]
      exporters: [otlp_http]
"""
    path = scratch / "gateway.yaml"
    path.write_text(config, encoding="utf-8")
    return path


def serve_probe() -> tuple[http.server.HTTPServer, int]:
    class Probe(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PROBE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.HTTPServer((LOOPBACK, 0), Probe)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, int(server.server_address[1])


def version_line(metrics: str, family: str) -> str:
    return next((line for line in metrics.splitlines() if line.startswith(family)), f"(no {family})")


def run_once(built: builds.CentralBinaries, scratch: Path) -> None:
    processes = Processes(scratch)
    server, probe_port = serve_probe()
    try:
        vm_port, vl_port, alert_port = free_port(), free_port(), free_port()
        processes.start(
            "victoria-metrics",
            [
                str(built.victoria_metrics),
                f"-httpListenAddr={LOOPBACK}:{vm_port}",
                f"-storageDataPath={scratch / 'vm-data'}",
                "-search.latencyOffset=1s",
            ],
        )
        processes.start(
            "victoria-logs",
            [
                str(built.victoria_logs),
                f"-httpListenAddr={LOOPBACK}:{vl_port}",
                f"-storageDataPath={scratch / 'vl-data'}",
            ],
        )
        vm, vl = f"http://{LOOPBACK}:{vm_port}", f"http://{LOOPBACK}:{vl_port}"
        for name, url in (("victoria-metrics", vm), ("victoria-logs", vl)):
            health = wait_for(url + "/health").strip()
            say(f"{name} /health: {health}; {version_line(get(url + '/metrics'), 'vm_app_version')}")

        rules = scratch / "central.rules.yml"
        rules.write_text(
            "groups:\n  - name: bench\n    interval: 2s\n    rules:\n"
            "      - record: lab:central_probe:count\n        expr: count(lab_central_probe)\n",
            encoding="utf-8",
        )
        processes.start(
            "vmalert",
            [
                str(built.vmalert),
                f"-httpListenAddr={LOOPBACK}:{alert_port}",
                f"-rule={rules}",
                f"-datasource.url={vm}",
                f"-remoteWrite.url={vm}",
                "-notifier.blackhole",
            ],
        )
        alert = f"http://{LOOPBACK}:{alert_port}"
        say(f"vmalert /health: {wait_for(alert + '/health').strip()}")

        otelcol = str(built.otelcol)
        components = subprocess.run(
            [otelcol, "components"], capture_output=True, text=True, check=True
        ).stdout
        say(f"{otelcol} components:\n{components}")
        config = gateway_config(scratch, probe_port, vm_port, vl_port)
        env = {**os.environ, "LAB_EGRESS_HMAC_KEY": KEY}
        checked = subprocess.run(
            [otelcol, "validate", f"--config={config}"], capture_output=True, text=True, env=env, check=False
        )
        say(f"otelcol-lab validate --config: exit {checked.returncode} {checked.stderr.strip()[-400:]}")
        if checked.returncode != 0:
            raise SystemExit("the gateway's configuration did not validate")
        (scratch / "joblogs" / "job-4242.log").write_text(JOB_LINE + "\n", encoding="utf-8")
        processes.start("otelcol-lab", [otelcol, f"--config={config}"], env)

        hashed = pseudonym(KEY.encode(), "alice")
        query = urllib.parse.quote('lab_central_probe{user="' + hashed + '"}')
        found = poll(
            "the probe series with the user's pseudonym in VictoriaMetrics",
            lambda: json.loads(get(f"{vm}/api/v1/query?query={query}"))["data"]["result"],
        )
        say(f"VictoriaMetrics holds {found}")
        plain = json.loads(get(f"{vm}/api/v1/query?query=" + urllib.parse.quote('{user="alice"}')))
        say(f"series with user=alice in VictoriaMetrics: {len(plain['data']['result'])}")
        logsql = urllib.parse.quote('"job 4242"')
        line = poll(
            "the job-log line in VictoriaLogs",
            lambda: get(f"{vl}/select/logsql/query?query={logsql}").strip(),
        )
        say(f"VictoriaLogs holds {line}")
        recorded = poll(
            "vmalert's recording rule in VictoriaMetrics",
            lambda: json.loads(get(f"{vm}/api/v1/query?query=lab:central_probe:count"))["data"]["result"],
        )
        say(f"vmalert's rule: {recorded}")
        say("listening sockets of the started processes:\n  " + "\n  ".join(processes.listening()))
    finally:
        processes.stop()
        server.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--warm-go-caches", action="store_true", help="use the caller's Go caches")
    parser.add_argument("--fresh-state", action="store_true", help="a temporary state root, not the lab's")
    parser.add_argument("--keep-go-caches", action="store_true", help="leave the temporary Go caches")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-central-"))
    try:
        built = build(args, scratch)
        run_once(built, scratch)
    finally:
        if args.keep_go_caches:
            say(f"kept {scratch}")
        else:
            if not args.warm_go_caches and (go := builds.go_path()) is not None:
                # the module cache is read-only by design; Go's own command removes it
                subprocess.run([go, "clean", "-modcache"], check=False, env={**os.environ})
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
