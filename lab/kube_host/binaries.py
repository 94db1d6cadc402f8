"""The Kubernetes path's binaries: built once per version set, cached, then mounted read-only into the
Run:ai lab's container.

- kube-apiserver, kube-controller-manager: ``k8s.io/kubernetes`` refuses ``go install`` (its go.mod
  replaces the staging modules with local paths), so ``lab/kube_host/gomod/kube`` is a wrapper module that
  requires it and the staging modules at their release versions; ``go build`` of its two commands, with
  the version ldflags Kubernetes' own build sets, so ``/version`` says the release.
- KAI Scheduler: the proxy refuses the module; ``go build -mod=readonly`` of the tag archive in
  ``../shared/vendor/`` (sha256 pinned), so the tag's ``go.sum`` checks every dependency.
- kwok: ``go install sigs.k8s.io/kwok/cmd/kwok@v0.7.0``; its own Stage files come with its module.
- kube-state-metrics: the proxy lists no versions, so ``lab/kube_host/gomod/kube-state-metrics`` requires
  v2.15.0.
- Kubeflow's training operator: ``go install`` of its ``cmd/training-operator.v1``; its PyTorchJob CRD,
  ClusterRole and validating webhooks come from the same module (``manifests/base/``).

All builds share the caller's Go module and build caches (``GOMODCACHE``, ``GOCACHE``), so the
k8s.io libraries are downloaded once. The cache key is every pinned version plus the KAI archive's sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lab import archives, versions
from lab.paths import VENDOR_DIR, state_root
from lab.progress import Progress

GOMOD_DIR = Path(__file__).parent / "gomod"
DEFAULT_KAI_ARCHIVE = VENDOR_DIR / versions.KAI_SCHEDULER_ARCHIVE
GO_FALLBACK = Path("/usr/local/go/bin/go")
BUILD_TIMEOUT_S = 3600  # a cold build of all of them on 2 cores: about 10 min measured, with margin
KAI_COMMANDS = ("scheduler", "binder", "podgrouper", "queuecontroller", "podgroupcontroller")
KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager")
TRAINING_OPERATOR = "training-operator"
BINARIES = (
    *KUBE_COMMANDS,
    *(f"kai-{c}" for c in KAI_COMMANDS),
    "kwok",
    "kube-state-metrics",
    TRAINING_OPERATOR,
)
# The training operator's own manifests at the tag (kustomize bases), applied by the control plane.
TRAINING_OPERATOR_MANIFESTS = (
    "crds/kubeflow.org_pytorchjobs.yaml",
    "rbac/role.yaml",
    "webhook/manifests.yaml",
)
# kwok's own Stage files at the tag (kustomize/stage/...), served to kwok with --config.
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/general/pod-create.yaml",
    "pod/general/pod-init-container-running.yaml",
    "pod/general/pod-init-container-completed.yaml",
    "pod/general/pod-ready.yaml",
    "pod/general/pod-complete.yaml",
    "pod/general/pod-delete.yaml",
    "pod/chaos/pod-container-running-failed.yaml",
)


# `go build` of a release: no local paths in the binary, the module's own go.sum checks every
# dependency, no symbol table or DWARF.
GO_BUILD = ["build", "-trimpath", "-mod=readonly", "-ldflags", "-s -w"]


class BuildError(RuntimeError):
    """A binary cannot be had; the message says why and what to do."""


@dataclass(frozen=True)
class KubeBuild:
    # bin/<binary>, stages/<stage>.yaml, kai/ (the tag's CRDs and RBAC), training-operator/ (its manifests)
    directory: Path
    seconds: dict[str, float]  # each build's wall time (empty when the cache was used)
    cached: bool


def version_key() -> str:
    pins = [
        versions.KUBERNETES_VERSION,
        versions.KAI_SCHEDULER_VERSION,
        versions.KAI_SCHEDULER_ARCHIVE_SHA256[:12],
        versions.KWOK_VERSION,
        versions.KUBE_STATE_METRICS_VERSION,
        versions.TRAINING_OPERATOR_VERSION,
        *KWOK_STAGES,
        *KAI_COMMANDS,
    ]
    return hashlib.sha256(" ".join(pins).encode()).hexdigest()[:12]


def cache_dir() -> Path:
    return (
        state_root()
        / "cache"
        / f"kube-{versions.KUBERNETES_VERSION}-kai-{versions.KAI_SCHEDULER_VERSION}-{version_key()}"
    )


def ensure(progress: Progress, kai_archive: Path | None = None) -> KubeBuild:
    """The cached set, else every binary built (see the module docstring); BuildError otherwise."""
    target = cache_dir()
    record = target / "build.json"
    if record.is_file() and all((target / "bin" / b).is_file() for b in BINARIES):
        return KubeBuild(target, {}, cached=True)
    go = _find_go()
    archive = kai_archive or DEFAULT_KAI_ARCHIVE
    archives.verify(archive, versions.KAI_SCHEDULER_ARCHIVE_SHA256, _KAI_ARCHIVE, BuildError)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-kube-build-", dir=target.parent) as work:
        staging = Path(work) / "out"
        (staging / "bin").mkdir(parents=True)
        seconds = {
            "kubernetes": _build_kube(go, staging, progress),
            "kai-scheduler": _build_kai(go, archive, Path(work), staging, progress),
            "kwok": _build_kwok(go, staging, progress),
            "kube-state-metrics": _build_ksm(go, staging, progress),
            "training-operator": _build_training_operator(go, staging, progress),
        }
        (staging / "build.json").write_text(json.dumps({"seconds": seconds}, indent=1) + "\n")
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(staging), target)  # whole or not at all: a half build is never cached
    return KubeBuild(target, seconds, cached=False)


def _find_go() -> str:
    go = shutil.which("go") or (str(GO_FALLBACK) if GO_FALLBACK.is_file() else None)
    if go is None:
        raise BuildError(
            f"no Go toolchain: neither `go` on PATH nor {GO_FALLBACK}. Fix: install Go ≥ 1.24 "
            "(KAI v0.13.0's go.mod says go 1.24.4)."
        )
    return go


_KAI_ARCHIVE = archives.PinnedArchive(
    "KAI Scheduler's source archive",
    versions.KAI_SCHEDULER_ARCHIVE,
    f"`git archive --format=tar.gz --prefix={versions.KAI_SCHEDULER_ARCHIVE_PREFIX}/ "
    f"{versions.KAI_SCHEDULER_VERSION}`",
)


def _env(**extra: str) -> dict[str, str]:
    # GOTOOLCHAIN=local: never download another toolchain. GOFLAGS cleared: the caller's -mod may not apply.
    return {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "", **extra}


def _go(go: str, args: list[str], cwd: Path, what: str, progress: Progress, **env: str) -> float:
    began = time.monotonic()
    with progress.step(what):
        try:
            result = subprocess.run(
                [go, *args],
                cwd=cwd,
                env=_env(**env),
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise BuildError(f"{what}: longer than {BUILD_TIMEOUT_S} s") from error
    if result.returncode != 0:
        tail = " ".join(result.stderr.strip().splitlines()[-6:]) or "(no output)"
        raise BuildError(
            f"{what} failed: {tail}\nFix: the Go module proxy must serve the dependencies (GOPROXY), "
            "and Go must be ≥ 1.24."
        )
    return round(time.monotonic() - began, 1)


def _kube_ldflags() -> str:
    release = versions.KUBERNETES_VERSION
    major, minor = release.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion={release}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


def _build_kube(go: str, out: Path, progress: Progress) -> float:
    packages = [f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS]
    args = [
        "build",
        "-trimpath",
        "-mod=readonly",
        "-ldflags",
        _kube_ldflags(),
        "-o",
        str(out / "bin"),
        *packages,
    ]
    return _go(
        go, args, GOMOD_DIR / "kube", f"go build of Kubernetes {versions.KUBERNETES_VERSION}", progress
    )


def _build_kai(go: str, archive: Path, work: Path, out: Path, progress: Progress) -> float:
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(work, filter="data")
    tree = work / versions.KAI_SCHEDULER_ARCHIVE_PREFIX
    built = work / "kai-bin"
    built.mkdir()
    args = [
        *GO_BUILD,
        "-o",
        str(built),
        *(f"./cmd/{c}" for c in KAI_COMMANDS),
    ]
    seconds = _go(
        go,
        args,
        tree,
        f"go build of KAI Scheduler {versions.KAI_SCHEDULER_VERSION} from {archive.name}",
        progress,
    )
    for command in KAI_COMMANDS:
        shutil.move(str(built / command), out / "bin" / f"kai-{command}")
    # The tag's CRDs and the controller-gen ClusterRoles of the five components, applied as they are.
    chart = tree / "deployments" / "kai-scheduler"
    (out / "kai" / "crds").mkdir(parents=True)
    (out / "kai" / "rbac").mkdir()
    (out / "kai" / "priorityclasses").mkdir()
    for crd in sorted((chart / "crds").glob("*.yaml")):
        shutil.copy2(crd, out / "kai" / "crds" / crd.name)
    for role in KAI_COMMANDS:
        shutil.copy2(chart / "templates" / "rbac" / f"{role}.yaml", out / "kai" / "rbac" / f"{role}.yaml")
    for priority in sorted((chart / "templates" / "priorityclasses").glob("*.yaml")):
        shutil.copy2(priority, out / "kai" / "priorityclasses" / priority.name)
    return seconds


def _go_install(go: str, module: str, out: Path, progress: Progress) -> float:
    """``go install module@version`` into ``out/bin``, without local paths or symbols."""
    return _go(
        go,
        ["install", "-trimpath", "-ldflags", "-s -w", module],
        out,
        f"go install {module}",
        progress,
        GOBIN=str(out / "bin"),
    )


def _build_kwok(go: str, out: Path, progress: Progress) -> float:
    seconds = _go_install(go, f"{versions.KWOK_MODULE}/cmd/kwok@{versions.KWOK_VERSION}", out, progress)
    tree = _module_dir(go, versions.KWOK_MODULE, versions.KWOK_VERSION, out) / "kustomize" / "stage"
    (out / "stages").mkdir()
    for stage in KWOK_STAGES:
        shutil.copyfile(tree / stage, out / "stages" / Path(stage).name)
    return seconds


def _build_ksm(go: str, out: Path, progress: Progress) -> float:
    args = [
        *GO_BUILD,
        "-o",
        str(out / "bin" / "kube-state-metrics"),
        "k8s.io/kube-state-metrics/v2",
    ]
    return _go(
        go,
        args,
        GOMOD_DIR / "kube-state-metrics",
        f"go build of kube-state-metrics {versions.KUBE_STATE_METRICS_VERSION}",
        progress,
    )


def _build_training_operator(go: str, out: Path, progress: Progress) -> float:
    command = f"{versions.TRAINING_OPERATOR_MODULE}/cmd/training-operator.v1"
    seconds = _go_install(go, f"{command}@{versions.TRAINING_OPERATOR_VERSION}", out, progress)
    (out / "bin" / "training-operator.v1").rename(out / "bin" / TRAINING_OPERATOR)
    base = _module_dir(go, versions.TRAINING_OPERATOR_MODULE, versions.TRAINING_OPERATOR_VERSION, out)
    for manifest in TRAINING_OPERATOR_MANIFESTS:
        target = out / TRAINING_OPERATOR / manifest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(base / "manifests" / "base" / manifest, target)
    return seconds


def _module_dir(go: str, module: str, version: str, cwd: Path) -> Path:
    """Where the module cache holds ``module@version`` (downloaded if it is not there yet)."""
    found = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    )
    return Path(json.loads(found.stdout)["Dir"])
