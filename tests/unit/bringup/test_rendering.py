"""slurm.conf, gres.conf, cgroup.conf and slurmdbd.conf rendered by Ansible itself from the
inventory `lab` writes, for the lab's containers and for real hosts over SSH, against golden files.

Regenerate the golden files after an intended change with: UPDATE_GOLDEN=1 pytest tests/unit/test_rendering.py
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.blueprint import slurm_blueprint as blueprint
from lab.bringup.keys import LabKeys
from lab.bringup.provision import key_vars
from lab.bringup.render import inventory
from lab.paths import ANSIBLE_DIR, BLUEPRINTS_DIR

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "rendered"
TEMPLATES = {
    "slurm.conf": "slurm_common",
    "gres.conf": "slurm_common",
    "cgroup.conf": "slurm_common",
    "slurmdbd.conf": "slurmdbd",
    "prometheus.yml": "prometheus",
    "alertmanager.yml": "prometheus",
}
CASES = [
    ("default.yaml", "container"),
    ("default.yaml", "systemd"),
    ("default.yaml", "real"),
    ("superpod.yaml", "container"),
]


def _role_defaults() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for group_vars in sorted((ANSIBLE_DIR / "group_vars" / "all").glob("*.yml")):
        merged.update(yaml.safe_load(group_vars.read_text()))
    for role in sorted({*TEMPLATES.values()}):
        defaults = ANSIBLE_DIR / "roles" / role / "defaults" / "main.yml"
        merged.update(yaml.safe_load(defaults.read_text()) or {})
    return merged


def _render_with_ansible(variables: dict[str, Any], out: Path) -> None:
    tasks = [
        {
            "name": name,
            "ansible.builtin.template": {
                "src": str(ANSIBLE_DIR / "roles" / role / "templates" / f"{name}.j2"),
                "dest": str(out / name),
            },
        }
        for name, role in TEMPLATES.items()
    ]
    playbook = out / "render.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    extra = out / "vars.json"
    extra.write_text(json.dumps(variables))
    result = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", f"@{extra}", str(playbook)],
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg")},
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.parametrize(("blueprint_name", "hosts"), CASES)
def test_configs_render_as_golden(tmp_path: Path, blueprint_name: str, hosts: str) -> None:
    model = blueprint.load(BLUEPRINTS_DIR / blueprint_name)
    fake_keys = LabKeys(tmp_path / "munge.key", tmp_path / "jwt.key", tmp_path / "db.pass")
    variables = {
        **_role_defaults(),
        **inventory(model, hosts)["all"]["vars"],  # type: ignore[arg-type]
        **key_vars(fake_keys),
        "slurmdbd_storage_pass": "golden-test-password",
    }
    variables.pop("ansible_connection", None)
    variables.pop("ansible_python_interpreter", None)
    _render_with_ansible(variables, tmp_path)
    golden = GOLDEN / f"{Path(blueprint_name).stem}-{hosts}"
    for name in TEMPLATES:
        rendered = (tmp_path / name).read_text()
        if os.environ.get("UPDATE_GOLDEN"):
            golden.mkdir(parents=True, exist_ok=True)
            (golden / name).write_text(rendered)
        assert rendered == (golden / name).read_text(), f"{golden / name} differs"


def test_golden_directories_match_the_cases() -> None:
    """An empty or stale golden directory must never pass silently."""
    expected = {f"{Path(b).stem}-{c}" for b, c in CASES}
    assert {p.name for p in GOLDEN.iterdir() if p.is_dir()} == expected
    for directory in GOLDEN.iterdir():
        assert sorted(p.name for p in directory.iterdir()) == sorted(TEMPLATES)


def test_ssh_inventory_passes_the_playbook_syntax_check(tmp_path: Path) -> None:
    model = blueprint.load(BLUEPRINTS_DIR / "default.yaml")
    data = inventory(model, "real")
    data["all"]["vars"].update(key_vars(LabKeys(tmp_path / "m", tmp_path / "j", tmp_path / "p")))
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump(data))
    result = subprocess.run(
        ["ansible-playbook", "--syntax-check", "-i", str(hosts), str(ANSIBLE_DIR / "site.yml")],
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg")},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    listed = subprocess.run(
        ["ansible-inventory", "-i", str(hosts), "--list"], capture_output=True, text=True, check=True
    )
    groups = json.loads(listed.stdout)
    assert sorted(groups["slurmd"]["hosts"]) == model.nodes.names
    assert groups["_meta"]["hostvars"]["dgx-001"]["ansible_host"] == "dgx-001"
    assert "ansible_connection" not in groups["_meta"]["hostvars"]["dgx-001"]
