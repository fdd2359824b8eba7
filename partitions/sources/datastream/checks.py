"""Checks of a Datastream stream before cdcweb watches it (pure Python, no Django).

Through the clients cdcweb watches with, each call with a deadline: the stream exists
(GetStream; when it does not, the location's stream IDs are listed to help), it is
visible to these credentials (its state, source and destination), and the metrics
cdcweb reads from Cloud Monitoring exist in the project.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from partitions.sources.base import SourceError
from partitions.sources.checks import CHECK_TIMEOUT_S, Check, CheckFailed

from .client import DatastreamApi, endpoints
from .snapshots import StreamSnapshot


def checks(values: dict[str, Any], start: datetime | None = None) -> list[Check]:
    """Return the stream and metrics checks of cleaned settings (the start does not matter here)."""
    api = DatastreamApi(*endpoints(), timeout=CHECK_TIMEOUT_S)
    name = f"projects/{values['project']}/locations/{values['location']}/streams/{values['stream_id']}"
    found: dict[str, StreamSnapshot | SourceError] = {}

    def stream() -> StreamSnapshot:
        if "stream" not in found:
            try:
                found["stream"] = api.get_stream(name)
            except SourceError as error:
                found["stream"] = error
        if isinstance(found["stream"], SourceError):
            raise found["stream"]
        return found["stream"]

    def exists() -> str:
        try:
            stream()
        except SourceError as error:
            if error.code != "NOT_FOUND":
                return f"not known: {error.code}"  # the next check says why
            others = sorted(s.stream_id for s in api.list_streams(values["project"], values["location"]))
            there = ", ".join(others[:10]) + (", ..." if len(others) > 10 else "") or "none"
            raise CheckFailed(f"stream {values['stream_id']} does not exist (there are: {there})") from error
        return f"stream {values['stream_id']} exists"

    def visible() -> str:
        try:
            found_stream = stream()
        except SourceError as error:
            raise CheckFailed(f"{error.code}: {error}") from error
        where = " to ".join(t for t in (found_stream.source_type, found_stream.destination_type) if t)
        return f"{found_stream.state}" + (f", {where}" if where else "")

    def metrics() -> str:
        missing = api.missing_metric_types(values["project"])
        if missing:
            raise CheckFailed(f"Cloud Monitoring lacks {', '.join(sorted(missing))}")
        return "Cloud Monitoring has every metric cdcweb reads"

    return [
        Check("stream exists", "stream_id", exists, needed=True),
        Check("stream visible", "stream_id", visible, needed=True),
        Check("metrics visible", "project", metrics),
    ]
