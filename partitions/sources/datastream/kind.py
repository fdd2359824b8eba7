"""The Datastream source kind: its settings, how they are checked, and a handle on one stream.

A watched kind: cdcweb does not read a Datastream stream's data; it watches the stream
and operates it through the Datastream API and Cloud Monitoring. Its objects (tables) are
fixed, not a lineage of partitions. So ``connect`` returns a ``StreamHandle`` (one stream,
on the process's shared DatastreamApi) rather than a ``Source`` with roots and reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from partitions.sources.base import Setting, SettingsError, whole_hours
from partitions.sources.checks import Check
from partitions.sources.kinds import WatchedKind

from . import checks as source_checks
from . import operations
from .client import DatastreamApi, shared_api
from .metrics import StreamMetrics
from .operations import OperationResult, ProgressFn
from .snapshots import ErrorSnapshot, ObjectSnapshot, StreamSnapshot
from .states import RetentionRisk, retention_risk

# Project IDs: 6-30 characters, lowercase letters, digits and hyphens, starting with a letter,
# optionally domain-scoped (example.com:my-project). Locations: a region such as us-central1.
# Stream IDs: lowercase letters, digits and hyphens, starting with a letter, at most 63.
_PROJECT = re.compile(r"^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_LOCATION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
_STREAM_ID = re.compile(r"^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_FORMATS = {
    "project": (_PROJECT, "a project ID such as my-project (6-30 lowercase letters, digits, hyphens)"),
    "location": (_LOCATION, "a region such as us-central1"),
    "stream_id": (_STREAM_ID, "a stream ID such as orders-stream (lowercase letters, digits, hyphens)"),
}
RETENTION_RANGE = (1, 24 * 366)

SETTINGS = (
    Setting("project", "Project ID", help="The Google Cloud project of the stream.", cli="--project"),
    Setting("location", "Location", help="The region of the stream, e.g. us-central1.", cli="--location"),
    Setting("stream_id", "Stream ID", help="The stream's ID: the last part of its name.", cli="--stream-id"),
    Setting(
        "log_retention_hours",
        "Source log retention (hours)",
        type="int",
        required=False,
        default=168,
        help="How long the source database keeps its change logs (binlog, redo, WAL): a stream paused "
        "or failing longer than this can no longer continue. Default 7 days.",
        cli="--log-retention-hours",
        editable=True,
    ),
)


class DatastreamKind(WatchedKind):
    """Datastream streams, watched and operated through their API."""

    name = "datastream"
    label = "Datastream stream"
    settings = SETTINGS

    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the settings stripped, typed and defaulted, or raise SettingsError naming each bad one."""
        errors: dict[str, str] = {}
        cleaned: dict[str, Any] = {}
        for name in sorted(set(values) - {s.name for s in SETTINGS}):
            errors[name] = "unknown setting"
        for name, (pattern, shape) in _FORMATS.items():
            value = values.get(name)
            text = value.strip() if isinstance(value, str) else value
            if text in (None, ""):
                errors[name] = "required"
            elif not isinstance(text, str) or not pattern.match(text):
                errors[name] = f"must be {shape}" + (
                    "; give the ID, not the full name" if isinstance(text, str) and "/" in text else ""
                )
            else:
                cleaned[name] = text
        retention = _retention(values.get("log_retention_hours"), errors)
        if errors:
            raise SettingsError(errors)
        return {**cleaned, "log_retention_hours": retention}

    def checks(self, values: dict[str, Any], start: datetime | None = None) -> list[Check]:
        """Return the checks that the stream exists and is visible, and its metrics."""
        return source_checks.checks(values, start)

    def notes(self, values: dict[str, Any]) -> list[str]:
        """Return how cdcweb relates to a Datastream stream."""
        return [
            "Datastream reads and delivers this stream's data; cdcweb watches its state, errors and "
            "metrics, and operates it (pause, resume, recover, backfills) through the Datastream API.",
        ]

    def start_position(self, value: Any) -> dict[str, Any]:
        """Return a specific start position (JSON, or text such as oracle:123) checked; raise ValueError."""
        return operations.parse_position(value)

    def cursor_rows(self, cursor: dict[str, Any]) -> list[tuple[str, str]]:
        """Return an object's backfill as (what, value) rows for its page: state, trigger, times, errors."""
        rows = [
            ("Backfill", cursor.get("backfill_state") or "NOT_STARTED"),
            ("Triggered", cursor.get("backfill_trigger") or "—"),
            ("Backfill started", cursor.get("backfill_started_at") or "—"),
            ("Backfill ended", cursor.get("backfill_ended_at") or "—"),
        ]
        return rows + [("Error", str(error)) for error in cursor.get("errors") or ()]

    def describe(self, values: dict[str, Any]) -> str:
        """Return one line naming the source, as pages show it."""
        return (
            f"{values.get('project')}/{values.get('location')}: Datastream stream {values.get('stream_id')}"
        )

    def retention(self, values: dict[str, Any]) -> timedelta:
        """Return how long the source database keeps its change log (a stopped stream must resume within)."""
        return timedelta(hours=values.get("log_retention_hours") or 168)

    def connect(self, values: dict[str, Any]) -> StreamHandle:
        """Return a handle on the stream the settings name, on this process's shared API client."""
        cleaned = self.clean(values)
        return StreamHandle(
            shared_api(),
            cleaned["project"],
            cleaned["location"],
            cleaned["stream_id"],
            cleaned["log_retention_hours"],
        )


def _retention(value: Any, errors: dict[str, str]) -> int:
    """Return the log retention in hours (default 168), noting in ``errors`` why it is refused."""
    try:
        return whole_hours(value, *RETENTION_RANGE, default=168)
    except ValueError as refused:
        errors["log_retention_hours"] = str(refused)
        return 0


@dataclass(frozen=True)
class StreamHandle:
    """One Datastream stream on the process's shared client: watch it and operate it."""

    api: DatastreamApi
    project: str
    location: str
    stream_id: str
    log_retention_hours: int = 168

    @property
    def name(self) -> str:
        """Return the stream's resource name."""
        return f"projects/{self.project}/locations/{self.location}/streams/{self.stream_id}"

    def get(self) -> StreamSnapshot:
        """Return the stream now (one GetStream)."""
        return self.api.get_stream(self.name)

    def objects(self) -> list[ObjectSnapshot]:
        """Return the stream's objects with their backfill jobs."""
        return self.api.list_stream_objects(self.name)

    def errors(self, objects: bool = False) -> tuple[ErrorSnapshot, ...]:
        """Return the stream's errors (and its objects' with ``objects``), each once."""
        return self.api.stream_errors(self.name, objects)

    def metrics(self, start: datetime, end: datetime) -> StreamMetrics:
        """Return the stream's freshness, event, byte and unsupported-event points over (start, end]."""
        found = self.api.stream_metrics(self.project, self.location, start, end, self.stream_id)
        return found.get(self.stream_id, StreamMetrics(self.stream_id, (end - start).total_seconds()))

    def pause(self, progress: ProgressFn | None = None, **follow) -> OperationResult:
        """Pause the stream and follow the operation to its end."""
        return operations.pause(self.api, self.name, progress or _ignore, **follow)

    def resume(self, progress: ProgressFn | None = None, **follow) -> OperationResult:
        """Resume (or start) the stream and follow the operation to its end."""
        return operations.resume(self.api, self.name, progress or _ignore, **follow)

    def recover(self, start: str, position: dict | None = None, progress=None, **follow) -> OperationResult:
        """Run the stream with a CDC strategy (most_recent, next_available, specific) to its end."""
        return operations.recover(self.api, self.name, start, position, progress or _ignore, **follow)

    def start_backfill(
        self, object_id: str, progress=None, until: str = "running", **follow
    ) -> OperationResult:
        """Start one object's backfill and follow it until it runs (or has ended)."""
        name = f"{self.name}/objects/{object_id}"
        return operations.start_backfill(self.api, name, progress or _ignore, until, **follow)

    def stop_backfill(self, object_id: str, progress=None, **follow) -> OperationResult:
        """Stop one object's backfill and follow it until it no longer runs."""
        return operations.stop_backfill(
            self.api, f"{self.name}/objects/{object_id}", progress or _ignore, **follow
        )

    def retention_risk(self, stream: StreamSnapshot, now: datetime) -> RetentionRisk | None:
        """Return the warning for a stream paused or failing near the source's log retention."""
        return retention_risk(stream.state, stream.update_time, self.log_retention_hours, now)


def _ignore(_) -> None:
    """Drop progress reports."""


KIND = DatastreamKind()
