"""Images: a Debian base (debootstrap + import, or a registry image), then slurm-common, then one
image per role. Each image is tagged with the lab version and labelled with a hash of its inputs,
so a build runs only when a Dockerfile, a context file, the CA bundle or a pin changed.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, ImageNotFound

from lab import contract, versions
from lab.bringup.engine import PrerequisiteError, ensure_debootstrap
from lab.contract import image_tag
from lab.paths import CONTAINERS_DIR, PROJECT_ROOT
from lab.progress import Progress

REPOSITORY = "aifactory-lab"
INPUTS_LABEL = "org.aifactory-lab.inputs"
SLURM_ROLES = ("controller", "dbd", "restd", "node")
PARENTS = ("BASE", "ROOT_IMAGE")  # build args that name the image built upon
# The foundation modules the node and Run:ai images run with (stdlib only; tests/unit/test_layers.py).
IMAGE_MODULES = ("paths.py", "versions.py", "contract.py", "exposition.py")
# The lab packages each image carries beside them: the node runs the shim, the Run:ai container the
# Kubernetes path (lab.kube, not lab.kube_host: that is the host's) with the Run:ai view and the shim.
IMAGE_PACKAGES = {"node": ("dcgm",), "runai": ("dcgm", "kube", "runai", "runai/api", "blueprint")}
EXECUTABLES = ("policy-rc.d", "lab-daemon", "lab-gpu-app", ".sh")  # context files that keep the execute bit
DEBOOTSTRAP_SCRIPTS = Path("/usr/share/debootstrap/scripts")
SYSTEM_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n.+?\r?\n-----END CERTIFICATE-----", re.DOTALL)


class ImageBuildError(RuntimeError):
    """A build that failed; the message carries the failing step's output."""


@dataclass(frozen=True)
class BuildOptions:
    base_image: str | None = None  # a registry image such as debian:trixie instead of debootstrap
    ca_bundle: Path | None = SYSTEM_CA_BUNDLE
    mirror: str = versions.DEBIAN_MIRROR
    rebuild: bool = False  # ignore the input hashes and the engine's layer cache


# Images built at once where they do not build on one another: most of a build is apt fetching and
# unpacking, so two or three beside each other keep both cores busy (BENCHMARKS.md, "bring-up").
PARALLEL_BUILDS = 3


def build_all(
    client: docker.DockerClient,
    options: BuildOptions,
    progress: Progress,
    roles: Collection[str] = (*SLURM_ROLES, "prometheus", "fence", "runai"),
    slurm: versions.SlurmRelease = versions.SLURM_RELEASES[versions.DEFAULT_SLURM_SERIES],
) -> None:
    """Make sure the images of ``roles`` (and the images they are built on) exist and are current;
    build what is missing or stale, each level of the image tree at once. A Slurm lab needs no Run:ai
    image, a Run:ai lab no Slurm one. The Slurm images are ``slurm``'s, made from its Debian suite."""
    certificates = _certificates(options.ca_bundle)
    root = _root_image(client, options, progress)

    def build(
        name: str,
        args: dict[str, str],
        files: dict[str, dict[str, bytes]] | None = None,
        series: str = versions.DEFAULT_SLURM_SERIES,
    ) -> str:
        return _build(client, name, args, progress, files, options.rebuild, series)

    base = build("base", {"ROOT_IMAGE": root}, {"host-ca": certificates})
    slurm_roles = [role for role in SLURM_ROLES if role in roles]
    with ThreadPoolExecutor(PARALLEL_BUILDS, thread_name_prefix="image") as pool:
        second: list[Future[str]] = []
        if slurm_roles:
            common = pool.submit(_slurm_common, client, options, progress, slurm, base, certificates)
        if "prometheus" in roles:
            prometheus_args = {
                "BASE": base,
                "PROMETHEUS_VERSION": versions.PROMETHEUS_DEB_VERSION,
                "ALERTMANAGER_VERSION": versions.ALERTMANAGER_DEB_VERSION,
            }
            second.append(pool.submit(build, "prometheus", prometheus_args))
        if "fence" in roles:
            second.append(pool.submit(build, "fence", {"BASE": base}))
        if "runai" in roles:
            lab_package = {"lab-package": package_files(IMAGE_PACKAGES["runai"], IMAGE_MODULES)}
            second.append(pool.submit(build, "runai", {"BASE": base}, lab_package))
        if slurm_roles:
            role_args = {"BASE": common.result(), "SLURM_VERSION": slurm.deb_version}
            shim = {"dcgm-shim": package_files(IMAGE_PACKAGES["node"], IMAGE_MODULES)}
            second += [
                pool.submit(build, role, role_args, shim if role == "node" else None, slurm.series)
                for role in slurm_roles
            ]
        for future in second:
            future.result()  # the first failure is raised; the pool waits for the builds under way


def _slurm_common(
    client: docker.DockerClient,
    options: BuildOptions,
    progress: Progress,
    slurm: versions.SlurmRelease,
    base: str,
    certificates: dict[str, bytes],
) -> str:
    """slurm-common at ``slurm``'s package version, on a base of its own suite where that is not the
    default one."""
    if slurm.debian_suite != versions.DEBIAN_SUITE:
        root = _root_image(client, options, progress, slurm.debian_suite, slurm.debootstrap_script)
        expired = {"APT_ACCEPT_EXPIRED_RELEASE": str(slurm.release_may_be_expired).lower()}
        base_args = {"ROOT_IMAGE": root, **expired}
        base = _build(
            client, "base", base_args, progress, {"host-ca": certificates}, options.rebuild, slurm.series
        )
    common_args = {
        "BASE": base,
        "SLURM_VERSION": slurm.deb_version,
        "SLURM_CONFIG_MOUNT": contract.SLURM_CONFIG_MOUNT,
        "SLURM_CONFIG_FILES": " ".join(contract.SLURM_CONFIG_FILES),
    }
    return _build(
        client, "slurm-common", common_args, progress, rebuild=options.rebuild, slurm_series=slurm.series
    )


def build_pyslurm_builder(client: docker.DockerClient, progress: Progress) -> str:
    """The image pyslurm's wheel is built in (containers/pyslurm-build), on the current slurm-common."""
    common = image_tag("slurm-common")
    try:
        client.images.get(common)
    except ImageNotFound as error:
        raise ImageBuildError(
            f"{common} is missing: the pyslurm wheel is built on the lab's Slurm image. Fix: `lab up` first."
        ) from error
    args = {"BASE": common, "SLURM_VERSION": versions.SLURM_DEB_VERSION}
    return _build(client, "pyslurm-build", args, progress)


def build_host(client: docker.DockerClient, options: BuildOptions, progress: Progress) -> str:
    """The one image of `--hosts systemd` labs: a machine-like Debian host (containers/host)."""
    certificates = _certificates(options.ca_bundle)
    root = _root_image(client, options, progress)
    return _build(client, "host", {"ROOT_IMAGE": root}, progress, {"host-ca": certificates}, options.rebuild)


def _root_image(
    client: docker.DockerClient,
    options: BuildOptions,
    progress: Progress,
    suite: str = versions.DEBIAN_SUITE,
    script: str = "",
) -> str:
    if options.base_image is not None and suite == versions.DEBIAN_SUITE:
        return _pull_if_missing(client, options.base_image, progress)
    tag = image_tag(f"debootstrap-{suite}")
    inputs = _digest([f"minbase {suite} {options.mirror}".encode()])
    if not options.rebuild and _current(client, tag, inputs):
        progress.say(f"{tag}: cached")
        return tag
    ensure_debootstrap(progress)
    with tempfile.TemporaryDirectory(prefix="aifactory-lab-rootfs-") as workdir:
        rootfs = Path(workdir) / "rootfs"
        with progress.step(f"debootstrap {suite} (minbase) from {options.mirror}"):
            argv = ["debootstrap", "--variant=minbase", suite, str(rootfs), options.mirror]
            if script and not (DEBOOTSTRAP_SCRIPTS / suite).exists():
                argv.append(str(DEBOOTSTRAP_SCRIPTS / script))
            result = subprocess.run(argv, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                hint = ", or use --base-image debian:trixie" if suite == versions.DEBIAN_SUITE else ""
                raise ImageBuildError(
                    f"debootstrap failed (exit {result.returncode}); its last lines:\n"
                    f"{result.stdout[-1500:]}{result.stderr[-1500:]}\n"
                    f"Fix: check that the mirror answers{hint}."
                )
        with progress.step(f"importing the root file system as {tag}"):
            _import_rootfs(client, rootfs, tag, inputs)
    return tag


def _import_rootfs(client: docker.DockerClient, rootfs: Path, tag: str, inputs: str) -> None:
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    assert tar.stdout is not None
    repository, _, version = tag.rpartition(":")
    try:
        client.api.import_image_from_stream(
            tar.stdout,
            repository=repository,
            tag=version,
            changes=[f"LABEL {INPUTS_LABEL}={inputs}", 'CMD ["/bin/bash"]'],
        )
    finally:
        tar.stdout.close()
        tar.wait()
    if tar.returncode != 0:
        raise ImageBuildError(f"tar of {rootfs} failed (exit {tar.returncode})")


def _pull_if_missing(client: docker.DockerClient, image: str, progress: Progress) -> str:
    try:
        client.images.get(image)
    except ImageNotFound:
        with progress.step(f"pulling {image}"):
            try:
                client.images.pull(image)
            except APIError as error:
                raise PrerequisiteError(
                    f"cannot pull {image}: {error.explanation}\n"
                    "Fix: drop --base-image to build the base from Debian's archive with debootstrap."
                ) from error
    return image


def _build(
    client: docker.DockerClient,
    name: str,
    buildargs: dict[str, str],
    progress: Progress,
    extra_files: dict[str, dict[str, bytes]] | None = None,
    rebuild: bool = False,
    slurm_series: str = versions.DEFAULT_SLURM_SERIES,
) -> str:
    tag = image_tag(name, slurm_series)
    context = CONTAINERS_DIR / name
    files = _context_files(context)
    for directory, members in (extra_files or {}).items():
        files.update({f"{directory}/{member}": data for member, data in members.items()})
    parents = [_image_id(client, ref) for key, ref in sorted(buildargs.items()) if key in PARENTS]
    inputs = _digest(
        [f"{k}={v}".encode() for k, v in sorted(buildargs.items())]
        + [path.encode() + b"\0" + data for path, data in sorted(files.items())]
        + [parent.encode() for parent in parents]
    )
    if not rebuild and _current(client, tag, inputs):
        progress.say(f"{tag}: cached")
        return tag
    with progress.step(f"building {tag}"):
        stream = client.api.build(
            fileobj=_tar_context(files),
            custom_context=True,
            tag=tag,
            buildargs=buildargs,
            labels={INPUTS_LABEL: inputs},
            rm=True,
            forcerm=True,
            nocache=rebuild,
            decode=True,
        )
        output: list[str] = []
        for entry in stream:
            line = str(entry.get("stream", "")).rstrip()
            output.append(line)
            if line.startswith("Step "):
                progress.say(f"  {name}: {line[:110]}")
            if "error" in entry:
                tail = "\n".join(output)[-3000:]
                raise ImageBuildError(f"building {tag} failed: {entry['error']}\n{tail}")
    return tag


def package_files(subpackages: tuple[str, ...], modules: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Parts of the ``lab`` package (sources and data, no bytecode) for an image: the node image gets
    the stdlib-only lab.dcgm, the Run:ai image lab.runai with lab.dcgm."""
    package = PROJECT_ROOT / "lab"
    files = {f"lab/{name}": (package / name).read_bytes() for name in ("__init__.py", *modules)}
    for subpackage in subpackages:
        for source in sorted((package / subpackage).iterdir()):
            if source.is_file() and source.suffix in (".py", ".csv"):
                files[f"lab/{subpackage}/{source.name}"] = source.read_bytes()
    return files


def write_tar(path: Path, files: dict[str, bytes]) -> Path:
    """``files`` as a tar archive (fixed modes and times: the same files give the same bytes)."""
    data = _tar_context(files).getvalue()
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_bytes(data)
        temporary.replace(path)  # a reader sees the old archive or the new one, never a part
    return path


def _context_files(context: Path) -> dict[str, bytes]:
    if not (context / "Dockerfile").is_file():
        raise ImageBuildError(f"{context}/Dockerfile is missing: the checkout is incomplete")
    return {
        str(path.relative_to(context)): path.read_bytes()
        for path in sorted(context.rglob("*"))
        if path.is_file()
    }


def _tar_context(files: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        directories = {str(Path(path).parent) for path in files} - {"."}
        for directory in sorted(directories):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o755 if path.endswith(EXECUTABLES) else 0o644
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _certificates(bundle: Path | None) -> dict[str, bytes]:
    """One ``.crt`` per certificate: update-ca-certificates reads one certificate per file."""
    if bundle is None:
        return {".keep": b""}
    try:
        data = bundle.read_bytes()
    except OSError as error:
        raise PrerequisiteError(
            f"cannot read the CA bundle {bundle}: {error.strerror}.\n"
            "Fix: pass --ca-bundle PATH to a PEM bundle, or --ca-bundle none."
        ) from error
    certificates = _PEM.findall(data)
    if not certificates:
        raise PrerequisiteError(f"{bundle} holds no PEM certificate; pass --ca-bundle none or a PEM file")
    return {f"host-{index:04d}.crt": pem + b"\n" for index, pem in enumerate(certificates)}


def _current(client: docker.DockerClient, tag: str, inputs: str) -> bool:
    try:
        image = client.images.get(tag)
    except ImageNotFound:
        return False
    return bool(image.labels.get(INPUTS_LABEL) == inputs)


def _image_id(client: docker.DockerClient, ref: str) -> str:
    return str(client.images.get(ref).id)


def _digest(parts: list[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:32]


def remove_all(client: docker.DockerClient) -> list[str]:
    """Remove every lab image (used by `lab down --purge --images`)."""
    removed = []
    for image in client.images.list(name=REPOSITORY):
        for tag in image.tags:
            client.images.remove(tag, force=True)
            removed.append(tag)
    return removed
