"""The one strict base model of every spec, and loading a YAML file into it, turning every mistake into
one message that names the file, each field and the fix. Shared by the Slurm and the Run:ai blueprints."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

Model = TypeVar("Model", bound=BaseModel)


class Strict(BaseModel):
    """Unknown fields are errors (a typo is never ignored); models are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def require_unique(what: str, names: list[str]) -> None:
    """A model validator's check: ``ValueError`` naming every name given more than once."""
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate {what} names: {duplicates}")


def read_mapping(path: Path, what: str, keys_hint: str, error: type[Exception]) -> dict[str, Any]:
    """The YAML mapping in ``path``, or ``error`` saying what is wrong with the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as problem:
        raise error(f"{path}: cannot read {what}: {problem.strerror}") from problem
    except UnicodeDecodeError as problem:
        where = f"byte {problem.start}"
        raise error(f"{path}: cannot read {what}: not UTF-8 ({where}); save it as UTF-8") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as problem:
        raise error(f"{path}: not valid YAML: {problem}") from problem
    except ValueError as problem:  # PyYAML's timestamp constructor: 2025-02-30 reads as a bad date
        raise error(f"{path}: not valid YAML: {problem} (quote it if it is not a date)") from None
    except RecursionError:
        raise error(f"{path}: not valid YAML: nested too deeply for a {what}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: a {what} is a YAML mapping with keys {keys_hint} …")
    return data


def validate(
    model: type[Model], data: dict[str, Any], source: str, what: str, example: str, error: type[Exception]
) -> Model:
    """``model`` from ``data``, or ``error`` listing every problem as ``field: what is allowed``."""
    try:
        return model.model_validate(data)
    except ValidationError as problems:
        raise error(explain(problems, source, what, example)) from None


def _field_part(part: object) -> str:
    """A key as the message shows it: quoted when it is empty or holds a line break or other control
    character, so that one problem stays one line."""
    text = str(part)
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def explain(error: ValidationError, source: str, what: str, example: str) -> str:
    lines = [f"{source}: {error.error_count()} problem(s) in the {what}:"]
    for problem in error.errors():
        field = ".".join(_field_part(part) for part in problem["loc"]) or "(top level)"
        message = problem["msg"]
        if problem["type"] == "extra_forbidden":
            message = f"unknown field (check the spelling against {example})"
        elif problem["type"] == "missing":
            message = "required field is missing"
        message = re.sub(r"^Value error, ", "", message)
        lines.append(f"  - {field}: {message}")
    return "\n".join(lines)
