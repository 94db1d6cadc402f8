from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.paths import BLUEPRINTS_DIR


@pytest.fixture
def default_data() -> dict[str, Any]:
    """The shipped default blueprint as plain data, for tests that break one field at a time."""
    return yaml.safe_load((BLUEPRINTS_DIR / "default.yaml").read_text())


@pytest.fixture
def write_yaml(tmp_path: Path):  # type: ignore[no-untyped-def]
    def write(data: Any, name: str = "blueprint.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
        return path

    return write


@pytest.fixture
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state root of the test's own (``$AIFACTORY_LAB_STATE``): keys, records and caches land there."""
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    return tmp_path
