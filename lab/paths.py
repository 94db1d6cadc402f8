"""Where the lab finds its own files and keeps per-lab state."""

from __future__ import annotations

import os
from pathlib import Path

# The package lives at <project>/lab; ansible/, containers/ and blueprints/ sit beside it.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
ANSIBLE_DIR = PROJECT_ROOT / "ansible"
CONTAINERS_DIR = PROJECT_ROOT / "containers"
BLUEPRINTS_DIR = PROJECT_ROOT / "blueprints"
DEFAULT_BLUEPRINT = BLUEPRINTS_DIR / "default.yaml"


def state_root() -> Path:
    """Per-lab state (keys, rendered inventory, logs): ``$AIFACTORY_LAB_STATE`` or ``<project>/.lab``."""
    return Path(os.environ.get("AIFACTORY_LAB_STATE", PROJECT_ROOT / ".lab"))


def lab_state_dir(lab_name: str) -> Path:
    return state_root() / lab_name
