"""What a Datastream simulator serves, and the clock it serves it by."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, replace

_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_LOCATION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
# Datastream's metric types under datastream.googleapis.com/stream/ (monitoring.py describes them).
METRIC_SUFFIXES = (
    "freshness", "event_count", "bytes_count", "unsupported_event_count",
    "total_latencies", "system_latencies",
)  # fmt: skip


@dataclass(frozen=True)
class DatastreamSimConfig:
    """The simulated streams of one project and location, and how fast everything moves.

    ``cycle`` is the length in seconds of one pass of a stream's scripted states (every
    state once); ``operation_seconds`` how long a pause, resume or recovery runs;
    ``backfill_seconds`` how long a manually started backfill runs; ``metric_step`` the
    spacing of metric points; ``missing_metrics`` the metric type suffixes (e.g. ``freshness``)
    whose descriptors Cloud Monitoring lacks in the project. ``epoch`` (unix seconds)
    anchors every timeline: the same seed and epoch serve the same streams, states, errors
    and metrics.
    """

    seed: int = 1
    streams: int = 20
    project: str = "demo-project"
    location: str = "us-central1"
    cycle: float = 1800.0
    operation_seconds: float = 3.0
    backfill_seconds: float = 20.0
    metric_step: float = 60.0
    epoch: float | None = None
    max_workers: int = 16
    missing_metrics: tuple[str, ...] = ()

    def resolved(self) -> DatastreamSimConfig:
        """Return the config checked, with the epoch fixed (default: now, floored to the minute)."""
        problems = [
            ("--streams must be between 1 and 10000", not 1 <= self.streams <= 10_000),
            ("--project must be a project ID such as demo-project", not _PROJECT.match(self.project)),
            ("--location must be a region such as us-central1", not _LOCATION.match(self.location)),
            ("--cycle must be at least 10 seconds", self.cycle < 10),
            ("--operation-seconds must be between 0 and 600", not 0 <= self.operation_seconds <= 600),
            ("--backfill-seconds must be between 1 and 86400", not 1 <= self.backfill_seconds <= 86_400),
            ("--metric-step must be between 1 and 3600 seconds", not 1 <= self.metric_step <= 3600),
            ("--max-workers must be at least 1", self.max_workers < 1),
            (
                f"--missing-metric must be one of {', '.join(METRIC_SUFFIXES)}",
                not set(self.missing_metrics) <= set(METRIC_SUFFIXES),
            ),
        ]
        for message, bad in problems:
            if bad:
                raise ValueError(message)
        if self.epoch is not None:
            return self
        return replace(self, epoch=float(int(time.time()) // 60 * 60))

    @property
    def parent(self) -> str:
        """Return projects/P/locations/L, the parent of every simulated stream."""
        return f"projects/{self.project}/locations/{self.location}"


class SimClock:
    """The simulator's wall clock: real time plus an offset tests may move forward."""

    def __init__(self) -> None:
        """Start at real time, no offset."""
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """Return the simulated time in unix seconds."""
        with self._lock:
            return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        """Jump the clock forward (a test skipping through a stream's scripted states)."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        with self._lock:
            self._offset += seconds
