"""HPC job mapping (``--hpc-job-mapping-dir``): read the directory, then label samples with ``hpc_job``.

Mirrors ``internal/pkg/transformation/hpc.go`` of 4.5.3-4.8.2, split as dcgm-exporter's own pipeline is: the
reader does the I/O on every scrape (no cache, no watcher, like upstream), ``apply_hpc_jobs`` is a
pure function over samples. The layout the prolog writes, e.g. ``/var/lib/dcgm-exporter/job-mapping``::

    0      <- "4711\\n"          (GPU 0 runs job 4711)
    1      <- "4711\\n4712\\n"    (GPU 1 is shared: two series per metric)
    2.0    <- MIG instance GPU_I_ID 0 of GPU 2

Edge cases, all as upstream: only names matching ``^\\d+(\\.\\d+)?$`` count, directories and other
names are skipped; one job id per line, lines not trimmed (Go ``bufio.ScanLines`` drops only the
``\\n`` and one trailing ``\\r``); an empty file leaves the GPU unlabelled; a missing directory at
start is logged once and then ignored until it appears; a directory that vanishes later is logged
on every scrape and ignored; an entry that cannot be stat'ed is skipped with a warning; a file that
was listed but cannot be opened, or a line of 64 KiB or more, fails the scrape (HTTP 500). Duplicate
ids in one file are kept (``hpc.go@4.5.3-4.8.2:89``): the template renderer writes the same series
twice and the scrape answers 200; Prometheus keeps the first and counts the second as a duplicate
sample. (The later expfmt renderer of 4.6.0-4.8.3 answers 500 there; PR #730 then de-duplicates.)
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from lab.dcgm.samples import HPC_JOB_ATTRIBUTE, Sample

# validGPUFile in hpc.go, `^\d+(\.\d+)?$`: plain GPU ids ("0") or MIG instances "<GPU_ID>.<GPU_I_ID>"
# ("2.0"). Go's \d is ASCII only and its $ ends the text, so: ASCII digits, matched whole ("0\n" is not).
GPU_FILE_NAME = re.compile(r"[0-9]+(\.[0-9]+)?")
# bufio.MaxScanTokenSize: a longer line makes Scanner.Err() return ErrTooLong.
MAX_LINE_BYTES = 64 * 1024

JobMap = dict[str, list[str]]


class JobMappingError(OSError):
    """Reading the mapping failed after listing it; upstream returns the error and answers 500."""


def go_error(op: str, path: Path | str, error: OSError) -> str:
    """An OSError as Go's ``*PathError`` prints it, e.g. ``open /d/0: no such file or directory``."""
    reason = (error.strerror or str(error)).lower()
    return f"{op} {path}: {reason}"


def read_job_file(path: Path) -> list[str]:
    """Job ids of one mapping file, one per line, exactly as ``bufio.Scanner`` splits them."""
    try:
        data = path.read_bytes()
    except IsADirectoryError as error:  # Go opens a directory (a symlink to one) and fails the read
        raise JobMappingError(go_error("read", path, error)) from error
    except OSError as error:
        raise JobMappingError(go_error("open", path, error)) from error
    lines = data.split(b"\n")
    if lines[-1] == b"":  # a trailing newline ends the last line; it does not start a new one
        lines.pop()
    jobs: list[str] = []
    for line in lines:
        if len(line) >= MAX_LINE_BYTES:
            raise JobMappingError("bufio.Scanner: token too long")  # the tag logs no path here
        if line.endswith(b"\r"):
            line = line[:-1]
        jobs.append(line.decode("utf-8", errors="surrogateescape"))
    return jobs


def go_quote(text: str) -> str:
    """Go's %q for the printable names and paths a mapping directory holds (JSON quoting agrees)."""
    return json.dumps(text, ensure_ascii=False)


class HpcJobMapper:
    """Per-node reader with upstream's one piece of state: was the directory missing at start?"""

    name = "hpcMapper"

    def __init__(
        self,
        mapping_dir: Path,
        log: logging.Logger,
        *,
        read_file: Callable[[Path], list[str]] = read_job_file,
    ) -> None:
        self.mapping_dir = mapping_dir
        self._log = log
        self._read_file = read_file
        log.info(f'HPC job mapping is enabled and watch for the "{mapping_dir}" directory')
        self.missing_directory = not mapping_dir.exists()
        if self.missing_directory:
            log.error(
                f"HPC job mapping file directory '{mapping_dir}' not found on initialization.",
                extra={"attrs": {"error": f"stat {mapping_dir}: no such file or directory"}},
            )

    def read(self) -> JobMap | None:
        """GPU file name -> job ids, or None when the directory is not there (series pass through)."""
        try:
            os.stat(self.mapping_dir)
        except OSError as error:
            if isinstance(error, FileNotFoundError) and self.missing_directory:
                return None
            self._log.error(
                f"Unable to access HPC job mapping file directory '{self.mapping_dir}' - "
                "directory not found. Ignoring.",
                extra={"attrs": {"error": go_error("stat", self.mapping_dir, error)}},
            )
            return None
        self.missing_directory = False
        debug = self._log.isEnabledFor(logging.DEBUG)  # hpc.go's Debug lines, only with --debug
        names = self._gpu_files(debug)
        if debug:
            listed = ", ".join(go_quote(name) for name in names)
            self._log.debug(
                f"HPC job mapping files: []string{{{listed}}}"
                if names
                else "HPC job mapping files: []string(nil)"
            )
        jobs_by_file: JobMap = {}
        for name in names:
            jobs_by_file[name] = self._read_file(self.mapping_dir / name)
        if debug:
            mapping = " ".join(f"{name}:[{' '.join(jobs)}]" for name, jobs in sorted(jobs_by_file.items()))
            self._log.debug(f"GPU to job mapping: map[{mapping}]")
        return jobs_by_file

    def _gpu_files(self, debug: bool) -> list[str]:
        try:
            entries = list(os.scandir(self.mapping_dir))
        except OSError as error:
            raise JobMappingError(go_error("open", self.mapping_dir, error)) from error
        entries.sort(key=lambda entry: entry.name)  # os.ReadDir returns entries sorted by name
        if debug:
            self._log.debug(
                f"hpc mapper: {len(entries)} files in the {go_quote(str(self.mapping_dir))} found"
            )
        names = []
        for entry in entries:
            try:
                # DirEntry.Info() in Go is an lstat: a symlink to a directory counts as a file.
                is_dir = entry.is_dir(follow_symlinks=False)
                entry.stat(follow_symlinks=False)
            except OSError:
                self._log.warning(f"HPC mapper: can not get file info for the {entry.name} file.")
                continue
            # Rare entries (a subdirectory, a writer's temporary file): their debug text costs nothing.
            if is_dir:
                self._log.debug(f"HPC mapper: the {go_quote(entry.name)} file is directory")
                continue
            if not GPU_FILE_NAME.fullmatch(entry.name):
                self._log.debug(
                    f"HPC mapper: file {go_quote(entry.name)} name doesn't match with <GPU_ID> or "
                    "<GPU_ID>.<GPU_INSTANCE_ID> convention"
                )
                continue
            names.append(entry.name)
        return names


def job_map_key(sample: Sample) -> str:
    """Whole GPUs are keyed by the ``gpu`` label, MIG instances by ``<gpu>.<GPU_I_ID>``."""
    return f"{sample.gpu}.{sample.gpu_instance_id}" if sample.mig_profile else sample.gpu


def apply_hpc_jobs(samples: Iterable[Sample], jobs: Mapping[str, list[str]] | None) -> list[Sample]:
    """One copy per job with ``hpc_job`` set, replacing the unlabelled original; input untouched."""
    if jobs is None:
        return list(samples)
    out: list[Sample] = []
    for sample in samples:
        sample_jobs = jobs.get(job_map_key(sample))
        if sample_jobs:
            out.extend(sample.with_attributes(((HPC_JOB_ATTRIBUTE, job),)) for job in sample_jobs)
        else:
            out.append(sample)
    return out
