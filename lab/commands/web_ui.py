"""`lab web-ui`: Prometheus' web UI built (once, cached) and installed into a running lab."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lab import versions
from lab.attach import running
from lab.bringup import engine
from lab.bringup.provision import ProvisionError
from lab.commands.options import KNOWN_ERRORS, LabOption, fail
from lab.progress import Progress
from lab.prometheus_ui import install

app = typer.Typer(rich_markup_mode="markdown")


@app.command("web-ui")
def web_ui(
    lab: LabOption = None,
    source: Annotated[
        Path | None,
        typer.Option(
            help="The tag's web/ui archive (default: $LAB_PROMETHEUS_UI_SOURCE, else "
            "../shared/vendor/prometheus-web-ui-2.53.3.tar.gz); its sha256 must match lab/versions.py."
        ),
    ] = None,
) -> None:
    """Build Prometheus' React web UI from the pinned tag (npm, a few minutes, once; then cached) and
    install it on the running lab's Prometheus host, as Debian's install-ui.sh installs a release's.

    `lab up` runs this in the background when no build is cached, so the lab does not wait for npm;
    `lab status` says how far it is. Run it yourself to retry after a failed build.
    """
    progress = Progress()
    try:
        # Named: `lab up` starts this before its engine and containers are up (the build needs neither).
        name = lab if lab is not None else running.resolve_lab(engine.require_engine(), None)
        built = install.install(name, source, progress)
    except (*KNOWN_ERRORS, ProvisionError, FileNotFoundError) as error:
        fail(error)
    if built is None:
        fail(RuntimeError(f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION}: not built; see above."))
    typer.echo(
        f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION} installed on lab '{name}' ({built.tarball})"
    )
