"""The job-classes hand-over: ``{"<job id>": "<class>"}`` (Slurm) or ``{"<namespace/pod>": "<class>"}``
(Kubernetes), written by the workload runner and read by the shim's ``--job-classes FILE`` (lab-only),
e.g. ``{"4711": "inference", "team-a/notebook-0": "interactive"}``. Writer and reader live here,
together, so the format has one owner.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lab.dcgm.workloads import PROFILES
from lab.paths import atomic_write


class JobClassesError(ValueError):
    """The job-classes file cannot be used; the message names the file and the fix."""


def load_job_classes(path: Path) -> dict[str, str]:
    """Read ``{"<job id or namespace/pod>": "<class>"}`` and check every class exists."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise JobClassesError(f"{path}: cannot read job classes: {error.strerror}") from error
    except json.JSONDecodeError as error:
        raise JobClassesError(f"{path}: invalid JSON at line {error.lineno}: {error.msg}") from error
    if not isinstance(document, dict):
        raise JobClassesError(f'{path}: expected an object like {{"4711": "training"}}')
    classes: dict[str, str] = {}
    for key, value in document.items():
        if value not in PROFILES:
            raise JobClassesError(
                f"{path}: job {key!r} has class {value!r}; use one of {', '.join(PROFILES)}"
            )
        classes[str(key)] = str(value)
    return classes


class JobClassesReader:
    """A job-classes file that the workload runner keeps rewriting (atomically): re-read whenever
    its mtime changes, checked on each scrape. A missing or broken file keeps the last good map."""

    def __init__(self, path: Path, log: logging.Logger) -> None:
        self.path = path
        self.log = log
        self._stamp: tuple[int, int] | None = None
        self._classes: dict[str, str] = {}

    def current(self) -> dict[str, str]:
        try:
            status = self.path.stat()
        except OSError:
            return self._classes
        stamp = (status.st_mtime_ns, status.st_ino)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._classes = load_job_classes(self.path)
            except JobClassesError as error:
                self.log.warning("%s; keeping the previous job classes", error)
        return self._classes


class JobClassesWriter:
    """The workload runner's side: rewrites the file atomically, only when the map changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: dict[str, str] | None = None

    def write(self, classes: dict[str, str]) -> None:
        if classes == self._written:
            return
        atomic_write(self.path, json.dumps(classes, sort_keys=True) + "\n", mode=0o644)  # the shim reads it
        self._written = dict(classes)
