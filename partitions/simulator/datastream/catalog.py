"""Names and messages the simulator draws from: sources, tables, and Datastream-like errors."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

SOURCES = ("mysql", "oracle", "postgresql", "sql_server")
DESTINATIONS = ("gcs", "bigquery")
APPS = ("orders", "billing", "crm", "inventory", "payments", "analytics", "shipping", "ledger")
TABLES = ("orders", "customers", "payments", "invoices", "items", "shipments", "users", "events", "refunds")
# The container of a table per source: a MySQL database, an Oracle/PostgreSQL/SQL Server schema.
CONTAINERS = {
    "mysql": ("shop", "crm", "billing"),
    "oracle": ("SALES", "HR", "FIN"),
    "postgresql": ("public", "app"),
    "sql_server": ("dbo", "sales"),
}
_NAMESPACE = uuid.UUID("5d1c6c0e-2f5b-4d8e-9a53-2f0c3b7e9d11")


@dataclass(frozen=True)
class SimError:
    """One error as Datastream reports it on a stream, an object or a backfill job."""

    reason: str
    uuid: str
    message: str
    time: float  # unix seconds
    details: dict[str, str] = field(default_factory=dict)


def error_uuid(*key: object) -> str:
    """Return a stable UUID for an error episode, so repeated reads show the same error."""
    return str(uuid.uuid5(_NAMESPACE, ":".join(str(part) for part in key)))


def table_name(source: str, container: str, table: str) -> str:
    """Return how the source names a table: upper case for Oracle, as is elsewhere."""
    return table.upper() if source == "oracle" else table


_LOG_ERRORS = {
    "mysql": ("Binary log unreadable", "Datastream can't read the binary log file mysql-bin.{n:06d}: "
              "the file was purged from the source before it was read."),
    "oracle": ("Archived log missing", "The archived redo log that contains SCN {n} is no longer "
               "available on the source database."),
    "postgresql": ("Replication slot lost", "The replication slot datastream_slot_{n} no longer exists "
                   "on the source database."),
    "sql_server": ("Transaction log truncated", "The transaction log was truncated past LSN "
                   "0000{n:04X}:00000001:0001 before Datastream read it."),
}  # fmt: skip


def stream_error(kind: str, source: str, key: tuple, at: float, seq: int) -> SimError:
    """Return the error of a kind ("connect", "log", "lost") on a stream of a source type."""
    if kind == "connect":
        return SimError(
            "Source connection failed",
            error_uuid(*key, kind),
            "Datastream failed to connect to the source database: connection timed out after 30 "
            "seconds. Datastream retries automatically.",
            at,
            {"retry": "automatic"},
        )
    if kind == "log":
        reason, template = _LOG_ERRORS[source]
        return SimError(reason, error_uuid(*key, kind), template.format(n=seq), at, {"source": source})
    return SimError(
        "Stream failed permanently",
        error_uuid(*key, kind),
        "Datastream can't continue from the last position it read because the source no longer "
        "retains it. Recover the stream from another start position.",
        at,
        {"recoverable": "true"},
    )


def object_error(outcome: str, display_name: str, key: tuple, at: float) -> SimError:
    """Return the error of a failed or unsupported backfill of one table."""
    if outcome == "UNSUPPORTED":
        return SimError(
            "Unsupported table",
            error_uuid(*key, outcome),
            f"Table {display_name} can't be backfilled: it has no primary key and a column of an "
            "unsupported type.",
            at,
        )
    return SimError(
        "Backfill failed",
        error_uuid(*key, outcome),
        f"Datastream couldn't read table {display_name}: permission denied for the user datastream.",
        at,
    )


def position_unavailable(stream: str, position: str, at: float) -> SimError:
    """Return the error of a recovery whose specific start position the source no longer has."""
    return SimError(
        "Start position unavailable",
        error_uuid(stream, "position", position, at),
        f"The start position {position} is no longer available in the source's logs. Choose a "
        "position the source still retains.",
        at,
    )
