#!/usr/bin/env python3
"""Build the aifactory_lab.gpu_observability Ansible collection from the lab's roles.

    python3 ansible/collection/build.py --out DIR

Stages galaxy.yml, README.md and meta/runtime.yml from this directory and a copy of each deployable
role from ansible/roles/ (without molecule/) in a temporary directory, makes each staged role work
outside the lab's playbook, runs `ansible-galaxy collection build` and prints the tarball's path:

- the script a role copies from the repository (its `*_script_src` default names
  `{{ playbook_dir }}/../prolog/...`) goes into the role's files/, and the default names it there;
- the variables a role reads from ansible/group_vars/all/ are appended to its defaults/main.yml,
  contract.yml's `lab_contract` cut down to the keys the role uses.

Only the staged copies change; ansible/roles/ is read, never written. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

COLLECTION_DIR = Path(__file__).resolve().parent
ANSIBLE_DIR = COLLECTION_DIR.parent
# daemon: the one role that starts and restarts every role's daemons (systemd or the lab's lab-daemon).
ROLES = ("dcgm_job_mapping", "dcgm_health_check", "slurm_exporter", "prometheus", "daemon")
# The default that names a script outside the role, per role.
SCRIPT_DEFAULTS = {
    "dcgm_job_mapping": "dcgm_job_mapping_script_src",
    "dcgm_health_check": "dcgm_health_check_script_src",
    "prometheus": "prometheus_alert_receiver_script_src",
}
COLLECTION_FILES = ("galaxy.yml", "README.md", "meta/runtime.yml")
# Where a role's variable references live (files/ holds scripts, meta/ and README.md only prose).
SCANNED_DIRS = ("defaults", "vars", "tasks", "handlers", "templates")
TOP_LEVEL_KEY = re.compile(r"^([A-Za-z_]\w*):")


class BuildError(Exception):
    """The collection cannot be built; the message names the file."""


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise BuildError(f"{what} is missing: {path}")
    return path


def group_vars(directory: Path) -> dict[str, str | Any]:
    """Every top-level variable of group_vars/all/*.yml: the YAML text of its entry (its comments stay
    behind: they often speak of several entries), or the parsed value for a file that is JSON under its
    comment lines (contract.yml)."""
    found: dict[str, str | Any] = {}
    for path in sorted(directory.glob("*.yml")):
        text = path.read_text()
        body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        try:
            found.update(json.loads(body))
            continue
        except json.JSONDecodeError:
            pass
        name, block = None, []
        for line in [*text.splitlines(), ""]:
            if name and line[:1].isspace() and line.strip():
                block.append(line)
                continue
            if name:
                found[name] = "\n".join(block)
            key = TOP_LEVEL_KEY.match(line)
            name, block = (key.group(1), [line]) if key else (None, [])
    return found


def _subset(value: Any, text: str, name: str) -> Any:
    """The part of a JSON-sourced variable that `text` reads as `name.a.b`; all of it if read bare."""
    paths = re.findall(rf"\b{name}\b((?:\.\w+)*)", text)
    if "" in paths:
        return value
    picked: dict[str, Any] = {}
    for path in sorted(set(paths)):
        source, target = value, picked
        *parents, leaf = path.lstrip(".").split(".")
        try:
            for key in parents:
                source, target = source[key], target.setdefault(key, {})
            target[leaf] = source[leaf]
        except KeyError:
            raise BuildError(
                f"a role reads {name}{path}, which ansible/group_vars/all does not define"
            ) from None
    return picked


def outside_defaults(role_dir: Path, available: dict[str, str | Any]) -> dict[str, str]:
    """The group_vars entries the role reads and does not define, as YAML lines to append, in
    group_vars order. An appended entry can read further group_vars (a *_slurm_config dict)."""
    own = {
        m.group(1)
        for line in (role_dir / "defaults/main.yml").read_text().splitlines()
        if (m := TOP_LEVEL_KEY.match(line))
    }
    text = "\n".join(
        path.read_text() for d in SCANNED_DIRS for path in sorted((role_dir / d).rglob("*")) if path.is_file()
    )
    needed: dict[str, str | Any] = {}
    while True:
        seen = text + "\n".join(v for v in needed.values() if isinstance(v, str))
        new = {
            name: value
            for name, value in available.items()
            if name not in own and name not in needed and re.search(rf"\b{name}\b", seen)
        }
        if not new:
            break
        needed.update(new)
    return {
        name: value if isinstance(value, str) else f"{name}: {json.dumps(_subset(value, seen, name))}"
        for name, value in available.items()
        if name in needed
    }


def stage_role(role: str, staging: Path, available: dict[str, str | Any]) -> list[str]:
    """Copies one role into staging/roles/ and makes it standalone; returns the appended names."""
    source = _require(ANSIBLE_DIR / "roles" / role, f"role {role}")
    defaults_file = _require(source / "defaults/main.yml", f"the defaults of role {role}")
    target = staging / "roles" / role
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("molecule", "__pycache__", "*.pyc"))
    defaults = defaults_file.read_text()
    if variable := SCRIPT_DEFAULTS.get(role):
        line = re.search(rf'^{variable}: "\{{\{{ playbook_dir \}}\}}/(.+)"$', defaults, re.MULTILINE)
        if not line:
            raise BuildError(
                f'{defaults_file}: no line `{variable}: "{{{{ playbook_dir }}}}/..."` to rewrite'
            )
        script = _require((ANSIBLE_DIR / line.group(1)).resolve(), f"the script of role {role}")
        (target / "files").mkdir(exist_ok=True)
        shutil.copy2(script, target / "files" / script.name)
        # A relative copy src in a role resolves to the role's files/.
        defaults = defaults.replace(line.group(0), f"{variable}: {script.name}")
    appended = outside_defaults(source, available)
    if appended:
        defaults = defaults.rstrip("\n") + (
            "\n\n# Appended by ansible/collection/build.py: what the role reads from the lab's"
            " ansible/group_vars/all,\n# so that it works without the lab's playbook.\n"
            + "\n".join(appended.values())
            + "\n"
        )
    (target / "defaults/main.yml").write_text(defaults)
    return list(appended)


def _galaxy_field(galaxy: str, field: str) -> str:
    match = re.search(rf"^{field}:\s*(\S+)", galaxy, re.MULTILINE)
    if not match:
        raise BuildError(f"{COLLECTION_DIR / 'galaxy.yml'}: no `{field}:`")
    return match.group(1)


def build(out: Path) -> Path:
    """Stages the collection and builds its tarball in `out`; returns the tarball's path."""
    for name in COLLECTION_FILES:
        _require(COLLECTION_DIR / name, "a collection file")
    available = group_vars(_require(ANSIBLE_DIR / "group_vars/all", "the lab's group_vars"))
    galaxy_cli = shutil.which("ansible-galaxy")
    if galaxy_cli is None:
        raise BuildError("ansible-galaxy is not on PATH (pip install ansible-core)")
    with tempfile.TemporaryDirectory(prefix="gpu_observability-") as temporary:
        staging = Path(temporary)
        for name in COLLECTION_FILES:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(COLLECTION_DIR / name, staging / name)
        for role in ROLES:
            appended = stage_role(role, staging, available)
            print(f"{role}: defaults from group_vars: {', '.join(appended) or 'none'}", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [galaxy_cli, "collection", "build", str(staging), "--output-path", str(out), "--force"],
            check=True,
            stdout=sys.stderr,
        )
    galaxy = (COLLECTION_DIR / "galaxy.yml").read_text()
    fields = (_galaxy_field(galaxy, field) for field in ("namespace", "name", "version"))
    return out / "{}-{}-{}.tar.gz".format(*fields)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the tarball goes")
    args = parser.parse_args(argv)
    try:
        tarball = build(args.out.resolve())
    except BuildError as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    except subprocess.CalledProcessError as error:
        parser.exit(
            1, f"{parser.prog}: error: ansible-galaxy collection build failed (exit {error.returncode})\n"
        )
    print(tarball)
    return 0


if __name__ == "__main__":
    sys.exit(main())
