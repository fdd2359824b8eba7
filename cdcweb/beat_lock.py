"""One beat at a time: a beat holds a lock for as long as it runs; another one waits as a standby.

Two beat processes (two hosts each started with one, or a beat started twice) would both
send every periodic task. Before beat's first tick, ``hold()`` takes:

- on PostgreSQL (the embedded default and production): a session advisory lock, on a
  connection of its own. The server ends it when the holder's connection ends, so a
  standby takes over within ``POLL_SECONDS`` of the holder dying. A holder that loses
  its connection (a database restart) may have lost the lock to a standby: it exits
  (status 3) rather than risk two beats, and its supervisor starts it again, as a standby;
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
    """Exit the process if the lock's connection ends: a standby may hold the lock by then."""
    while True:
        threading.Event().wait(POLL_SECONDS)
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
                )
                if cursor.fetchone() is not None:
                    continue
        except DatabaseError:
            pass
        log.error("the beat lock's connection ended: exiting so that only one beat schedules")
        os._exit(LOST_EXIT_STATUS)


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
