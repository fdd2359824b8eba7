"""Cloud Monitoring as the simulator serves it: Datastream's metric descriptors and time series.

The metric types are the documented ones (see partitions/sources/datastream/metrics.py for
where each name was confirmed). Their kinds, value types and units are this simulator's
assumptions, stated in DESCRIPTORS. Points are computed from each stream's state at
every multiple of the metric step: a RUNNING stream is fresh and busy; STARTING, DRAINING
and MAINTENANCE ones lag a little and move less; a FAILED one moves nothing and its
freshness grows with the failure's age; a NOT_STARTED, PAUSED or FAILED_PERMANENTLY one
reports no points at all, as a stream that processes nothing has nothing to report.
Points are returned newest first, as Cloud Monitoring does.
"""

from __future__ import annotations

import hashlib
import math
import re

from google.api import metric_pb2
from google.api import monitored_resource_pb2 as mr
from google.cloud import monitoring_v3 as mon
from grpc import StatusCode

from partitions.simulator.core.server import Refusal

from .world import SimStream

RESOURCE_TYPE = "datastream.googleapis.com/Stream"
PREFIX = "datastream.googleapis.com/stream/"
_K, _V = metric_pb2.MetricDescriptor.MetricKind, metric_pb2.MetricDescriptor.ValueType
# (type suffix, kind, value type, unit, display name, description) - kinds and units assumed.
DESCRIPTORS = (
    ("freshness", _K.GAUGE, _V.INT64, "s", "Data freshness",
     "Seconds between when data was committed to the source and when Datastream read it; 0 when "
     "there are no new events."),
    ("event_count", _K.DELTA, _V.INT64, "1", "Event count", "Events Datastream processed."),
    ("bytes_count", _K.DELTA, _V.INT64, "By", "Byte count", "Bytes Datastream processed."),
    ("unsupported_event_count", _K.DELTA, _V.INT64, "1", "Unsupported event count",
     "Events Datastream could not process from the source to the destination."),
    ("total_latencies", _K.DELTA, _V.DISTRIBUTION, "s", "Total latencies",
     "Time between an event's write to the source and its write to the destination (not served)."),
    ("system_latencies", _K.DELTA, _V.DISTRIBUTION, "s", "System latencies",
     "Time Datastream took to process an event (not served)."),
)  # fmt: skip
SERVED = ("freshness", "event_count", "bytes_count", "unsupported_event_count")
_CLAUSE = re.compile(
    r'\s*(?P<lhs>[a-z]+\.(?:type|labels?\.(?:"[a-z_]+"|[a-z_]+)))\s*=\s*'
    r'(?P<rhs>"[^"]*"|starts_with\(\s*"[^"]*"\s*\))\s*(?:AND\s+|$)',
    re.IGNORECASE,
)
_MAX_POINTS = 100_000  # per series: a day at a one-second step
# How much of its usual event rate a stream moves in each state that reports metrics.
_ACTIVITY = {"RUNNING": 1.0, "STARTING": 0.3, "DRAINING": 0.5, "MAINTENANCE": 0.5, "FAILED": 0.0}
_TimeSeries = mon.TimeSeries.pb()


def descriptors(project: str, missing: tuple[str, ...] = ()) -> list[metric_pb2.MetricDescriptor]:
    """Return every Datastream metric descriptor of a project but those of the ``missing`` suffixes."""
    return [
        metric_pb2.MetricDescriptor(
            name=f"projects/{project}/metricDescriptors/{PREFIX}{suffix}",
            type=PREFIX + suffix,
            metric_kind=kind,
            value_type=value_type,
            unit=unit,
            display_name=display,
            description=text,
            monitored_resource_types=[RESOURCE_TYPE],
        )
        for suffix, kind, value_type, unit, display, text in DESCRIPTORS
        if suffix not in missing
    ]


def parse_filter(text: str) -> list[tuple[str, str, bool]]:
    """Return (field, value, is_prefix) clauses of a filter such as metric.type = "X" AND ...

    Only equality and starts_with joined by AND are understood; anything else is refused,
    so a client never gets a silently wrong answer.
    """
    clauses, position, text = [], 0, text.strip()
    while position < len(text):
        match = _CLAUSE.match(text, position)
        if match is None:
            raise Refusal(StatusCode.INVALID_ARGUMENT, f"Invalid filter: cannot parse {text[position:]!r}.")
        lhs, rhs = match["lhs"].lower().replace('"', ""), match["rhs"]
        lhs = re.sub(r"\.label\.", ".labels.", lhs)
        prefix = rhs.startswith("starts_with")
        clauses.append((lhs, rhs[rhs.index('"') + 1 : rhs.rindex('"')], prefix))
        position = match.end()
    return clauses


def matches(clauses, fields: dict[str, str]) -> bool:
    """Return whether a resource's fields satisfy every clause (unknown fields never match)."""
    for name, value, prefix in clauses:
        have = fields.get(name)
        if have is None or not (have.startswith(value) if prefix else have == value):
            return False
    return True


def series_fields(stream: SimStream, project: str, location: str, metric_type: str) -> dict[str, str]:
    """Return the filterable fields of one stream's series of one metric type."""
    return {
        "metric.type": metric_type,
        "resource.type": RESOURCE_TYPE,
        "resource.labels.resource_container": project,
        "resource.labels.location": location,
        "resource.labels.stream_id": stream.stream_id,
    }


def time_series(stream, suffix, project, location, start, end, step, seed, headers_only=False):
    """Return one stream's series (a protobuf TimeSeries) of one metric over (start, end], or None.

    Built as plain protobuf rather than proto-plus: a project-wide query renders every
    stream's series, and proto-plus wrapping would be most of the simulator's time.
    """
    kind, value_type, unit = next((k, v, u) for s, k, v, u, _, _ in DESCRIPTORS if s == suffix)
    points = [] if suffix not in SERVED else _points(stream, suffix, start, end, step, seed)
    if not points:
        return None
    labels = {"resource_container": project, "location": location, "stream_id": stream.stream_id}
    result = _TimeSeries(
        metric=metric_pb2.Metric(type=PREFIX + suffix),
        resource=mr.MonitoredResource(type=RESOURCE_TYPE, labels=labels),
        metric_kind=kind,
        value_type=value_type,
        unit=unit,
    )
    if not headers_only:
        for at, value in reversed(points):
            point = result.points.add()
            point.interval.end_time.FromNanoseconds(int(at * 1e9))
            point.interval.start_time.FromNanoseconds(int((at if kind == _K.GAUGE else at - step) * 1e9))
            point.value.int64_value = value
    return result


def _points(stream: SimStream, suffix: str, start: float, end: float, step: float, seed: int):
    """Return (time, value) of every point in (start, end] on the step grid; no point where none is due."""
    first = max(math.floor(start / step) + 1, math.ceil(end / step) - _MAX_POINTS)
    points = []
    for n in range(first, math.floor(end / step) + 1):
        value = _value(stream, suffix, n * step, step, _uniform(seed, stream.index, suffix, n))
        if value is not None:
            points.append((n * step, value))
    return points


def _uniform(*key) -> float:
    """Return a number in [0, 1) fixed by the key: the same point always has the same value."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _value(stream: SimStream, suffix: str, at: float, step: float, u: float) -> int | None:
    """Return one point's value from the stream's state at that time, or None where it reports nothing."""
    moment = stream.moment(at)
    share = _ACTIVITY.get(moment.state)
    if share is None:
        return None
    if suffix == "freshness":
        if moment.state == "FAILED":
            return int(at - moment.since) + 30
        return int(2 + 8 * u) if moment.state == "RUNNING" else int(20 + 40 * u)
    events = int(stream.events_per_second * step * share * (0.6 + 0.8 * u))
    if suffix == "event_count":
        return events
    if suffix == "bytes_count":
        return events * stream.row_bytes
    # unsupported_event_count: now and then 1-3 on the streams prone to it, while they run
    return 1 + int(u * 10) if stream.unsupported_prone and share > 0 and u < 0.3 else 0
