"""Prometheus' web UI off the lab's critical path: `lab up` installs a cached build with the rest of the
prometheus role; without one it starts `lab web-ui` in the background before it provisions, which builds
the UI (npm, a few minutes) beside the bring-up and, once `lab up` lets go of the lab, installs it with
the role's own web UI tasks (``ansible/web-ui.yml``). Until then Prometheus serves Debian's page, and
`lab status` says the UI is being built.
"""

from __future__ import annotations

from pathlib import Path

from lab import versions
from lab.attach import detached
from lab.bringup.provision import amend_provisioned, private_dir, run_playbook
from lab.progress import Progress
from lab.prometheus_ui import build

PLAYBOOK = "web-ui.yml"
# The detached `lab web-ui`: prometheus-ui.pid, prometheus-ui.log; its line in the build's status file.
BACKGROUND = detached.BackgroundInstall("prometheus-ui", build.STATUS_FILE, "lab web-ui")


def status_file(lab: str) -> Path:
    return BACKGROUND.status_file(lab)


def for_bring_up(lab: str, progress: Progress) -> build.UiBuild | None:
    """The cached build, which the bring-up's prometheus role installs; None when there is none yet
    (then :func:`install_later` once the lab is up)."""
    hit = build.cached()
    if hit is not None:
        progress.say(f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION}: cached ({hit.tarball})")
        BACKGROUND.say(lab, f"{hit.how} → {hit.tarball}")
    return hit


def install_later(lab: str, source: Path | None, progress: Progress) -> int:
    """Start `lab web-ui` for ``lab`` in the background (unless it runs already); returns its pid.
    `lab up` starts it before it provisions, so npm runs beside Ansible; the install waits for the lab."""
    args = ["web-ui", "--lab", lab, *(["--source", str(source)] if source else [])]
    pid, line = BACKGROUND.launch(lab, args, "Debian's page until it is installed")
    progress.say(f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION}: {line}")
    return pid


def install(lab: str, source: Path | None, progress: Progress) -> build.UiBuild | None:
    """Build the UI (or take the cached build) and install it on the running lab's Prometheus host;
    None, with the reason in the status file, when it cannot be built (the lab keeps Debian's page).
    An Ansible failure is raised (:class:`~lab.bringup.provision.ProvisionError`)."""
    built = build.prepare(progress, source, status_file(lab))
    if built is None:
        return None
    with BACKGROUND.after_bring_up(lab, "web-ui", progress):
        private = private_dir(lab)
        hosts = private / "inventory" / "hosts.yml"
        if not hosts.is_file():
            raise FileNotFoundError(f"{hosts}: lab '{lab}' has no inventory. Fix: `lab up` first.")
        with progress.step("the web UI on the Prometheus host"):
            run_playbook(private, hosts, build.install_vars(built), progress, playbook=PLAYBOOK)
        # The role's web UI tasks are all that its tarball variable changes: the lab is now as a full
        # provisioning with it would leave it, and the next `lab up` need not run Ansible for it.
        amend_provisioned(private, build.install_vars(built))
    BACKGROUND.say(lab, f"{built.how} → {built.tarball} (installed)")
    return built


def facts(lab: str) -> dict[str, str]:
    """`lab status`'s web UI line, once a `lab up` wrote one."""
    line = BACKGROUND.status(lab)
    return {} if line is None else {"prometheus_ui": line}


def pending(lab: str) -> bool:
    """Whether the web UI is still being built or installed in the background."""
    return BACKGROUND.pending(lab)


def stop(lab: str) -> bool:
    """Stop a background build (`lab down`); True when one was running."""
    return BACKGROUND.cancel(lab)
