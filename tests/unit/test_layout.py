"""One naming scheme for unit tests: `tests/unit/<package>/test_<module>.py`, the directory already
saying the package (ARCHITECTURE.md)."""

from __future__ import annotations

from pathlib import Path

UNIT = Path(__file__).parent


def _packages() -> list[Path]:
    return sorted(path.parent for path in UNIT.glob("*/__init__.py"))


def test_every_directory_of_tests_is_a_package() -> None:
    # Several packages hold a test_cli.py: pytest tells them apart only by their package.
    tests = {path.parent for path in UNIT.rglob("test_*.py")}
    assert not [str(d.relative_to(UNIT)) for d in tests if not (d / "__init__.py").is_file()]


def test_no_test_file_repeats_its_package_name() -> None:
    repeated = [
        str(path.relative_to(UNIT))
        for package in _packages()
        for path in sorted(package.glob("test_*.py"))
        # jobmapping/test_job_mapping_files.py repeats it too: compare without underscores.
        if path.stem.removeprefix("test_").replace("_", "").startswith(package.name.replace("_", ""))
    ]
    assert _packages() and not repeated, f"name these test_<module>.py: {repeated}"
