"""The simulated streams and objects: scripted by seed, then changed by operations.

A stream follows its Timeline until an operation touches it; from then on it follows its
``track``, a list of (time, state, errors) entries the operations append (DRAINING now,
PAUSED when the pause completes). An object's backfill job follows its scripted schedule
the same way until a manual start or stop gives it a track of its own.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from dataclasses import dataclass, field

import grpc

from partitions.simulator.core.server import Refusal

from .catalog import (
    APPS,
    CONTAINERS,
    DESTINATIONS,
    SOURCES,
    TABLES,
    SimError,
    object_error,
    table_name,
)
from .config import DatastreamSimConfig
from .timeline import Moment, Timeline

ACTIVE_JOBS = ("PENDING", "ACTIVE")


@dataclass(frozen=True)
class Job:
    """An object's backfill job at one instant."""

    state: str
    trigger: str = "TRIGGER_UNSPECIFIED"
    start: float | None = None
    end: float | None = None
    errors: tuple[SimError, ...] = ()


@dataclass
class SimObject:
    """One table of a stream, with its scripted backfill and any manual one."""

    stream: str
    object_id: str
    container: str
    table: str
    display_name: str
    pending_at: float
    active_at: float
    end_at: float
    outcome: str  # COMPLETED, FAILED or UNSUPPORTED
    automatic: bool
    track: list[tuple[float, Job]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """Return the object's resource name."""
        return f"{self.stream}/objects/{self.object_id}"

    def job(self, t: float) -> Job:
        """Return the backfill job at unix time t."""
        if self.track and t >= self.track[0][0]:
            return self.track[bisect.bisect_right([at for at, _ in self.track], t) - 1][1]
        if not self.automatic:
            return Job("NOT_STARTED")
        if t < self.pending_at:
            return Job("NOT_STARTED", "AUTOMATIC")
        if t < self.active_at:
            return Job("PENDING", "AUTOMATIC")
        if t < self.end_at:
            return Job("ACTIVE", "AUTOMATIC", self.active_at)
        errors = () if self.outcome == "COMPLETED" else (self._error(),)
        return Job(self.outcome, "AUTOMATIC", self.active_at, self.end_at, errors)

    def _error(self) -> SimError:
        """Return the error of a failed or unsupported backfill, timed at its end."""
        return object_error(self.outcome, self.display_name, (self.name,), self.end_at)


@dataclass
class SimStream:
    """One stream: its fixed description, its script and what operations did to it."""

    index: int
    stream_id: str
    name: str
    display_name: str
    source: str
    destination: str
    backfill_all: bool
    timeline: Timeline
    events_per_second: float
    row_bytes: int
    unsupported_prone: bool
    objects: list[SimObject] = field(default_factory=list)
    track: list[tuple[float, str, tuple[SimError, ...]]] = field(default_factory=list)
    recovered_at: float | None = None

    def moment(self, t: float) -> Moment:
        """Return the state, its start, the open errors and the last recovery at unix time t."""
        if not self.track or t < self.track[0][0]:
            return self.timeline.at(t)
        at, state, errors = self.track[bisect.bisect_right([e[0] for e in self.track], t) - 1]
        recovered = self.recovered_at if self.recovered_at is not None and self.recovered_at <= t else None
        if recovered is None:
            recovered = self.timeline.at(self.track[0][0]).recovered_at
        return Moment(state, at, errors, recovered)

    def steady(self, now: float, seconds: float) -> bool:
        """Return whether nothing is due to change the stream's state in (now, now + seconds]."""
        end = now + seconds
        if any(now < entry[0] <= end for entry in self.track):
            return False
        if self.track and now >= self.track[0][0]:
            return True  # operated: only operations move it now
        changes = self.timeline.segment_starts(now, end + 1e-6)
        return not [t for t in changes if t > now] and (not self.track or self.track[0][0] > end)

    def schedule(self, entries: list[tuple[float, str, tuple[SimError, ...]]]) -> None:
        """Replace whatever was to come after the first entry with these (an operation began)."""
        first = entries[0][0]
        self.track = [entry for entry in self.track if entry[0] < first] + entries


class World:
    """Every simulated stream of the configured project and location."""

    def __init__(self, config: DatastreamSimConfig):
        """Build every stream of the config from its seed."""
        self.config = config.resolved()
        self.streams: dict[str, SimStream] = {}
        for index in range(self.config.streams):
            stream = _make_stream(self.config, index)
            self.streams[stream.name] = stream
        self.objects = {obj.name: obj for s in self.streams.values() for obj in s.objects}

    def stream(self, name: str) -> SimStream:
        """Return the stream of a resource name, or refuse with NOT_FOUND."""
        stream = self.streams.get(name)
        if stream is None:
            raise Refusal(grpc.StatusCode.NOT_FOUND, f"Resource '{name}' was not found.")
        return stream

    def object(self, name: str) -> tuple[SimStream, SimObject]:
        """Return the stream and object of an object's resource name, or refuse with NOT_FOUND."""
        obj = self.objects.get(name)
        if obj is None:
            stream_name = name.split("/objects/")[0]
            self.stream(stream_name)  # an unknown stream is the better message
            raise Refusal(grpc.StatusCode.NOT_FOUND, f"Stream object '{name}' was not found.")
        return self.streams[obj.stream], obj


def _make_stream(config: DatastreamSimConfig, index: int) -> SimStream:
    """Return stream number ``index`` as the seed makes it: source, script, rates, objects."""
    rng = random.Random(f"{config.seed}:stream:{index}")
    stream_id = f"stream-{index:03d}"
    name = f"{config.parent}/streams/{stream_id}"
    source, destination = rng.choice(SOURCES), rng.choice(DESTINATIONS)
    epoch, cycle = config.epoch, config.cycle
    # One stream in eight starts after the epoch: there are always some NOT_STARTED ones.
    offset = rng.uniform(0.05, 0.2) * cycle if index % 8 == 0 else -rng.uniform(0.0, 3.0) * cycle
    start_at = epoch + offset
    created_at = min(start_at, epoch) - rng.uniform(600.0, 10 * 86400.0)
    timeline = Timeline(name, source, start_at, created_at, cycle, rng)
    stream = SimStream(
        index=index,
        stream_id=stream_id,
        name=name,
        display_name=f"{rng.choice(APPS)}-{source.replace('_', '')}-to-{destination}-{index:03d}",
        source=source,
        destination=destination,
        backfill_all=index % 5 != 4,
        timeline=timeline,
        events_per_second=rng.uniform(5.0, 200.0),
        row_bytes=rng.randint(200, 2000),
        unsupported_prone=index % 6 == 5,
    )
    stream.objects = _make_objects(stream, rng, start_at, cycle)
    return stream


def _make_objects(stream: SimStream, rng: random.Random, start_at: float, cycle: float) -> list[SimObject]:
    """Return a stream's 2-6 tables with their scripted backfills."""
    objects = []
    for j, table in enumerate(rng.sample(TABLES, rng.randint(2, 6))):
        container = rng.choice(CONTAINERS[stream.source])
        shown = table_name(stream.source, container, table)
        pending_at = start_at + j * 0.01 * cycle
        active_at = pending_at + rng.uniform(0.01, 0.03) * cycle
        roll = rng.random()
        outcome = "COMPLETED" if roll < 0.8 else "FAILED" if roll < 0.92 else "UNSUPPORTED"
        digest = hashlib.sha256(f"{stream.name}:{container}.{shown}".encode()).hexdigest()[:16]
        objects.append(
            SimObject(
                stream=stream.name,
                object_id=digest,
                container=container,
                table=shown,
                display_name=f"{container}.{shown}",
                pending_at=pending_at,
                active_at=active_at,
                end_at=active_at + rng.uniform(0.03, 0.15) * cycle,
                outcome=outcome,
                automatic=stream.backfill_all,
            )
        )
    return objects
