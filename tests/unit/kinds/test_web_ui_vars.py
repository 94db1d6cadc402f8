"""Both lab kinds hand Prometheus' web UI to the prometheus role the same way: the one variable
``prometheus_web_ui_archive_src`` naming the built tarball, and nothing when the build did not happen
(the role then leaves Debian's page alone)."""

from pathlib import Path

from lab.blueprint import runai_blueprint
from lab.blueprint.slurm_blueprint import load
from lab.bringup.keys import LabKeys
from lab.kinds import runai_lab, slurm_lab
from lab.paths import BLUEPRINTS_DIR, DEFAULT_BLUEPRINT
from lab.prometheus_ui import build

KEYS = LabKeys(Path("/k/munge.key"), Path("/k/jwt.key"), Path("/k/db.pass"))
WEB_UI = build.UiBuild(Path("/cache/prometheus-web-ui-2.53.3.tar.gz"), "built", {})
INSTALL = {"prometheus_web_ui_archive_src": "/cache/prometheus-web-ui-2.53.3.tar.gz"}


def test_a_slurm_lab_installs_the_built_web_ui() -> None:
    rendered = slurm_lab.render(load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, None, web_ui=WEB_UI)
    assert {key: rendered.extravars[key] for key in INSTALL} == INSTALL


def test_a_runai_lab_installs_the_built_web_ui_with_the_same_variable() -> None:
    path = BLUEPRINTS_DIR / "runai.yaml"
    variables = runai_lab.extravars(runai_blueprint.load(path), path, runai_lab.RunaiUpOptions(), WEB_UI)
    assert {key: variables[key] for key in INSTALL} == INSTALL


def test_without_a_build_neither_kind_names_a_web_ui() -> None:
    rendered = slurm_lab.render(load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, None)
    path = BLUEPRINTS_DIR / "runai.yaml"
    variables = runai_lab.extravars(runai_blueprint.load(path), path, runai_lab.RunaiUpOptions(), None)
    assert build.INSTALL_VAR not in rendered.extravars and build.INSTALL_VAR not in variables
