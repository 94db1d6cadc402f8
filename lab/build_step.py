"""One command of a build (npm, go, the collector's builder) run to its end with a time limit; what
stops it from finishing is raised as the caller's own error, naming the command."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float, error: type[Exception]
) -> subprocess.CompletedProcess[str]:
    """The finished command (its exit status for the caller to judge); ``error`` when it ran past
    ``timeout_s`` or its program does not exist."""
    try:
        return subprocess.run(
            list(argv), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as timeout:
        raise error(f"`{' '.join(argv)}` took longer than {timeout_s:.0f} s") from timeout
    except FileNotFoundError as missing:
        raise error(f"`{argv[0]}` not found: {missing}") from missing
