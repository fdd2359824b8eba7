"""The "bigtable" source kind: its settings, their validation, and the connected Source.

Settings name one table's change stream: project, instance, table and the app profile
to read through (it must route to a single cluster). ``connect`` returns a Source on
the process's shared client; BIGTABLE_EMULATOR_HOST points it at the simulator.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from partitions.sources.base import (
    NewPartition,
    PartitionState,
    ReadOptions,
    Setting,
    SettingsError,
    whole_hours,
)
from partitions.sources.checks import Check
from partitions.sources.kinds import Assumption, ReadKind

from . import checks as source_checks
from . import cost
from . import cursor as cursors
from .client import data_client, emulator_host, table_path
from .landing import READ_METHOD, landing_table
from .reader import BigtableRead
from .roots import initial_partitions

# A table's change stream keeps changes 1 to 7 days.
RETENTION_HOURS = (24, 168)
# Formats as the Cloud Console and the Admin API accept them.
_PROJECT = re.compile(r"(?:[a-z][a-z0-9.-]{0,61}[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]")
_INSTANCE = re.compile(r"[a-z][a-z0-9-]{4,31}[a-z0-9]")
_TABLE = re.compile(r"[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}")
_APP_PROFILE = re.compile(r"[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}")

_RULES = {
    "project": (
        _PROJECT,
        "a project id is 6-30 lowercase letters, digits and hyphens, starting with a letter",
    ),
    "instance": (
        _INSTANCE,
        "an instance id is 6-33 lowercase letters, digits and hyphens, starting with a letter "
        "and not ending with a hyphen",
    ),
    "table": (_TABLE, "a table id is 1-50 letters, digits, '_', '-' and '.', not starting with '-' or '.'"),
    "app_profile": (
        _APP_PROFILE,
        "an app profile id is 1-50 letters, digits, '_', '-' and '.', not starting with '-' or '.'",
    ),
}


class BigtableKind(ReadKind):
    """Bigtable change streams: row-range partitions that split and merge, read by cdcweb's workers."""

    name = "bigtable"
    label = "Bigtable change stream"
    read_method = READ_METHOD
    lineage = True
    windows = True  # a read covers [watermark, watermark + window], continued from its tokens
    endpoint = (
        "real Bigtable with the environment's credentials; BIGTABLE_EMULATOR_HOST=host:port (the client's "
        "own variable) points it at an emulator or `manage.py bigtable_simulator` instead"
    )
    settings = (
        Setting(
            "project", "Project", help="Google Cloud project id of the Bigtable instance", cli="--project"
        ),
        Setting("instance", "Instance", help="Bigtable instance id", cli="--instance"),
        Setting("table", "Table", help="table id; its change stream must be enabled", cli="--table"),
        Setting(
            "app_profile",
            "App profile",
            help="app profile to read through; it must use single-cluster routing",
            cli="--app-profile",
        ),
        Setting(
            "retention_hours",
            "Retention (hours)",
            type="int",
            required=False,
            default=24,
            help="the table's change stream retention, 24 to 168 hours: a stopped stream resumes within it",
            cli="--retention-hours",
            editable=True,
        ),
    )

    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the settings stripped and checked, or raise SettingsError naming each bad one."""
        cleaned, errors = {}, {}
        try:
            cleaned["retention_hours"] = whole_hours(
                values.get("retention_hours"), *RETENTION_HOURS, default=24
            )
        except ValueError as refused:
            errors["retention_hours"] = str(refused)
        for setting in self.settings:
            if setting.name not in _RULES:
                continue
            value = values.get(setting.name)
            text = value.strip() if isinstance(value, str) else value
            pattern, rule = _RULES[setting.name]
            if text is None or text == "":
                errors[setting.name] = "this setting is required"
            elif not isinstance(text, str):
                errors[setting.name] = f"expected text, got {type(value).__name__}"
            elif not pattern.fullmatch(text):
                errors[setting.name] = f"{text!r} is not valid: {rule}"
            else:
                cleaned[setting.name] = text
        unknown = sorted(set(values) - {s.name for s in self.settings})
        for name in unknown:
            errors[name] = "not a setting of a Bigtable change stream"
        if errors:
            raise SettingsError(errors)
        return cleaned

    def merge_cursor(self, stored: dict[str, Any], contribution: dict[str, Any]) -> dict[str, Any]:
        """Return a child's cursor with one more parent's tokens added."""
        return cursors.merge_cursor(stored, contribution)

    def child_ready(self, child: PartitionState, parents_finished: bool) -> bool:
        """Return whether the child's tokens cover its row range exactly (parents are not named)."""
        return cursors.child_ready(child, parents_finished)

    def complete_at_end(
        self, child: PartitionState, ended: list[PartitionState]
    ) -> tuple[dict[str, Any], list[str]] | None:
        """Return a merged child's cursor completed by parents that read on to the stream's end."""
        completed = cursors.complete_at_end(child.cursor, [(p.token, p.cursor) for p in ended])
        if completed is None:
            return None
        cursor, used = completed
        # The parents that read on handed their rows over up to where they stopped.
        handed = [cursors.handed_until(cursor), *(p.watermark for p in ended if p.token in used)]
        until = max(w for w in handed if w is not None)
        return {**cursor, cursors.HANDED_UNTIL: until.isoformat()}, used

    def reread_cursor(self, cursor: dict[str, Any], at: datetime) -> dict[str, Any] | None:
        """Return the cursor reading the partition again from `at`: its parents' tokens or a start time."""
        try:
            return cursors.reread_cursor(cursor, at)
        except ValueError:
            return None  # not a cursor of this kind: the operator is told it cannot

    def is_generation(self, token: str, base: str) -> bool:
        """Return whether the token is the range's (base) or a later generation of the same range."""
        return cursors.split_generation(token)[0] == base

    def place_child(self, child: NewPartition, known: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        """Return the generation of the child's range to store it under, and whether it exists."""
        return cursors.place_child(child, known)

    def cursor_rows(self, cursor: dict[str, Any]) -> list[tuple[str, str]]:
        """Return the partition's continuation tokens (by row range) and low watermark, for its page."""
        return cursors.cursor_rows(cursor)

    def checks(self, values: dict[str, Any], start: datetime | None = None) -> list[Check]:
        """Return the table, change stream, app profile and retention checks."""
        return source_checks.checks(values, start)

    def notes(self, values: dict[str, Any]) -> list[str]:
        """Return what a reader of Bigtable change streams must know."""
        return [
            "Watermarks are Bigtable's estimated low watermarks: an estimate, not a guarantee that no "
            "earlier change can still arrive.",
            "Garbage-collection deletes are changes too; they land with is_system_transaction set, and "
            "the reports count them apart from users' changes.",
        ]

    def describe(self, values: dict[str, Any]) -> str:
        """Return one line naming the source, as pages show it."""
        where = f"{values.get('project')}/{values.get('instance')}"
        return f"{where}: table {values.get('table')} via app profile {values.get('app_profile')}"

    def retention(self, values: dict[str, Any]) -> timedelta:
        """Return the table's change stream retention (changes older than that are gone)."""
        return timedelta(hours=values.get("retention_hours") or 24)

    def cost_model(self, values: dict[str, Any]) -> tuple[Assumption, ...]:
        """Return Bigtable's prices and the seed's CPU and storage figures for change streams."""
        return cost.cost_model(self.retention(values).total_seconds() / 86_400)

    def reading_assumptions(
        self, values: dict[str, Any], partitions: float, window_seconds: int, heartbeat_ms: int
    ) -> tuple[Assumption, ...]:
        """Return the ReadChangeStream calls a day and an idle stream's heartbeats."""
        return cost.reading_assumptions(partitions, window_seconds, heartbeat_ms)

    def connect(self, values: dict[str, Any]) -> BigtableSource:
        """Return a Source on the shared client (the emulator's when BIGTABLE_EMULATOR_HOST is set)."""
        return BigtableSource(
            data_client(emulator_host()),
            values["project"],
            values["instance"],
            values["table"],
            values["app_profile"],
        )


class BigtableSource:
    """One stream's table, read through one app profile with the process's client."""

    def __init__(self, client, project: str, instance: str, table: str, app_profile: str):
        self.client = client
        self.table = table
        self.table_name = table_path(project, instance, table)
        self.app_profile = app_profile

    def roots(self, at: datetime, end: datetime | None, options: ReadOptions) -> list[NewPartition]:
        """Return the table's partitions now, each to be read from ``at`` (end is not needed)."""
        return initial_partitions(self.client, self.table_name, self.app_profile, at, options)

    def read(self, partition: PartitionState, end: datetime | None, options: ReadOptions) -> BigtableRead:
        """Return a read of the partition from its tokens (or its watermark) to ``end``."""
        return BigtableRead(self.client, self.table_name, self.app_profile, partition, end, options)

    def landing_table(self, stream_name: str, token: str, records: list, read_at: datetime) -> pa.Table:
        """Return the landing rows (one per mod) of some changes of one partition."""
        return landing_table(self.table, stream_name, token, records, read_at)

    def next_read_delay(self, read: BigtableRead) -> float:
        """Return 0: a change stream read waits on the server, so the next read may start at once."""
        return 0.0


KIND = BigtableKind()
