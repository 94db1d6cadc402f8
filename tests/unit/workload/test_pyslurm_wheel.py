"""pyslurm's wheel: the archive check before anything is unpacked, the cache keyed by tag, archive and
Slurm, and the build command PROVENANCE.md verified (offline, the distribution's Cython)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import versions
from lab.workload import pyslurm_wheel
from lab.workload.pyslurm_wheel import PyslurmError


def test_the_vendored_archive_is_the_pinned_tag() -> None:
    pyslurm_wheel.verify_archive(pyslurm_wheel.DEFAULT_ARCHIVE)


def test_a_missing_archive_names_the_path_the_pin_and_both_fixes(tmp_path: Path) -> None:
    with pytest.raises(PyslurmError) as raised:
        pyslurm_wheel.verify_archive(tmp_path / "pyslurm.tar.gz")
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'pyslurm.tar.gz'}: pyslurm's source archive is missing")
    assert versions.PYSLURM_ARCHIVE in message and versions.PYSLURM_ARCHIVE_SHA256 in message
    assert "--pyslurm-source PATH or $LAB_PYSLURM_SOURCE" in message


def test_another_tree_is_refused_with_both_hashes(tmp_path: Path) -> None:
    other = tmp_path / "pyslurm-24.11.x.tar.gz"
    other.write_bytes(b"the branch, not the tag")
    with pytest.raises(PyslurmError) as raised:
        pyslurm_wheel.verify_archive(other)
    message = str(raised.value)
    assert "is not the pinned" in message and versions.PYSLURM_ARCHIVE_SHA256 in message
    assert f"--prefix={versions.PYSLURM_ARCHIVE_PREFIX}/ {versions.PYSLURM_VERSION}" in message


def test_the_source_is_the_named_one_then_the_environments_then_the_vendored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(pyslurm_wheel.SOURCE_ENV, raising=False)
    assert pyslurm_wheel.named_source(None) == pyslurm_wheel.DEFAULT_ARCHIVE
    monkeypatch.setenv(pyslurm_wheel.SOURCE_ENV, str(tmp_path / "env.tar.gz"))
    assert pyslurm_wheel.named_source(None) == tmp_path / "env.tar.gz"
    assert pyslurm_wheel.named_source(tmp_path / "flag.tar.gz") == tmp_path / "flag.tar.gz"


def test_a_stored_wheel_is_the_next_cache_hit_and_an_altered_one_is_not(tmp_path: Path) -> None:
    assert pyslurm_wheel.cached(tmp_path) is None
    name = "pyslurm-24.11.0-cp313-cp313-linux_x86_64.whl"
    built = pyslurm_wheel.store(name, b"wheel bytes", "pip wheel of …", 412.34, tmp_path)
    hit = pyslurm_wheel.cached(tmp_path)
    assert (
        hit is not None
        and hit.cached
        and (hit.wheel, hit.sha256, hit.seconds)
        == (
            built.wheel,
            built.sha256,
            412.3,
        )
    )
    assert built.wheel.parent.name == (
        f"archive-{versions.PYSLURM_ARCHIVE_SHA256[:12]}-slurm-{versions.SLURM_DEB_VERSION}"
    ), "a new archive or Slurm pin builds a new wheel"
    built.wheel.write_bytes(b"cut off")
    assert pyslurm_wheel.cached(tmp_path) is None


def test_the_build_is_offline_with_the_distributions_cython_against_debians_libslurm() -> None:
    argv = pyslurm_wheel.build_command(jobs=2)
    script = argv[-1]
    assert argv[:2] == ["bash", "-c"] and script.startswith("set -eu;")
    assert "pip wheel --no-build-isolation --no-deps --no-index" in script
    assert "SLURM_INCLUDE_DIR=/usr/include SLURM_LIB_DIR=/usr/lib/x86_64-linux-gnu/slurm-wlm" in script
    assert "PYSLURM_BUILD_JOBS=2" in script and f"cd {versions.PYSLURM_ARCHIVE_PREFIX};" in script


def test_the_toolchain_image_pins_libslurm_dev_to_the_labs_slurm() -> None:
    from lab.paths import CONTAINERS_DIR

    dockerfile = (CONTAINERS_DIR / "pyslurm-build" / "Dockerfile").read_text()
    assert '"libslurm-dev=${SLURM_VERSION}"' in dockerfile and "cython3" in dockerfile
