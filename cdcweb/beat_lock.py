"""One beat at a time: a beat holds a lock for as long as it runs; another one waits as a standby.

Two beat processes (two hosts each started with one, or a beat started twice) would both
send every periodic task. Before beat's first tick, ``hold()`` takes:

- on PostgreSQL (the embedded default and production): a session advisory lock, on a
  connection of its own. The server ends it when the holder's connection ends, so a
  standby takes over within ``POLL_SECONDS`` of the holder dying. A holder whose
  connection ends (a database restart) takes the lock again on a new connection; if a
  standby was faster, it exits (status 3) rather than risk two beats, and its supervisor
  starts it again, as a standby;
- on SQLite (one host only): an exclusive lock on ``CDC_VAR_DIR/beat.lock``.

It needs no Redis and no other scheduler (celery-redbeat would tie beat to a Redis broker).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections

log = logging.getLogger(__name__)
# The advisory lock's key: "cdcbeat" in ASCII, within PostgreSQL's bigint.
LOCK_KEY = int.from_bytes(b"cdcbeat", "big")
POLL_SECONDS = 2.0
LOST_EXIT_STATUS = 3


def hold(stop: threading.Event | None = None) -> object | None:
    """Block until this process holds the beat lock; return what holds it (keep it referenced).

    Returns None when `stop` is set before the lock is had.
    """
    stop = stop or threading.Event()
    if connections["default"].vendor == "postgresql":
        return _hold_advisory(stop)
    return _hold_file(Path(settings.VAR_DIR) / "beat.lock", stop)


def _hold_advisory(stop: threading.Event):
    connection = connections.create_connection("default")
    said = False
    while not stop.is_set():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
                if cursor.fetchone()[0]:
                    log.warning("this beat holds the beat lock: it schedules (pid %s)", os.getpid())
                    connection.inc_thread_sharing()  # from now on only the watcher uses it
                    threading.Thread(target=_watch, args=(connection,), name="beat-lock", daemon=True).start()
                    return connection
        except DatabaseError as error:
            log.warning("cannot reach the database for the beat lock, retrying: %s", error)
            connection.close()
        if not said:
            log.warning("another beat holds the beat lock: this one waits as a standby")
            said = True
        stop.wait(POLL_SECONDS)
    return None


def _watch(connection) -> None:
    """Keep the lock: after its connection ends (a database restart), take it again on a new one.

    If another beat took it meanwhile, exit: two beats must never both schedule. So does
    any error of the watcher itself: without it, nobody would know the lock was lost.
    """
    try:
        _keep(connection)
    except BaseException:
        log.exception("the beat lock's watcher failed: exiting so that only one beat schedules")
        os._exit(LOST_EXIT_STATUS)


def _keep(connection) -> None:
    while True:
        threading.Event().wait(POLL_SECONDS)
        if _still_held(connection):
            continue
        connection.close()
        while not _still_held(connection, retake=True):
            if _held_elsewhere(connection):
                log.error("another beat holds the beat lock now: exiting so that only one beat schedules")
                os._exit(LOST_EXIT_STATUS)
            threading.Event().wait(POLL_SECONDS / 4)
        log.warning("the beat lock's connection ended; this beat holds the lock again")


# The lock's row in pg_locks: a bigint advisory key shows as (classid, objid) = (high, low) 32 bits.
HELD = (
    "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = %s "
    "AND objid::bigint = %s AND granted"
)


def _still_held(connection, retake: bool = False) -> bool:
    mine = HELD + " AND pid = pg_backend_pid()"
    try:
        with connection.cursor() as cursor:
            if retake:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
            else:
                cursor.execute(mine, [LOCK_KEY >> 32, LOCK_KEY & 0xFFFFFFFF])
            return bool(cursor.fetchone()[0])
    except DatabaseError:
        connection.close()
        return False


def _held_elsewhere(connection) -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute(HELD, [LOCK_KEY >> 32, LOCK_KEY & 0xFFFFFFFF])
            return bool(cursor.fetchone()[0])
    except DatabaseError:
        connection.close()
        return False  # the database is away: nobody can take it meanwhile


def _hold_file(path: Path, stop: threading.Event):
    handle = open(path, "a")  # noqa: SIM115 - held open for the life of the process
    said = False
    while not stop.is_set():
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not said:
                log.warning("another beat holds %s: this one waits as a standby", path)
                said = True
            stop.wait(POLL_SECONDS)
            continue
        log.warning("this beat holds the beat lock %s: it schedules (pid %s)", path, os.getpid())
        return handle
    handle.close()
    return None
