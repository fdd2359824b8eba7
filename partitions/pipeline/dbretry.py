"""Database errors of our own: retried where the work is, never counted against the source.

A locked SQLite file, a PostgreSQL restart or a dropped connection says nothing about
the stream's source: the pipeline retries the statement (a checkpoint, whose records are
already landed, is stored again without re-reading its window) and never moves the
stream to FAILED for it. Each retry logs one line, no traceback: the error is expected.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import DatabaseError, connections

log = logging.getLogger(__name__)
T = TypeVar("T")
FIRST_DELAY = 0.2
MAX_DELAY = 5.0


def retrying(what: str, call: Callable[[], T]) -> T:
    """Return call(), retried after a database error with a capped backoff for up to one lease.

    Past one lease the error is raised: by then the lease (renewed by the database
    this call cannot reach) may be someone else's, and the task's own retry takes over.
    """
    deadline = time.monotonic() + settings.CDC_LEASE_SECONDS
    delay = FIRST_DELAY
    while True:
        try:
            return call()
        except DatabaseError as error:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("%s failed, retrying in %.1fs: %s: %s", what, delay, type(error).__name__, error)
            replace_broken_connections()
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)


def replace_broken_connections() -> None:
    """Close this thread's connections that a database error left unusable (the next use reconnects).

    Not one inside a transaction: that is the caller's to roll back (Django would close
    any connection whose autocommit differs from its setting, the transaction with it).
    """
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
