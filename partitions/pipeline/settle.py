"""One window read and what ends it, the same for a pool thread (services.py) and a live read (live.py).

A source's error is recorded and retried through the queue; a database error of our own
is raised (the checkpoint already retried it for a lease; the caller's retry or the orphan
sweep takes the partition back); anything else is recorded too, so that a lease is never
left to expire with nobody told. A partition that ended schedules its children.
"""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError

from partitions.models import Partition
from partitions.sources.base import SourceError
from streams.models import Stream

from . import scheduling
from .failures import handle_read_error, handle_unexpected_error
from .leases import log_lease
from .queue import Queue
from .window import InPlace, Outcome, read_window

log = logging.getLogger(__name__)


def read_and_settle(
    stream: Stream,
    partition: Partition,
    owner: str,
    queue: Queue,
    store: InPlace | None = None,
    stop: threading.Event | None = None,
) -> tuple[str, Outcome | None]:
    """Read the partition's next window; return ("", outcome) if it reads on, else why it is over.

    Why: "error" (recorded, retried through the queue), "lease lost", "finished".
    """
    try:
        outcome = read_window(stream, partition, owner, store, stop)
    except SourceError as error:
        log_lease("end", partition.pk, owner)
        handle_read_error(stream, partition, owner, error, queue)
        return "error", None
    except DatabaseError as error:
        log.warning("reading %s of %s stopped on a database error: %s", partition.token, stream.name, error)
        raise
    except Exception as error:
        # A landing zone refusing writes, a bug: the lease must not wait a whole lease, unseen.
        log.exception("reading %s of %s failed unexpectedly", partition.token, stream.name)
        log_lease("end", partition.pk, owner)
        handle_unexpected_error(stream, partition, owner, error, queue)
        return "error", None
    if outcome.stored is None:
        return "lease lost", outcome
    if outcome.stored.state == Partition.State.FINISHED:
        scheduling.schedule_children(outcome.stored, queue)
        scheduling.maybe_finish_stream(getattr(store, "stream", None) or stream)
        return "finished", outcome
    return "", outcome
