"""`lab egress names`, `lab egress reveal` and `lab egress rotate-key`: the site's side of the fence, the
names a lab's egress pseudonymises, the real name behind a pseudonym, and the lab's key."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lab import kinds
from lab.attach import running
from lab.bringup import engine
from lab.bringup.provision import ProvisionError
from lab.central import fence_install
from lab.central.builds import BuildError
from lab.commands.options import KNOWN_ERRORS, LabOption, fail
from lab.egress import gateway
from lab.egress import key as egress_key
from lab.egress import names as egress_names
from lab.egress.pseudonyms import HASH_FUNCTION, PSEUDONYM_CHARS, keyed, normalised
from lab.egress.reveal import reveal
from lab.progress import Progress

app = typer.Typer(
    help=(
        "Across the fence: what a site sends to a central store carries no job id as a label and no real "
        "name.\n\n"
        "- **Pseudonymised**: every value of the labels in the blueprint's `egress.pseudonymised_labels` "
        "(by default Slurm users and accounts; Run:ai projects, departments, queues, users, workloads, "
        "namespaces and pods) is replaced by the lower-case hex HMAC-SHA256 of the value under the "
        "lab's key, as the OpenTelemetry Collector's redactionprocessor (`hash_function: hmac-sha256`) "
        "makes it. Node names, GPU indices and UUIDs, partitions and node pools cross as they are.\n"
        "- **The key**: `.lab/LAB/keys/egress/hmac-sha256.key`, mode 0400, never in git or an image; it "
        "and the names never leave the site. `lab egress reveal` turns a pseudonym back into its name "
        "here; `lab egress names` lists the names and their labels.\n"
        "- **Rotation**: `lab egress rotate-key` writes a new key and restarts the lab's gateway with it; "
        "every pseudonym changes from that instant, and those made before it can no longer be revealed.\n"
        "- **The fence in a lab**: `lab up` runs the site's egress gateway (container `egress`, an "
        "OpenTelemetry Collector) and the centre beyond it (container `central`: VictoriaMetrics on "
        "127.0.0.1:8428, VictoriaLogs on 127.0.0.1:9428, vmalert's central alerts on 127.0.0.1:8880). "
        "Only the egress records cross as series "
        "(`ansible/roles/prometheus/files/rules/egress-*.yml`: per GPU, partition, node, account and "
        "cluster, no job id); query them where they land, e.g. "
        "`curl 'http://127.0.0.1:8428/api/v1/query?query=account:slurm_account_gpus_running:sum'`. "
        "Job ids cross in the job log only (the Prolog's and Epilog's lines, slurmctld's job lines: "
        "signals/logs.md), the central walks in docs/journeys.md. A Run:ai lab's centre is 100 ports up "
        "(8528, 9528, 8980): its records per GPU, project and department, and its Kubernetes events and "
        "KAI's lines that name workloads, every name in their text a pseudonym. "
        "A blueprint with `egress: {enabled: false}` runs neither.\n\n"
        "The lab: `--lab NAME` (its recorded blueprint; default: the only lab that is up), or "
        "`--blueprint FILE` for a lab that is down."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

EgressBlueprintOption = Annotated[
    Path | None,
    typer.Option(
        "--blueprint",
        "-b",
        help="Blueprint YAML of the lab (for a lab that is down); default: the lab's own.",
    ),
]
_ERRORS = (*KNOWN_ERRORS, egress_key.EgressKeyError)


def _load(lab: str | None, blueprint: Path | None) -> egress_names.EgressNames:
    """The lab's egress names: from ``blueprint``, else from the named (or only) lab's recorded one."""
    if blueprint is not None:
        model = kinds.load(blueprint).model
        if lab is not None and lab != model.name:
            raise running.LabError(
                f"{blueprint} is lab '{model.name}', not '{lab}'. "
                "Fix: drop --lab, or name that lab's blueprint."
            )
    else:
        name = lab if lab is not None else running.resolve_lab(engine.require_engine(), None)
        model = kinds.load(running.recorded_blueprint(name)).model
    return egress_names.of_blueprint(model)


@app.command("names")
def egress_names_command(
    lab: LabOption = None,
    blueprint: EgressBlueprintOption = None,
    pseudonyms: Annotated[
        bool, typer.Option("--pseudonyms", help="Also print each fixed name's pseudonym under the lab's key.")
    ] = False,
) -> None:
    """The names the lab's egress pseudonymises, the labels that carry them, and where they come from.

    Fixed names are the blueprint's (and the few the lab always has: Slurm's root and its daemons' users,
    Kubernetes' own namespaces). Workloads and pods are made at run time; their patterns are listed, and
    `lab egress reveal` tries their numbers up to a bound. A Job's pod ends in five random characters:
    its pseudonym is not revealed, its workload is (`created_by_name` of `kube_pod_info`).
    """
    try:
        found = _load(lab, blueprint)
        of = keyed(egress_key.load(found.lab)) if pseudonyms and found.enabled else None
    except _ERRORS as error:
        fail(error)
    kind = {"slurm": "Slurm", "runai": "Run:ai"}[found.kind]
    if not found.enabled:
        typer.echo(f"lab '{found.lab}' ({kind}): egress is off (egress.enabled: false): it sends nothing.")
        return
    typer.echo(f"lab '{found.lab}' ({kind}): pseudonymised labels: {', '.join(found.labels)}")
    path = egress_key.key_path(found.lab)
    typer.echo(f"key: {path}" + ("" if path.exists() else " (none yet: `lab egress rotate-key` makes it)"))
    rows = [(n.value, ", ".join(n.labels), "; ".join(n.sources)) for n in found.fixed]
    width = max([len(row[0]) for row in rows] + [4])
    label_width = max([len(row[1]) for row in rows] + [6])
    typer.echo("")
    typer.echo(f"{'NAME':<{width}}  {'LABELS':<{label_width}}  FROM" + ("  PSEUDONYM" if of else ""))
    for value, labels, sources in rows:
        line = f"{value:<{width}}  {labels:<{label_width}}  {sources}"
        typer.echo(line + (f"  {of(value)}" if of else ""))
    if found.run_time:
        typer.echo("\nmade at run time (not listed one by one):")
        for made in found.run_time:
            how = "revealed by number" if made.revealable else "not revealed: random suffix"
            typer.echo(f"  {made.pattern}  {', '.join(made.labels)}  {made.source}; {how}")


@app.command("reveal")
def egress_reveal(
    pseudonym: Annotated[
        str, typer.Argument(help=f"A label value that crossed the fence: {PSEUDONYM_CHARS} hex digits.")
    ],
    lab: LabOption = None,
    blueprint: EgressBlueprintOption = None,
    up_to: Annotated[
        int,
        typer.Option(
            "--workloads-up-to",
            min=0,
            help="Workload numbers tried for names made at run time (NNNNN of train-NNNNN).",
        ),
    ] = egress_names.DEFAULT_WORKLOADS_UP_TO,
) -> None:
    """The real name behind a pseudonym: the keyed hash recomputed over the lab's names.

    Prints the name (and, on stderr, the labels that carry it). Exit 1 when none matches: a pseudonym
    made with another key (the key was rotated since), a value that is not one of the lab's names, or a
    workload numbered past --workloads-up-to.
    """
    wanted = normalised(pseudonym)
    if wanted is None:
        fail(
            f"{pseudonym!r} is not an {HASH_FUNCTION} pseudonym: those are {PSEUDONYM_CHARS} hex digits "
            "(lower case, no prefix). Fix: copy the whole label value."
        )
    try:
        found = _load(lab, blueprint)
        if not found.enabled:
            fail(f"lab '{found.lab}' has egress off (egress.enabled: false): it pseudonymises nothing.")
        search = reveal(egress_key.load(found.lab), wanted, found, up_to)
    except _ERRORS as error:
        fail(error)
    if search.found is None:
        fail(
            f"no name of lab '{found.lab}' has the pseudonym {wanted} under its key "
            f"({search.fixed_tried} fixed names and {search.run_time_tried} made at run time tried, "
            f"workloads numbered up to {up_to}). It was made with another key (a key rotated since: "
            "`lab egress rotate-key` makes every earlier pseudonym unrevealable), or it is not a name "
            "of this lab (a Job's pod name ends in random characters: reveal its `created_by_name`), or "
            "its workload is numbered higher (--workloads-up-to)."
        )
    typer.echo(search.found.value)
    typer.echo(f"labels: {', '.join(search.found.labels)}; from {'; '.join(search.found.sources)}", err=True)


@app.command("install")
def egress_install(lab: LabOption = None) -> None:
    """Build the egress gateway and the centre (once, cached; minutes on a fresh machine) and install
    both into the running lab: the site's gateway (container `egress`) starts sending the egress records.

    `lab up` runs this in the background when their binaries are not cached yet, so the lab does not
    wait for the builds; `lab status` says how far it is. Run it yourself to retry after a failure.
    """
    progress = Progress()
    try:
        # Named: `lab up` starts this before its engine and containers are up (the builds need neither).
        name = lab if lab is not None else running.resolve_lab(engine.require_engine(), None)
        built = fence_install.install(name, progress)
    except (*KNOWN_ERRORS, ProvisionError, BuildError, FileNotFoundError) as error:
        fail(error)
    typer.echo(
        f"lab '{name}': the egress gateway and the centre are installed ({built.otelcol.parent.parent})"
    )


@app.command("rotate-key")
def egress_rotate_key(
    lab: LabOption = None,
    blueprint: EgressBlueprintOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Rotate without asking.")] = False,
) -> None:
    """Write a new egress key for the lab (atomically, mode 0400); the first one too.

    Every pseudonym changes from that instant: series already sent keep the old pseudonyms, and the old
    key is not kept, so those can no longer be revealed.
    """
    try:
        name = _load(lab, blueprint).lab
    except _ERRORS as error:
        fail(error)
    path = egress_key.key_path(name)
    if path.exists() and not yes:
        typer.confirm(
            f"Replace lab '{name}''s egress key? Every pseudonym changes from then on, and those made with "
            "the old key can no longer be revealed",
            abort=True,
        )
    try:
        egress_key.rotate(name)
    except OSError as error:
        fail(f"{path}: cannot write the egress key: {error.strerror}.")
    typer.echo(
        f"lab '{name}': new egress key {path} (mode 0400). Every pseudonym made with it changes from this "
        "instant; pseudonyms made before can no longer be revealed."
    )
    try:
        restarted = gateway.restart(name)
    except gateway.GatewayError as error:
        fail(f"{error}\nThe new key is in place; the gateway still sends with the old one until it restarts.")
    if restarted:
        typer.echo(f"lab '{name}': the egress gateway restarted with the new key.")
