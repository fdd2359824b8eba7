"""Change stream readers for streams, cached per worker process.

Connecting the official client costs a session and a channel, so one database handle
is kept per (project, instance, database, endpoint) for the life of the process;
readers on top of it are cheap and made per window.
"""

from __future__ import annotations

import threading

from django.conf import settings

_lock = threading.Lock()
_databases: dict[tuple[str, str, str, str], object] = {}
_dialects: dict[tuple[str, str, str, str], str] = {}


def _client():
    # Imported on first use: the official client is heavy, and beat never reads.
    from .changestream import reader

    return reader


def endpoint_of(stream) -> str:
    """Return the emulator endpoint a stream reads from ('' for real Spanner)."""
    return stream.emulator_host or settings.SPANNER_EMULATOR_HOST


def _key(stream) -> tuple[str, str, str, str]:
    return (stream.project, stream.instance, stream.database, endpoint_of(stream))


def database_for(stream):
    """Return the process-wide client database handle of the stream's database."""
    key = _key(stream)
    with _lock:
        database = _databases.get(key)
        if database is None:
            database = _client().connect(*key[:3], emulator_host=key[3] or None)
            _databases[key] = database
        return database


def dialect_for(stream) -> str:
    """Return the stream's dialect, asking the database once when it is to be detected."""
    if stream.dialect:
        return stream.dialect
    key = _key(stream)
    if key not in _dialects:
        _dialects[key] = _client().detect_dialect(database_for(stream))
    return _dialects[key]


def reader_for(stream, timeout: float | None = None):
    """Return a reader of the stream's change stream."""
    return _client().ChangeStreamReader(
        database_for(stream), stream.change_stream, dialect_for(stream), stream.heartbeat_ms, timeout=timeout
    )


def forget(stream) -> None:
    """Drop the cached handle, e.g. after the endpoint changed or a connection broke for good."""
    with _lock:
        _databases.pop(_key(stream), None)
        _dialects.pop(_key(stream), None)
