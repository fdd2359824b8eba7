"""Poll many Datastream streams in cycles, cheaply, reporting each error once.

Cost of one ``Poller.poll(names)`` cycle, in RPCs:

1. States and errors: per (project, location), ListStreams (one RPC per 1000 streams of
   the location) when at least ``list_threshold`` of its streams are watched, otherwise one
   GetStream per watched stream. Never more than one RPC per stream; 200 streams of one
   location cost one RPC.
2. Objects and backfills, when ``objects_every`` > 0: each stream's objects once every
   ``objects_every`` cycles, staggered by position in the sorted names, so at most
   ceil(N / objects_every) ListStreamObjects per cycle (one page per 1000 objects);
   ``poll(names, objects=True)`` reads them all this cycle.
3. Metrics, every ``metrics_every`` cycles (0: never): four ListTimeSeries per project, one
   per metric type its metric descriptors confirm, covering all its streams at once; the
   descriptors themselves cost one ListMetricDescriptors per project an hour.

Errors are tracked by their UUID across cycles: ``new_errors`` holds each error the first
cycle it is seen, ``cleared_errors`` the keys of those gone since. One stream's failure
(NOT_FOUND, PERMISSION_DENIED) is reported on that stream and does not stop the others.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from partitions.sources.base import PermanentSourceError, SourceError

from .client import DatastreamApi
from .metrics import StreamMetrics
from .snapshots import ErrorSnapshot, ObjectSnapshot, StreamSnapshot

_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/streams/(?P<stream>[^/]+)$")


@dataclass(frozen=True)
class StreamPoll:
    """What one cycle learned about one stream."""

    name: str
    stream: StreamSnapshot | None  # None when it could not be read (see failure)
    new_errors: tuple[ErrorSnapshot, ...] = ()
    cleared_errors: tuple[str, ...] = ()  # keys of errors reported before and gone now
    objects: tuple[ObjectSnapshot, ...] | None = None  # None: not read this cycle
    metrics: StreamMetrics | None = None  # None: not read this cycle (empty: no series in the window)
    failure: SourceError | None = None


@dataclass(frozen=True)
class PollCycle:
    """One cycle: every watched stream's poll, and what the cycle cost."""

    number: int
    streams: dict[str, StreamPoll]
    rpcs: int
    seconds: float


class Poller:
    """Poll a set of streams cycle after cycle, remembering the errors already reported."""

    def __init__(
        self,
        api: DatastreamApi,
        objects_every: int = 0,
        metrics_every: int = 0,
        metrics_window: float = 300.0,
        list_threshold: int = 2,
        workers: int = 8,
    ):
        """Set the cadences (in cycles), the metrics window, when to list rather than get, and parallelism."""
        self.api, self.objects_every, self.metrics_every = api, objects_every, metrics_every
        self.metrics_window, self.list_threshold, self.workers = metrics_window, list_threshold, workers
        self.cycles = 0
        self._seen_stream: dict[str, dict[str, ErrorSnapshot]] = {}
        self._seen_objects: dict[str, dict[str, ErrorSnapshot]] = {}

    def poll(self, names: list[str], objects: bool = False) -> PollCycle:
        """Run one cycle over the streams' names (projects/P/locations/L/streams/S)."""
        started, calls_before = time.monotonic(), self.api.calls
        number, self.cycles = self.cycles, self.cycles + 1
        by_location = _group(names)
        streams, failures = self._states(by_location)
        due = [name for i, name in enumerate(sorted(names)) if objects or self._objects_due(i, number)]
        object_lists = self._objects(due, failures)
        metrics = self._metrics(by_location, failures) if self._due(self.metrics_every, number) else {}
        polls = {
            name: self._stream_poll(
                name, streams.get(name), object_lists.get(name), metrics.get(name), failures
            )
            for name in names
        }
        return PollCycle(number, polls, self.api.calls - calls_before, time.monotonic() - started)

    def _states(self, by_location) -> tuple[dict[str, StreamSnapshot], dict[str, SourceError]]:
        """Return each stream's snapshot, and the failure of each that could not be read."""
        streams: dict[str, StreamSnapshot] = {}
        failures: dict[str, SourceError] = {}
        singles: list[str] = []
        for (project, location), names in by_location.items():
            if len(names) < self.list_threshold:
                singles.extend(names)
                continue
            try:
                listed = {s.name: s for s in self.api.list_streams(project, location)}
            except SourceError as error:
                failures.update(dict.fromkeys(names, error))
                continue
            for name in names:
                if name in listed:
                    streams[name] = listed[name]
                else:
                    failures[name] = PermanentSourceError(f"Stream {name} was not found.", code="NOT_FOUND")
        for name, result in zip(singles, self._each(self.api.get_stream, singles), strict=True):
            (failures if isinstance(result, SourceError) else streams)[name] = result
        return streams, failures

    def _objects(
        self, names: list[str], failures: dict[str, SourceError]
    ) -> dict[str, tuple[ObjectSnapshot, ...]]:
        """Return the objects of each stream given, noting the failure of each that could not be read."""
        found = {}
        for name, result in zip(names, self._each(self.api.list_stream_objects, names), strict=True):
            if isinstance(result, SourceError):
                failures.setdefault(name, result)
            else:
                found[name] = tuple(result)
        return found

    def _metrics(self, by_location, failures) -> dict[str, StreamMetrics]:
        """Return each stream's metrics over the last window: four calls per location.

        A stream with no series in the window (it processed nothing) gets empty metrics, so
        its rates read zero; each names the metric types the project has no descriptor of.
        """
        end = datetime.now(UTC)
        start = end - timedelta(seconds=self.metrics_window)
        found = {}
        for (project, location), names in by_location.items():
            try:
                types = self.api.metric_types(project)
                by_id = self.api.stream_metrics(project, location, start, end, types=types)
            except SourceError as error:
                for name in names:
                    failures.setdefault(name, error)
                continue
            for name in names:
                stream_id = name.rsplit("/", 1)[-1]
                empty = StreamMetrics(stream_id, self.metrics_window, missing=types.missing)
                found[name] = by_id.get(stream_id, empty)
        return found

    def _each(self, fn, names: list[str]) -> list:
        """Return fn(name) for each name, or the SourceError it raised, a few calls at a time."""

        def one(name):
            """Return fn(name), or the SourceError it raised."""
            try:
                return fn(name)
            except SourceError as error:
                return error

        if len(names) <= 1:
            return [one(name) for name in names]
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ds-poll") as pool:
            return list(pool.map(one, names))

    def _stream_poll(self, name, stream, objects, metrics, failures) -> StreamPoll:
        """Return one stream's poll, with the errors new since the last cycle and those gone."""
        if stream is None:
            return StreamPoll(name, None, objects=objects, metrics=metrics, failure=failures.get(name))
        stream_now = {e.key: e for e in stream.errors}
        objects_now = self._seen_objects.get(name, {})  # objects not read this cycle: as last known
        if objects is not None:
            objects_now = {e.key: e for obj in objects for e in _object_errors(obj)}
        previous = {**self._seen_objects.get(name, {}), **self._seen_stream.get(name, {})}
        current = {**objects_now, **stream_now}
        self._seen_stream[name], self._seen_objects[name] = stream_now, objects_now
        new = tuple(e for k, e in current.items() if k not in previous)
        cleared = tuple(k for k in previous if k not in current)
        return StreamPoll(name, stream, new, cleared, objects, metrics, failures.get(name))

    def _objects_due(self, position: int, number: int) -> bool:
        """Return whether the stream at this position of the sorted names has its objects read now."""
        return self.objects_every > 0 and (number + position) % self.objects_every == 0

    @staticmethod
    def _due(every: int, number: int) -> bool:
        """Return whether a cadence of ``every`` cycles falls on this cycle (0: never)."""
        return every > 0 and number % every == 0


def _object_errors(obj: ObjectSnapshot) -> tuple[ErrorSnapshot, ...]:
    """Return an object's own errors and its backfill job's."""
    return obj.errors + (obj.backfill.errors if obj.backfill else ())


def _group(names: list[str]) -> dict[tuple[str, str], list[str]]:
    """Return the names grouped by (project, location), refusing one that is not a stream's name."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        match = _NAME.match(name)
        if match is None:
            raise ValueError(f"not a Datastream stream name: {name!r}")
        groups.setdefault((match["project"], match["location"]), []).append(name)
    return groups
