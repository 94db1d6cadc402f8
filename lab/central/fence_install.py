"""The fence off the lab's critical path: `lab up` installs the egress gateway and the centre with the
rest of the lab when their binaries are cached; without them it starts `lab egress install` in the
background before it provisions, which builds them beside the bring-up (the gateway's build is minutes
on a fresh machine: BENCHMARKS.md) and, once `lab up` lets go of the lab, runs the gateway's and the
centre's roles alone (``ansible/fence.yml``) on it.
Until then nothing crosses the fence, and `lab status` says the fence is being built.
"""

from __future__ import annotations

from typing import Any

from lab.attach import detached
from lab.bringup.provision import amend_provisioned, private_dir, run_playbook
from lab.central import builds
from lab.progress import Progress

PLAYBOOK = "fence.yml"
# The detached `lab egress install`: fence.pid, fence.log; its line in fence-status.
BACKGROUND = detached.BackgroundInstall("fence", "fence-status", "lab egress install")


def install_vars(built: builds.CentralBinaries | None) -> dict[str, Any]:
    """The binaries the egress_gateway and central_store roles copy in; none: the roles are skipped."""
    if built is None:
        return {}
    return {
        "egress_gateway_binary_src": str(built.otelcol),
        "central_store_victoria_metrics_src": str(built.victoria_metrics),
        "central_store_victoria_logs_src": str(built.victoria_logs),
        "central_store_vmalert_src": str(built.vmalert),
    }


def for_bring_up(lab: str, progress: Progress) -> builds.CentralBinaries | None:
    """The cached binaries, which the bring-up's roles install; None when one is not built yet (then
    :func:`install_later` once the lab is up)."""
    hit = builds.cached()
    if hit is not None:
        progress.say(f"the fence's binaries: cached ({hit.otelcol.parent.parent})")
        BACKGROUND.say(lab, "installed with the lab")
    return hit


def install_later(lab: str, progress: Progress) -> int:
    """Start `lab egress install` for ``lab`` in the background (unless it runs already); its pid.
    `lab up` starts it before it provisions, so Go builds beside Ansible; the install waits for the lab."""
    args = ["egress", "install", "--lab", lab]
    pid, line = BACKGROUND.launch(lab, args, "nothing crosses until it is installed")
    progress.say(f"the egress gateway and the centre: {line}")
    return pid


def install(lab: str, progress: Progress) -> builds.CentralBinaries:
    """Build the binaries (or take the cached ones) and install the gateway and the centre on the
    running lab. A build failure (:class:`~lab.central.builds.BuildError`) or an Ansible failure
    (:class:`~lab.bringup.provision.ProvisionError`) is raised, its reason kept for `lab status`."""
    private = private_dir(lab)
    hosts = private / "inventory" / "hosts.yml"
    try:
        built = builds.ensure(progress)
        with BACKGROUND.after_bring_up(lab, "egress install", progress):
            if not hosts.is_file():
                raise FileNotFoundError(f"{hosts}: lab '{lab}' has no inventory. Fix: `lab up` first.")
            with progress.step("the egress gateway and the centre"):
                run_playbook(private, hosts, install_vars(built), progress, playbook=PLAYBOOK)
            # The two roles are all that these variables change: the lab is now as a full provisioning
            # with them would leave it, and the next `lab up` need not run Ansible for them.
            amend_provisioned(private, install_vars(built))
    except Exception as error:
        BACKGROUND.say(lab, f"not installed: {str(error).splitlines()[0]} (`lab egress install` tries again)")
        raise
    BACKGROUND.say(lab, "installed")
    return built


def facts(lab: str) -> dict[str, str]:
    """`lab status`'s fence line, once a `lab up` wrote one."""
    line = BACKGROUND.status(lab)
    return {} if line is None else {"fence": line}


def pending(lab: str) -> bool:
    """Whether the fence is still being built or installed in the background."""
    return BACKGROUND.pending(lab)


def stop(lab: str) -> bool:
    """Stop a background build (`lab down`); True when one was running."""
    return BACKGROUND.cancel(lab)
