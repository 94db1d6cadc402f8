import json
import logging
import os
from pathlib import Path

from lab.dcgm.job_classes import JobClassesReader


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def test_job_classes_follow_the_runner_rewriting_the_file(tmp_path: Path) -> None:
    path = tmp_path / "classes.json"
    source = JobClassesReader(path, logging.getLogger("test"))
    assert source.current() == {}
    _replace(path, json.dumps({"41": "inference"}))
    assert source.current() == {"41": "inference"}
    _replace(path, "{not json")
    assert source.current() == {"41": "inference"}, "a broken rewrite keeps the last good map"
    _replace(path, json.dumps({"41": "inference", "42": "interactive"}))
    assert source.current() == {"41": "inference", "42": "interactive"}
