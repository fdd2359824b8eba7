"""Plain frozen snapshots of what the Datastream v1 API says about streams and their objects.

Nothing here keeps a protobuf: callers (tasks, pages, tests) get values they can compare,
hash, pickle and store. Times are aware UTC datetimes, None when the API leaves them unset.
The v1 StreamObject has no "last event time" field, so ObjectSnapshot has none either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import proto
from google.cloud import datastream_v1 as ds

_SOURCE_SUFFIX = "_source_config"
_DESTINATION_SUFFIX = "_destination_config"


@dataclass(frozen=True)
class ErrorSnapshot:
    """One error Datastream reports on a stream, an object or a backfill job."""

    reason: str
    uuid: str
    message: str
    error_time: datetime | None
    details: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def key(self) -> str:
        """Return the error's identity across polls: its UUID, or its content when it has none."""
        when = self.error_time.isoformat() if self.error_time else ""
        return self.uuid or f"{self.reason}|{self.message}|{when}"


@dataclass(frozen=True)
class StreamSnapshot:
    """A stream as one read of the API saw it (``state`` is Datastream's, MAINTENANCE included)."""

    name: str
    display_name: str
    state: str
    source_type: str  # mysql, oracle, postgresql, sql_server, ... ("" when unset)
    destination_type: str  # gcs, bigquery ("" when unset)
    errors: tuple[ErrorSnapshot, ...]
    last_recovery_time: datetime | None
    backfill_strategy: str  # "all", "none" or "" (unset)
    create_time: datetime | None = None
    update_time: datetime | None = None

    @property
    def stream_id(self) -> str:
        """Return the last part of the stream's name."""
        return self.name.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class BackfillSnapshot:
    """The latest backfill job of an object."""

    state: str  # NOT_STARTED, PENDING, ACTIVE, STOPPED, FAILED, COMPLETED, UNSUPPORTED
    trigger: str  # AUTOMATIC, MANUAL or TRIGGER_UNSPECIFIED
    last_start_time: datetime | None
    last_end_time: datetime | None
    errors: tuple[ErrorSnapshot, ...]


@dataclass(frozen=True)
class ObjectSnapshot:
    """One object (a table) of a stream."""

    name: str
    display_name: str
    source_object: str  # e.g. schema.table, as the source names it
    backfill: BackfillSnapshot | None
    errors: tuple[ErrorSnapshot, ...]

    @property
    def object_id(self) -> str:
        """Return the last part of the object's name."""
        return self.name.rsplit("/", 1)[-1]


def aware(message, field_name: str) -> datetime | None:
    """Return a Timestamp field of a protobuf message as an aware UTC datetime (None when unset)."""
    if not message.HasField(field_name):
        return None
    return getattr(message, field_name).ToDatetime(tzinfo=UTC)


def error_snapshot(error) -> ErrorSnapshot:
    """Return the snapshot of one v1 Error (protobuf)."""
    return ErrorSnapshot(
        reason=error.reason,
        uuid=error.error_uuid,
        message=error.message,
        error_time=aware(error, "error_time"),
        details=dict(error.details),
    )


def errors_of(errors) -> tuple[ErrorSnapshot, ...]:
    """Return the snapshots of repeated v1 Errors, each error once (the API may repeat one)."""
    unique = {}
    for error in errors:
        snapshot = error_snapshot(error)
        unique.setdefault(snapshot.key, snapshot)
    return tuple(unique.values())


def stream_snapshot(stream) -> StreamSnapshot:
    """Return the snapshot of one v1 Stream (protobuf or proto-plus)."""
    pb = _raw(stream)
    return StreamSnapshot(
        name=pb.name,
        display_name=pb.display_name,
        state=_name(ds.Stream.State, pb.state),
        source_type=_oneof(pb.source_config, "source_stream_config", _SOURCE_SUFFIX),
        destination_type=_oneof(pb.destination_config, "destination_stream_config", _DESTINATION_SUFFIX),
        errors=errors_of(pb.errors),
        last_recovery_time=aware(pb, "last_recovery_time"),
        backfill_strategy=(pb.WhichOneof("backfill_strategy") or "").removeprefix("backfill_"),
        create_time=aware(pb, "create_time"),
        update_time=aware(pb, "update_time"),
    )


def object_snapshot(obj) -> ObjectSnapshot:
    """Return the snapshot of one v1 StreamObject (protobuf or proto-plus)."""
    pb = _raw(obj)
    backfill = None
    if pb.HasField("backfill_job"):
        job = pb.backfill_job
        backfill = BackfillSnapshot(
            state=_name(ds.BackfillJob.State, job.state),
            trigger=_name(ds.BackfillJob.Trigger, job.trigger),
            last_start_time=aware(job, "last_start_time"),
            last_end_time=aware(job, "last_end_time"),
            errors=errors_of(job.errors),
        )
    return ObjectSnapshot(
        name=pb.name,
        display_name=pb.display_name,
        source_object=_identifier(pb.source_object),
        backfill=backfill,
        errors=errors_of(pb.errors),
    )


def _raw(message):
    """Return the protobuf of a proto-plus message; a protobuf as it is (reading it is faster)."""
    return type(message).pb(message) if isinstance(message, proto.Message) else message


def _name(enum, value: int) -> str:
    """Return an enum value's name, or UNKNOWN_<n> for a value newer than this client."""
    try:
        return enum(value).name
    except ValueError:  # a value newer than this client: keep it visible rather than fail
        return f"UNKNOWN_{value}"


def _oneof(message, group: str, suffix: str) -> str:
    """Return which member of a oneof is set, without its suffix (mysql_source_config: mysql)."""
    return (message.WhichOneof(group) or "").removesuffix(suffix)


def _identifier(identifier) -> str:
    """Return a source object identifier as the source names it: schema.table, database.table."""
    kind = identifier.WhichOneof("source_identifier")
    if kind is None:
        return ""
    # Set fields in field-number order: schema or database first, then the table.
    return ".".join(str(value) for _, value in getattr(identifier, kind).ListFields())
