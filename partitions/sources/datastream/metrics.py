"""Datastream's Cloud Monitoring metrics: names, filters, and what cdcweb reads from them.

Metric types (resource type ``datastream.googleapis.com/Stream``, resource labels
``resource_container`` = the project, ``location``, ``stream_id``):

- ``datastream.googleapis.com/stream/freshness``: data freshness, read as the stream's lag.
- ``datastream.googleapis.com/stream/event_count``: events processed (throughput).
- ``datastream.googleapis.com/stream/bytes_count``: bytes processed (throughput).
- ``datastream.googleapis.com/stream/unsupported_event_count``: events Datastream could not
  process, read as a warning.

Where each name comes from: none is in the installed client packages, which carry only the
resource type (googleapis-common-protos, google/api/monitored_resource.proto: "the type of a
Datastream stream is datastream.googleapis.com/Stream"), nor in the seed, which names no
metric. event_count, unsupported_event_count and the resource labels ``stream_id`` and
``resource_container`` are in Google's own GoogleCloudPlatform/spanner-migration-tool
(common/metrics/queries.go, commit 752ae41d of November 2023). freshness and bytes_count
are the names that published Datastream dashboards and alert policies query (not a Google
source). The ``location`` label is assumed from Google's regional resources, so the
server-side filter uses only ``stream_id`` and the location is checked here only when a
series carries the label.

At runtime the names come from Cloud Monitoring itself: ``DatastreamApi.metric_types`` lists
the project's metric descriptors under ``datastream.googleapis.com/`` (once an hour per
project and process) and ``resolve`` keeps, for each of the four roles, the type a
descriptor on the Datastream stream resource names. Only those are queried; an expected
metric with no descriptor is reported as missing (a warning on each stream of the
project) rather than queried and silently charted as nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .snapshots import aware

RESOURCE_TYPE = "datastream.googleapis.com/Stream"
FRESHNESS = "datastream.googleapis.com/stream/freshness"
EVENT_COUNT = "datastream.googleapis.com/stream/event_count"
BYTES_COUNT = "datastream.googleapis.com/stream/bytes_count"
UNSUPPORTED_EVENT_COUNT = "datastream.googleapis.com/stream/unsupported_event_count"
METRIC_TYPES = (FRESHNESS, EVENT_COUNT, BYTES_COUNT, UNSUPPORTED_EVENT_COUNT)
# What each metric is read as (a StreamMetrics field), and the type its descriptor must have.
ROLES = {
    "freshness": FRESHNESS,
    "events": EVENT_COUNT,
    "bytes": BYTES_COUNT,
    "unsupported": UNSUPPORTED_EVENT_COUNT,
}
DESCRIPTOR_FILTER = 'metric.type = starts_with("datastream.googleapis.com/")'


@dataclass(frozen=True)
class Point:
    """One metric point: the end of its interval and its value."""

    time: datetime
    value: float


@dataclass(frozen=True)
class MetricTypes:
    """The metric types a project's descriptors confirm, by role, and the expected ones they lack."""

    found: dict[str, str]  # role (a StreamMetrics field) -> the metric type its descriptor names
    missing: tuple[str, ...] = ()  # expected metric types with no descriptor, sorted


def resolve(descriptors: dict[str, tuple[str, ...]]) -> MetricTypes:
    """Return the types to query from {descriptor type: its monitored resource types}.

    A role's metric is used only when a descriptor names it and (if the descriptor names
    resources at all) applies it to the Datastream stream resource.
    """
    found = {
        role: metric_type
        for role, metric_type in ROLES.items()
        if metric_type in descriptors
        and (not descriptors[metric_type] or RESOURCE_TYPE in descriptors[metric_type])
    }
    missing = tuple(sorted(t for role, t in ROLES.items() if role not in found))
    return MetricTypes(found, missing)


@dataclass(frozen=True)
class StreamMetrics:
    """One stream's four metrics over a window of ``window_seconds``, points oldest first."""

    stream_id: str
    window_seconds: float
    freshness: tuple[Point, ...] = ()
    events: tuple[Point, ...] = ()
    bytes: tuple[Point, ...] = ()
    unsupported: tuple[Point, ...] = ()
    missing: tuple[str, ...] = ()  # metric types the project has no descriptor of: not read

    @property
    def lag_seconds(self) -> float | None:
        """Return the latest data freshness (None: no point, e.g. a paused stream)."""
        return self.freshness[-1].value if self.freshness else None

    @property
    def events_per_second(self) -> float:
        """Return the events processed per second over the window."""
        return sum(p.value for p in self.events) / self.window_seconds if self.window_seconds else 0.0

    @property
    def bytes_per_second(self) -> float:
        """Return the bytes processed per second over the window."""
        return sum(p.value for p in self.bytes) / self.window_seconds if self.window_seconds else 0.0

    @property
    def unsupported_events(self) -> int:
        """Return how many events Datastream could not process in the window (a warning when > 0)."""
        return int(sum(p.value for p in self.unsupported))


def series_filter(metric_type: str, stream_id: str | None = None) -> str:
    """Return the ListTimeSeries filter of one metric type, for one stream or all of a project."""
    text = f'metric.type = "{metric_type}" AND resource.type = "{RESOURCE_TYPE}"'
    if stream_id is not None:
        text += f' AND resource.labels.stream_id = "{stream_id}"'
    return text


def points(series) -> tuple[Point, ...]:
    """Return a TimeSeries' (protobuf) points oldest first (Cloud Monitoring sends them newest first)."""
    found = [Point(aware(p.interval, "end_time"), _number(p.value)) for p in series.points]
    return tuple(sorted(found, key=lambda p: p.time))


def series_stream(series, location: str | None) -> str | None:
    """Return the stream ID of a series, or None when its location label names another location."""
    labels = series.resource.labels
    if location is not None and labels.get("location", location) != location:
        return None
    return labels.get("stream_id")


def _number(value) -> float:
    """Return a TypedValue as a float (a distribution as its mean)."""
    kind = value.WhichOneof("value")
    if kind in ("int64_value", "double_value"):
        return float(getattr(value, kind))
    if kind == "bool_value":
        return float(value.bool_value)
    if kind == "distribution_value":
        return float(value.distribution_value.mean)
    return 0.0
