"""The aifactory_lab.gpu_observability collection: `ansible/collection/build.py` builds it from the lab's
roles, ansible-galaxy installs it, ansible-doc reads its argument specs, and an installed role runs
with no lab playbook directory, group_vars or roles path around it. The roles' argument specs, which
Ansible checks whenever a role runs, accept every inventory the lab writes.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tarfile
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from lab.blueprint import runai_blueprint
from lab.blueprint import slurm_blueprint as blueprint
from lab.bringup.render import inventory
from lab.kinds.runai_lab import inventory as runai_inventory
from lab.kinds.slurm_lab import HEALTH_CHECK_INTERVAL_S
from lab.paths import ANSIBLE_DIR, BLUEPRINTS_DIR, PROJECT_ROOT
from tests.unit.loopback import serving

BUILD = ANSIBLE_DIR / "collection" / "build.py"
COLLECTION = "aifactory_lab.gpu_observability"
ROLES = ("dcgm_job_mapping", "dcgm_health_check", "slurm_exporter", "prometheus", "daemon")
SCRIPTS = {
    "roles/dcgm_job_mapping/files/dcgm-job-mapping": PROJECT_ROOT / "prolog" / "dcgm-job-mapping",
    "roles/dcgm_health_check/files/dcgm-xid-check": PROJECT_ROOT / "healthcheck" / "dcgm-xid-check",
    "roles/prometheus/files/alert_receiver.py": PROJECT_ROOT / "lab" / "alert_receiver.py",
}
LAB_ONLY = (
    "dcgm_shim",
    "runai_control_plane",
    "slurm_common",
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurmrestd",
)
SLURM_CASES = [
    ("default.yaml", "container"),
    ("default.yaml", "systemd"),
    ("default.yaml", "real"),
    ("superpod.yaml", "container"),
]


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    assert result.returncode == 0, f"{argv[0]} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result.stdout


def _group_vars() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in sorted((ANSIBLE_DIR / "group_vars" / "all").glob("*.yml")):
        merged.update(yaml.safe_load(path.read_text()))
    return merged


def _defaults(role: str) -> dict[str, Any]:
    return yaml.safe_load((ANSIBLE_DIR / "roles" / role / "defaults" / "main.yml").read_text()) or {}


def _spec(role: str) -> dict[str, Any]:
    specs = yaml.safe_load((ANSIBLE_DIR / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"]["options"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    path = Path(_run([sys.executable, str(BUILD), "--out", str(out)]).strip())
    assert (
        path.is_file() and path.parent == out and path.name == "aifactory_lab-gpu_observability-0.1.0.tar.gz"
    )
    return path


@pytest.fixture(scope="module")
def standalone(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of an Ansible that knows only the installed collection: no lab ansible.cfg,
    no roles path, nothing from the repository."""
    root = tmp_path_factory.mktemp("ansible")
    (root / "ansible.cfg").write_text("[defaults]\n")
    _run(["ansible-galaxy", "collection", "install", str(tarball), "-p", str(root / "collections")])
    return {
        **{name: value for name, value in os.environ.items() if not name.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(root / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(root / "collections"),
        "ANSIBLE_ROLES_PATH": str(root / "no-roles"),
        "ANSIBLE_NOCOLOR": "1",
    }


def test_the_tarball_holds_the_deployable_roles_and_their_scripts(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        members = {member.name: member for member in archive.getmembers()}
        scripts = {name: archive.extractfile(name).read() for name in SCRIPTS}  # type: ignore[union-attr]
    roles = {name.split("/")[1] for name in members if name.startswith("roles/") and name.count("/") >= 1}
    assert roles == set(ROLES), f"roles in the tarball: {sorted(roles)}"
    assert not [name for name in members if any(f"roles/{role}" in name for role in LAB_ONLY)]
    assert not [name for name in members if "/molecule" in name]
    for role in ROLES:
        for part in (
            "tasks/main.yml",
            "defaults/main.yml",
            "meta/main.yml",
            "meta/argument_specs.yml",
            "README.md",
        ):
            assert f"roles/{role}/{part}" in members
    for name, source in SCRIPTS.items():
        assert scripts[name] == source.read_bytes(), f"{name} differs from {source}"
        assert members[name].mode & 0o755 == 0o755
    assert {"meta/runtime.yml", "README.md", "MANIFEST.json"} <= set(members)


def test_the_staged_defaults_are_the_roles_own_plus_what_they_read_from_group_vars(tarball: Path) -> None:
    group_vars = _group_vars()
    with tarfile.open(tarball) as archive:
        for role in ROLES:
            text = archive.extractfile(f"roles/{role}/defaults/main.yml").read().decode()  # type: ignore[union-attr]
            staged, own = yaml.safe_load(text), _defaults(role)
            assert "playbook_dir" not in text, (
                f"{role}: a default still points at the lab's playbook directory"
            )
            for name, value in own.items():
                if not name.endswith("_script_src"):
                    assert staged[name] == value, f"{role}: {name} changed"
            for name in set(staged) - set(own):
                if name == "lab_contract":
                    for part, values in staged[name].items():
                        assert values and values.items() <= group_vars[name][part].items(), f"{role}: {part}"
                else:
                    assert staged[name] == group_vars[name], f"{role}: {name} is not the group_vars value"


def test_the_argument_specs_document_every_default_of_the_staged_roles(tarball: Path) -> None:
    """Defaults as written, none where the role's own default is a Jinja expression; the values the
    build appends from group_vars count as defaults too."""
    with tarfile.open(tarball) as archive:
        for role in ROLES:
            member = archive.extractfile(f"roles/{role}/defaults/main.yml")
            staged, own, spec = yaml.safe_load(member.read()), _defaults(role), _spec(role)  # type: ignore[union-attr]
            assert not set(staged) - set(spec), f"{role}: argument_specs.yml lacks {set(staged) - set(spec)}"
            for name, value in {**staged, **own}.items():
                if "{{" in json.dumps(value) or "{%" in json.dumps(value):
                    assert "default" not in spec[name], f"{role}: {name} defaults to a Jinja expression"
                else:
                    assert spec[name].get("default") == value, f"{role}: {name} defaults to {value!r}"


@pytest.mark.parametrize("missing", ["healthcheck/dcgm-xid-check", "ansible/roles/prometheus"])
def test_a_missing_role_or_script_is_refused_by_name(tmp_path: Path, missing: str) -> None:
    for part in ("ansible/collection", "ansible/roles", "ansible/group_vars", "prolog", "healthcheck"):
        shutil.copytree(PROJECT_ROOT / part, tmp_path / part, symlinks=True)
    target = tmp_path / missing
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    result = subprocess.run(
        [sys.executable, str(tmp_path / "ansible/collection/build.py"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert f"is missing: {target}" in result.stderr
    assert not (tmp_path / "out").exists()


def test_ansible_doc_shows_the_installed_roles_variables(standalone: dict[str, str]) -> None:
    shown = _run(["ansible-doc", "-t", "role", f"{COLLECTION}.dcgm_job_mapping"], env=standalone)
    assert "dcgm_job_mapping_install_dir" in shown
    assert "/usr/local/libexec/dcgm-job-mapping" in shown


@pytest.mark.parametrize(
    ("mapping_dir", "node_names"),
    [
        pytest.param("mapping", [], id="one mapping directory"),
        pytest.param("mapping/%n", ["dgx-001", "dgx-002"], id="one directory per slurmd"),
    ],
)
def test_the_installed_job_mapping_role_runs_on_its_own(
    tmp_path: Path, standalone: dict[str, str], mapping_dir: str, node_names: list[str]
) -> None:
    """Check mode: the role's /etc files are fixed paths, so a real run would write outside tmp_path.
    The copy tasks still resolve their sources and render their content, and the play sees the
    defaults the build appended."""
    install = tmp_path / "install"
    playbook = tmp_path / "playbook.yml"
    play = {
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": {
            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "dcgm_job_mapping_install_dir": str(install),
            "dcgm_job_mapping_dir": str(tmp_path / mapping_dir),
            "dcgm_job_mapping_log": str(tmp_path / "log" / "dcgm-job-mapping.log"),
            "slurmd_node_names": node_names,
        },
        "roles": [f"{COLLECTION}.dcgm_job_mapping"],
        "tasks": [{"ansible.builtin.debug": {"msg": "{{ dcgm_job_mapping_slurm_config }}"}}],
    }
    playbook.write_text(yaml.safe_dump([play]))
    output = _run(
        ["ansible-playbook", "-i", "localhost,", "--check", "--diff", str(playbook)],
        env={**standalone, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"},
        cwd=tmp_path,
    )
    results = {
        task["task"]["name"].rpartition(" : ")[2]: task["hosts"]["localhost"]
        for task in json.loads(output)["plays"][0]["tasks"]
    }
    assert results["The mapping script is installed as Prolog and Epilog"]["changed"]
    config = results["The script's configuration"]["diff"][0]["after"]
    assert f"DCGM_HPC_JOB_MAPPING_DIR={tmp_path / mapping_dir}\n" in config
    boot = results["The mapping directories are emptied at every boot"]["diff"][0]["after"]
    expected = [str(tmp_path / mapping_dir).replace("%n", name) for name in node_names or [""]]
    assert [line.split()[1] for line in boot.splitlines() if line.startswith("D! ")] == expected
    assert results["ansible.builtin.debug"]["msg"] == {
        "Prolog": f"{install}/prolog/dcgm-job-mapping",
        "Epilog": f"{install}/epilog/dcgm-job-mapping",
        "PrologFlags": "Alloc",
    }
    assert not install.exists(), "check mode wrote the install directory"


def _check_run(
    tmp_path: Path, env: dict[str, str], roles: list[str], variables: dict[str, Any]
) -> list[tuple[str, str, dict[str, Any]]]:
    """The roles in check mode on localhost, with the json callback: per task, its name (role prefix
    dropped), the file and line it came from, and its result."""
    playbook = tmp_path / "playbook.yml"
    play = {
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}", **variables},
        "roles": [f"{COLLECTION}.{role}" for role in roles],
    }
    playbook.write_text(yaml.safe_dump([play]))
    output = _run(
        ["ansible-playbook", "-i", "localhost,", "--check", "--diff", str(playbook)],
        env={**env, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"},
        cwd=tmp_path,
    )
    return [
        (task["task"]["name"].rpartition(" : ")[2], task["task"]["path"], task["hosts"]["localhost"])
        for task in json.loads(output)["plays"][0]["tasks"]
    ]


def test_the_installed_node_roles_run_without_slurm_cluster(
    tmp_path: Path, standalone: dict[str, str]
) -> None:
    """No slurm_cluster, no dcgm_job_mapping_dir, no dcgm_health_check_url_map: the defaults stand on
    their own (a real node: one dcgm-exporter on 9400, the exporter's default mapping directory)."""
    tasks = _check_run(
        tmp_path,
        standalone,
        ["dcgm_job_mapping", "dcgm_health_check"],
        {
            "dcgm_job_mapping_install_dir": str(tmp_path / "install"),
            "dcgm_health_check_path": str(tmp_path / "check" / "dcgm-xid-check"),
        },
    )
    results = {name: result for name, _, result in tasks}
    mapping = results["The script's configuration"]["diff"][0]["after"]
    assert "DCGM_HPC_JOB_MAPPING_DIR=/var/lib/dcgm-exporter/job-mapping\n" in mapping
    boot = results["The mapping directories are emptied at every boot"]["diff"][0]["after"]
    assert "D! /var/lib/dcgm-exporter/job-mapping 0755 root root -\n" in boot
    check = results["The health check's configuration"]["diff"][0]["after"]
    assert "DCGM_EXPORTER_URL=http://127.0.0.1:9400/metrics\nDCGM_EXPORTER_URL_MAP=\n" in check


class _Ready(BaseHTTPRequestHandler):
    """Stands in for the daemon a role's readiness probe asks: 200 to any GET, each path recorded."""

    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:  # quiet
        pass


@pytest.mark.parametrize(
    ("role", "daemons", "probe", "variables"),
    [
        pytest.param(
            "slurm_exporter",
            ["slurm_exporter"],
            ("slurm_exporter", "/metrics"),
            {"slurm_exporter_binary_src": "exporter"},
            id="slurm_exporter",
        ),
        pytest.param(
            "prometheus",
            ["alert-receiver", "alertmanager", "prometheus"],
            ("prometheus", "/-/ready"),
            {
                "prometheus_install_package": False,
                "prometheus_cluster_label": "test",
                "prometheus_scrape_jobs": [
                    {"name": "node", "why": "A target.", "targets": [{"address": "n:9100"}]}
                ],
            },
            id="prometheus",
        ),
    ],
)
def test_the_installed_roles_start_their_daemon_through_the_collections_daemon_role(
    tmp_path: Path,
    standalone: dict[str, str],
    role: str,
    daemons: list[str],
    probe: tuple[str, str],
    variables: dict[str, Any],
) -> None:
    """`include_role: name: daemon` in an installed role resolves to the collection's own daemon role,
    with no roles path (the standalone environment points ANSIBLE_ROLES_PATH at an empty directory).
    Check mode, container mode: lab-daemon's raw task is reached (check mode skips raw) and the
    systemd task is skipped by its condition, so nothing starts on this machine.

    The role's readiness probe runs in check mode too (`check_mode: false`), so its port is a stub's
    ephemeral one: the contract port would reach a lab's daemon if one is up, and fail if none is."""
    port_name, ready_path = probe
    contract = copy.deepcopy(_group_vars()["lab_contract"])
    server = HTTPServer(("127.0.0.1", 0), _Ready)
    contract["ports"][port_name] = server.server_address[1]
    _Ready.paths = []
    (tmp_path / "exporter").write_bytes(b"")
    with serving(server):
        tasks = _check_run(
            tmp_path,
            standalone,
            [role],
            {"slurm_service_mode": "container", "lab_contract": contract, **variables},
        )
    assert _Ready.paths and set(_Ready.paths) == {ready_path}, _Ready.paths
    roles_dir = (
        Path(standalone["ANSIBLE_COLLECTIONS_PATH"])
        / "ansible_collections/aifactory_lab/gpu_observability/roles"
    )
    validations = [
        result["validate_args_context"]
        for _, _, result in tasks
        if result["action"] == "ansible.builtin.validate_argument_spec"
    ]
    assert [(v["name"], v["path"]) for v in validations] == [
        (role, str(roles_dir / role)),
        *[("daemon", str(roles_dir / "daemon"))] * len(daemons),
    ], "the included daemon role is not the installed collection's"
    included = [
        (result["action"], result)
        for _, path, result in tasks
        if path.startswith(f"{roles_dir / 'daemon' / 'tasks' / 'main.yml'}:")
    ]
    assert [action for action, _ in included] == [
        "ansible.builtin.raw",
        "ansible.builtin.systemd_service",
    ] * len(daemons), included
    for raw in [result for action, result in included if action == "ansible.builtin.raw"]:
        # lab-daemon's task is reached (its condition holds) and skipped because check mode skips raw.
        assert raw["skipped"]
        assert "false_condition" not in raw
    units = [result for action, result in included if action == "ansible.builtin.systemd_service"]
    assert [item["item"] for result in units for item in result["results"]] == daemons
    assert all("false_condition" in item for result in units for item in result["results"])


def _lab_cases() -> list[Any]:
    cases = [
        pytest.param(
            inventory(blueprint.load(BLUEPRINTS_DIR / name), hosts), ROLES, id=f"{Path(name).stem}-{hosts}"
        )
        for name, hosts in SLURM_CASES
    ]
    runai = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    return [*cases, pytest.param(runai_inventory(runai), ("prometheus", "daemon"), id="runai")]


@pytest.mark.parametrize(("document", "roles"), _lab_cases())
def test_the_argument_specs_accept_what_the_lab_passes(
    tmp_path: Path, document: dict[str, Any], roles: tuple[str, ...]
) -> None:
    """Group vars, role defaults, the inventory the lab writes and its extra vars, on a node host,
    through Ansible's own validate_argument_spec (as the role's implicit first task does)."""
    host, host_vars = next(
        iter(document["all"]["children"].get("slurmd", {"hosts": {"node": {}}})["hosts"].items())
    )
    variables: dict[str, Any] = {**_group_vars()}
    for role in roles:
        variables.update(_defaults(role))
    variables.update({**document["all"]["vars"], **host_vars})
    variables.update(
        dcgm_health_check_interval=HEALTH_CHECK_INTERVAL_S,
        slurm_exporter_binary_src=str(tmp_path / "slurm_exporter"),
        # What slurm_exporter and prometheus pass to the daemon role they include.
        daemon_names=["slurm_exporter", "prometheus"],
        daemon_state="started",
    )
    for name in ("ansible_connection", "ansible_host", "ansible_python_interpreter"):
        variables.pop(name, None)
    tasks = [
        {"name": role, "ansible.builtin.validate_argument_spec": {"argument_spec": _spec(role)}}
        for role in roles
    ]
    playbook = tmp_path / "validate.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": tasks}]))
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    _run(
        ["ansible-playbook", "-i", f"{host},", "-c", "local", "-e", f"@{extra}", str(playbook)],
        env={**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg")},
    )
