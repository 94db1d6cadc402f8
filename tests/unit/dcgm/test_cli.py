"""CLI: upstream flag names and environment variables, lab-only flags, clear input errors."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lab.dcgm.cli import UsageError, build_nodes, build_parser, node_configs, run
from lab.dcgm.job_classes import JobClassesError


def configs(argv: list[str], env: dict[str, str] | None = None) -> list:  # type: ignore[type-arg]
    environment = env or {}
    return node_configs(build_parser(environment).parse_args(argv), environment)


def test_defaults_match_upstream() -> None:
    args = build_parser({}).parse_args([])
    assert (args.address, args.collectors, args.hpc_job_mapping_dir, args.kubernetes) == (
        ":9400",
        None,
        "",
        False,
    )
    assert args.gpus == 8


def test_environment_variables_have_upstream_names() -> None:
    env = {
        "DCGM_EXPORTER_LISTEN": "127.0.0.1:9555",
        "DCGM_EXPORTER_COLLECTORS": "/etc/dcgm-exporter/default-counters.csv",
        "DCGM_HPC_JOB_MAPPING_DIR": "/var/lib/dcgm-exporter/job-mapping",
        "DCGM_EXPORTER_KUBERNETES": "true",
        "NODE_NAME": "gpu-node-042",
    }
    (config,) = configs([], env)
    assert config.address == "127.0.0.1:9555"
    assert str(config.mapping_dir) == "/var/lib/dcgm-exporter/job-mapping"
    assert config.kubernetes is True
    assert config.name == config.hostname == "gpu-node-042"
    assert str(build_parser(env).parse_args([]).collectors) == env["DCGM_EXPORTER_COLLECTORS"]


def test_a_flag_beats_its_environment_variable() -> None:
    (config,) = configs(["-a", ":9401"], {"DCGM_EXPORTER_LISTEN": ":9555"})
    assert config.address == ":9401"


def test_short_flags_are_upstreams() -> None:
    args = build_parser({}).parse_args(["-a", ":1", "-f", "x.csv", "-k", "-n"])
    assert (args.address, str(args.collectors), args.kubernetes, args.no_hostname) == (
        ":1",
        "x.csv",
        True,
        True,
    )


def test_node_flags_expand_percent_n_and_keep_their_addresses() -> None:
    a, b = configs(
        [
            "--node",
            "gpu-a:127.0.0.1:9401",
            "--node",
            "gpu-b:[::1]:9402",
            "--hpc-job-mapping-dir",
            "/run/job-mapping/%n",
        ]
    )
    assert (a.name, a.address, str(a.mapping_dir)) == ("gpu-a", "127.0.0.1:9401", "/run/job-mapping/gpu-a")
    assert (b.name, b.address, str(b.mapping_dir)) == ("gpu-b", "[::1]:9402", "/run/job-mapping/gpu-b")


def test_no_hostname_is_accepted_and_ignored_as_by_the_tag() -> None:
    """app.go@4.5.3-4.8.2 parses -n into Config.NoHostname, which nothing reads since 4.0.0."""
    (config,) = configs(["-n", "--node", "gpu-a"])
    assert (config.name, config.hostname, config.address) == ("gpu-a", "gpu-a", ":9400")


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--node", "a:127.0.0.1:1", "--node", "a:127.0.0.1:2"], {}, "unique"),
        (["--node", "a", "--node", "b:127.0.0.1:2"], {}, "needs its address"),
        (["--node", ":127.0.0.1:2"], {}, "NAME is empty"),
        (["-a", "9400"], {}, "must be <HOST>:<PORT>"),
        (["--gpus", "0"], {}, "at least one GPU"),
        (["--pod-resources", "p.json"], {}, "needs -k/--kubernetes"),
    ],
    ids=["duplicate node", "address missing", "empty name", "bad address", "no gpus", "pods without -k"],
)
def test_bad_flags_are_named_with_their_fix(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        configs(argv, env)


def test_a_bad_boolean_variable_is_named() -> None:
    with pytest.raises(UsageError, match="DCGM_EXPORTER_KUBERNETES='maybe'"):
        build_parser({"DCGM_EXPORTER_KUBERNETES": "maybe"})


def test_job_classes_file_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "classes.json"
    path.write_text(json.dumps({"4711": "gaming"}))
    with pytest.raises(JobClassesError, match="'4711' has class 'gaming'; use one of training"):
        build_nodes(["--job-classes", str(path)], env={})


def test_run_returns_2_on_bad_input_without_serving(tmp_path: Path) -> None:
    stop = threading.Event()
    assert run(["-f", str(tmp_path / "missing.csv")], {}, stop) == 2


def test_module_entry_point_prints_help_with_lab_only_flags_marked() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lab.dcgm", "--help"], capture_output=True, text=True, check=True, timeout=60
    )
    assert "--hpc-job-mapping-dir" in result.stdout
    assert "lab-only flags (not in dcgm-exporter)" in result.stdout
    assert "LAB: emulate node NAME" in result.stdout
