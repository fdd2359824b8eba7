"""This process's live reads: each partition at the live edge read on by a thread of its own.

A read at the live edge mostly waits for its source (a heartbeat every couple of seconds,
a record now and then). Held by a Celery pool thread for its whole window, it made a host's
width the size of that pool, and the pool's threads each wanted a database connection.
Here, a read whose window reaches the live edge is handed (with its lease) to a thread of
its own, which reads window after window, polls after poll, lands what it reads and hands
its checkpoints to the process's batch writer (batch.py): it holds no database connection
and no pool thread, so a host follows as many live partitions as its source serves, with
no setting to raise. Celery's pool is left to catching up, a few threads per core.

The thread stops when the partition ends (its children are scheduled), when the stream
stops reading (the lease is given back and draining settles), when the lease is lost, on
an error (recorded and retried through the queue, as a pool thread would) and when the
worker shuts down (it checkpoints and gives the lease back, so another reader takes over
at once). A process that dies leaves its leases to expire: the orphan sweep re-queues them.
"""

from __future__ import annotations

import logging
import threading

from django.db import connections

from partitions.models import Partition
from streams.models import Stream

from . import leases, scheduling
from .leases import log_lease
from .queue import Queue
from .settle import read_and_settle
from .window import Batched

log = logging.getLogger(__name__)


class LiveReads:
    """The live reads of this process, one thread each; stopped together when the worker stops."""

    def __init__(self) -> None:
        self._threads: dict[int, threading.Thread] = {}
        self._lock = threading.Lock()
        self.stopping = threading.Event()

    def adopt(self, partition: Partition, stream: Stream, owner: str, queue: Queue) -> bool:
        """Read the partition on in a thread of its own, under `owner`'s lease; False if stopping."""
        if self.stopping.is_set():
            return False
        thread = threading.Thread(
            target=self._follow,
            args=(partition, stream, owner, queue),
            name=f"live-{partition.pk}",
            daemon=True,
        )
        with self._lock:
            self._threads[partition.pk] = thread
        thread.start()
        return True

    def count(self) -> int:
        """Return how many live reads this process runs now."""
        with self._lock:
            return len(self._threads)

    def stop_all(self, timeout: float = 15.0) -> int:
        """Ask every live read to checkpoint and give its lease back; wait up to `timeout`."""
        self.stopping.set()
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout / max(1, len(threads)) + 0.1)
        return len(threads)

    def _follow(self, partition: Partition, stream: Stream, owner: str, queue: Queue) -> None:
        try:
            follow(partition, stream, owner, queue, self.stopping)
        except Exception:
            log.exception("the live read of partition %s stopped unexpectedly", partition.pk)
        finally:
            connections.close_all()  # an error's bookkeeping may have opened one
            with self._lock:
                self._threads.pop(partition.pk, None)


def follow(partition: Partition, stream: Stream, owner: str, queue: Queue, stop: threading.Event) -> str:
    """Read the partition window after window while its stream reads on; return why it stopped."""
    store = Batched()
    while True:
        done, outcome = read_and_settle(stream, partition, owner, queue, store, stop)
        if done:
            return done
        stream = store.stream or stream
        if not outcome.go_on or stop.is_set() or stream.state not in leases.READING_STATES:
            _stop(stream, outcome.stored.pk, owner)
            return "stopped"
        partition = outcome.stored
        if outcome.delay and stop.wait(outcome.delay):  # a polling kind waits for its next poll
            _stop(stream, partition.pk, owner)
            return "stopped"


def _stop(stream: Stream, partition_id: int, owner: str) -> None:
    """Give the lease back (the next reader starts at once) and settle a draining stream."""
    log_lease("end", partition_id, owner)
    leases.release(partition_id, owner)
    scheduling.maybe_finish_drain(stream)


LIVE = LiveReads()
