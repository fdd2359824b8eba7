"""The connection settings every Spanner kind shares: database, dialect, emulator host, and their checks.

Pure Python, no Django. Names that end up in SQL text (tables, columns, indexes,
change streams) must match a strict identifier pattern before any query is built; a
name that does not is refused with a message naming the setting, never quoted around.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from partitions.sources.spanner_change_stream.query import DIALECTS, IDENTIFIER

from .base import Setting, SettingsError

PROJECT = re.compile(r"[a-z][a-z0-9.:-]{0,99}")
INSTANCE = re.compile(r"[a-z][a-z0-9-]{0,63}")
DATABASE = re.compile(r"[a-z][a-z0-9_-]{0,29}")
_HOST = re.compile(
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):(?P<port>\d{1,5})"
)

DATABASE_SETTINGS = (
    Setting("project", "Project", help="Google Cloud project id", cli="--project"),
    Setting("instance", "Instance", help="Spanner instance id", cli="--instance"),
    Setting("database", "Database", help="Spanner database id", cli="--database"),
    Setting(
        "dialect",
        "Dialect",
        type="choice",
        required=False,
        default="",
        choices=("", *DIALECTS),
        help="googlesql or postgresql; blank: ask the database",
        cli="--dialect",
    ),
)
EMULATOR_HOST = Setting(
    "emulator_host",
    "Emulator host",
    required=False,
    default="",
    help="host:port of an emulator or the simulator; blank: real Spanner or SPANNER_EMULATOR_HOST",
    cli="--emulator-host",
)

Check = Callable[[Any], Any]


def required(pattern: re.Pattern, what: str) -> Check:
    """Return a check of a required setting that must match pattern."""

    def check(value: Any) -> str:
        text = str(value or "").strip()
        if not text:
            raise ValueError(f"the {what} is required")
        if not pattern.fullmatch(text):
            raise ValueError(f"invalid {what} {text!r}")
        return text

    return check


def check_identifier(name: Any, what: str) -> str:
    """Return the name if it is a plain Spanner identifier, else raise ValueError."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"invalid {what} {name!r}: use a letter followed by letters, digits or underscores "
            "(at most 128 characters)"
        )
    return name


def dialect(value: Any) -> str:
    """Return the dialect lower-cased, "" meaning detect; raise ValueError for another."""
    text = str(value or "").strip().lower()
    if text and text not in DIALECTS:
        raise ValueError(f"invalid dialect {text!r}: use googlesql or postgresql, or leave it blank")
    return text


def emulator_host(value: Any) -> str:
    """Return host:port stripped, or "" when blank; raise ValueError for anything else."""
    text = str(value or "").strip()
    if not text:
        return ""
    match = _HOST.fullmatch(text)
    if match is None or not 1 <= int(match["port"]) <= 65_535:
        raise ValueError(f"invalid emulator host {text!r}: use host:port, e.g. localhost:9010")
    return text


DATABASE_CHECKS: tuple[tuple[str, Check], ...] = (
    ("project", required(PROJECT, "project")),
    ("instance", required(INSTANCE, "instance")),
    ("database", required(DATABASE, "database")),
    ("dialect", dialect),
    ("emulator_host", emulator_host),
)


def run_checks(
    values: dict[str, Any], checks: tuple[tuple[str, Check], ...], settings: tuple[Setting, ...]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return (cleaned values, errors by setting) of `checks`, and an error for unknown names."""
    cleaned, errors = {}, {}
    for name, check in checks:
        try:
            cleaned[name] = check(values.get(name))
        except ValueError as error:
            errors[name] = str(error)
    unknown = sorted(set(values) - {s.name for s in settings})
    if unknown:
        errors["settings"] = f"unknown settings: {', '.join(unknown)}"
    return cleaned, errors


def raise_if(errors: dict[str, str]) -> None:
    """Raise SettingsError when any setting was refused."""
    if errors:
        raise SettingsError(errors)
