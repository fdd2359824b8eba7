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
from .window import Batched, InPlace, Outcome, read_window, read_window_async

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
    except Exception as error:  # noqa: BLE001 - _failed records it, or raises a database error
        return _failed(stream, partition, owner, queue, error), None
    return _settled(stream, partition, queue, store, outcome), outcome


async def read_and_settle_async(
    stream: Stream, partition: Partition, owner: str, queue: Queue, store: Batched, stop, offload
) -> tuple[str, Outcome | None]:
    """read_and_settle on an event loop (a multiplexed live read); its bookkeeping `offload`ed."""
    try:
        outcome = await read_window_async(stream, partition, owner, store, stop, offload)
    except Exception as error:  # noqa: BLE001 - _failed records it, or raises a database error
        return await offload(_failed, stream, partition, owner, queue, error), None
    if outcome.stored is not None and outcome.stored.state == Partition.State.FINISHED:
        return await offload(_settled, stream, partition, queue, store, outcome), outcome  # its children
    return _settled(stream, partition, queue, store, outcome), outcome  # no query: no thread needed


def _failed(stream: Stream, partition: Partition, owner: str, queue: Queue, error: Exception) -> str:
    if isinstance(error, SourceError):
        log_lease("end", partition.pk, owner)
        handle_read_error(stream, partition, owner, error, queue)
        return "error"
    if isinstance(error, DatabaseError):
        log.warning("reading %s of %s stopped on a database error: %s", partition.token, stream.name, error)
        raise error
    # A landing zone refusing writes, a bug: the lease must not wait a whole lease, unseen.
    log.error("reading %s of %s failed unexpectedly", partition.token, stream.name, exc_info=error)
    log_lease("end", partition.pk, owner)
    handle_unexpected_error(stream, partition, owner, error, queue)
    return "error"


def _settled(stream: Stream, partition: Partition, queue: Queue, store, outcome: Outcome) -> str:
    if outcome.stored is None:
        return "lease lost"
    if outcome.stored.state == Partition.State.FINISHED:
        scheduling.schedule_children(outcome.stored, queue)
        scheduling.maybe_finish_stream(getattr(store, "stream", None) or stream)
        return "finished"
    return ""
