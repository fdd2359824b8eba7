"""Register a location's Datastream streams (or one of them) as cdcweb streams to watch.

One ListStreams call lists the location (or one GetStream reads the one stream asked
for); each stream not registered yet becomes a Stream of the Datastream kind, named by
its stream ID (or project.location.ID when that name is taken by another stream), and
its state, errors and details are written at once, as a poll would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from partitions.sources.base import SettingsError
from partitions.sources.datastream.client import shared_api
from partitions.sources.datastream.kind import KIND
from partitions.sources.datastream.poll import PollCycle, StreamPoll
from partitions.sources.datastream.snapshots import StreamSnapshot
from streams.models import Stream

from .polling import write_cycle


@dataclass
class Imported:
    """What an import did: the streams it registered and the names of those already watched."""

    created: list[Stream] = field(default_factory=list)
    existing: list[Stream] = field(default_factory=list)


def import_streams(
    project: str, location: str, stream_id: str | None = None, *, log_retention_hours: int | None = None
) -> Imported:
    """Register every stream of the location (or the one named); raise SettingsError or SourceError."""
    values = {"project": project, "location": location, "stream_id": stream_id or "placeholder"}
    if log_retention_hours is not None:
        values["log_retention_hours"] = log_retention_hours
    cleaned = KIND.clean(values)
    api = shared_api()
    if stream_id:
        found = [api.get_stream(f"projects/{project}/locations/{location}/streams/{stream_id}")]
    else:
        found = api.list_streams(project, location)
    done = Imported()
    by_name: dict[str, Stream] = {}
    with transaction.atomic():
        for snapshot in found:
            connection = {**cleaned, "stream_id": snapshot.stream_id}
            stream = _existing(connection)
            if stream is not None:
                done.existing.append(stream)
                continue
            stream = Stream.objects.create(
                name=_free_name(snapshot, project, location),
                source_kind=KIND.name,
                connection=connection,
            )
            done.created.append(stream)
            by_name[snapshot.name] = stream
        if by_name:
            polls = {name: StreamPoll(name, s) for name, s in _snapshots(found, by_name).items()}
            write_cycle(PollCycle(0, polls, 0, 0.0), by_name, timezone.now())
    return done


def _snapshots(found: list[StreamSnapshot], by_name: dict[str, Stream]) -> dict[str, StreamSnapshot]:
    """Return the snapshots of the streams just registered, by name."""
    return {s.name: s for s in found if s.name in by_name}


def _existing(connection: dict) -> Stream | None:
    """Return the stream already watching this Datastream stream, if any."""
    return Stream.objects.filter(
        source_kind=KIND.name,
        connection__project=connection["project"],
        connection__location=connection["location"],
        connection__stream_id=connection["stream_id"],
    ).first()


def _free_name(snapshot: StreamSnapshot, project: str, location: str) -> str:
    """Return the stream ID as a name, or project.location.ID when another stream has that name."""
    name = snapshot.stream_id
    if Stream.objects.filter(name=name).exists():
        name = f"{project}.{location}.{snapshot.stream_id}"[:100]
    if Stream.objects.filter(name=name).exists():
        raise SettingsError({"stream_id": f"a stream named {name!r} already exists"})
    return name
