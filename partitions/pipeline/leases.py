"""Who is responsible for reading a partition now: take, renew, reserve and release its lease.

A partition's lease fields say it:

- ``lease_owner`` set and ``lease_expires_at`` in the future: a reader holds it;
- ``lease_owner`` empty and ``lease_expires_at`` in the future: a read is queued (a
  reservation), so nobody queues another one;
- otherwise nobody is, and scheduling queues a read (this is how a task lost with a
  crashed worker, or never delivered, is recovered).

Every change is a conditional UPDATE on the row's own columns; its row count says who won.
Every time in a lease is the database's (``Now()`` in the statement), never a worker's:
two hosts whose clocks disagree still agree on who holds a lease. While a read is alive,
the process's ``KEEPER`` renews its lease every third of a lease, whatever the read lands.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Now

from partitions import states
from partitions.models import Partition
from streams.models import Stream

from .dbretry import replace_broken_connections

log = logging.getLogger(__name__)
# Lease audit lines (at INFO): the tests read them to prove no two readers overlap.
lease_log = logging.getLogger("partitions.lease")
P = Partition.State
S = Stream.State
# States in which readers keep reading; FAILED retries by itself (DESIGN §5).
READING_STATES = (S.RUNNING, S.FAILED)


def log_lease(event: str, partition_id: int, owner: str, expires: datetime | None = None) -> None:
    """Log a lease event with a wall-clock time; "end" is logged before the lease is given up.

    A start and an end are logged at INFO; a renewal at DEBUG (CDC_LEASE_LOG_LEVEL shows
    them): every checkpoint renews, and at 2,000 live partitions a line per renewal was a
    thousand lines a second, written from the live reads' event loop (an eighth of its
    time: docs/benchmarks.md, issue 22).
    """
    level = logging.DEBUG if event == "renew" else logging.INFO
    if not lease_log.isEnabledFor(level):
        return
    until = expires.timestamp() if expires else 0.0
    message = "LEASE %s partition=%s owner=%s at=%.6f until=%.6f"
    lease_log.log(level, message, event, partition_id, owner, time.time(), until)


def lease_delta(extra_seconds: float = 0) -> timedelta:
    """Return how long a lease (or a reservation) lives."""
    return timedelta(seconds=settings.CDC_LEASE_SECONDS + extra_seconds)


def expiry(extra_seconds: float = 0):
    """Return the database expression of a lease's end: the database's now plus one lease."""
    return Now() + lease_delta(extra_seconds)


def free_q() -> Q:
    """Return the filter of partitions that nobody holds and for which no read is queued."""
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=Now())


def take(partition: Partition, owner: str, reclaim: str = "") -> bool:
    """Take the partition's lease if nobody holds a live one and its stream reads on.

    `reclaim` is the owner prefix of earlier attempts of the same task (a retry): their
    lease is ours to take back at once instead of waiting for it to expire.
    """
    if not Stream.objects.filter(pk=partition.stream_id, state__in=READING_STATES).exists():
        return False  # a pause racing this check is seen again after the window
    # Only the row's own columns in the WHERE: PostgreSQL re-checks them on the row a
    # concurrent winner committed, but a join would turn them into an `id IN (subquery)`
    # that is not re-checked, and two readers would both "win" (the pipeline tests saw it).
    free = Q(lease_owner="") | free_q()
    if reclaim:
        free |= Q(lease_owner__startswith=reclaim)
    moved = states.move(
        Partition.objects.filter(pk=partition.pk).filter(free),
        P.RUNNING,
        lease_owner=owner,
        lease_expires_at=expiry(),
        running_at=Coalesce("running_at", Now()),
        last_progress_at=Coalesce("last_progress_at", Now()),
    )
    return moved == 1


def renew(partition_id: int, owner: str) -> bool:
    """Extend the lease `owner` holds by one lease from now; return whether it still held it."""
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner).exclude(state=P.FINISHED)
    return bool(rows.update(lease_expires_at=expiry()))


def reserve(partition_id: int, owner: str, countdown: float = 0) -> bool:
    """Turn our lease into a reservation for the queued next read; return whether it was ours."""
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner)
    return bool(rows.update(lease_owner="", lease_expires_at=expiry(countdown)))


def release(partition_id: int, owner: str | None = None) -> bool:
    """Give up the lease (or the reservation when owner is None); return whether it was ours."""
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner or "")
    return bool(rows.update(lease_owner="", lease_expires_at=None))


def passed_on(partition_id: int, owner: str) -> bool:
    """Return whether the lease is no longer `owner`'s: another reader took it, or a read is queued.

    A lease that expired with nobody taking it is still ours.
    """
    return not Partition.objects.filter(pk=partition_id, lease_owner=owner).exists()


def live(stream: Stream):
    """Return the stream's partitions held by a reader or awaiting a queued read."""
    return Partition.objects.filter(stream=stream, lease_expires_at__gt=Now())


def database_now(partition_id: int):
    """Return the database's current time (read with the partition's row: one query)."""
    rows = Partition.objects.filter(pk=partition_id).annotate(now=Now()).values_list("now", flat=True)
    return rows.order_by().first()


def db_now_of(partition: Partition) -> datetime | None:
    """Return the database's clock when the partition's lease was taken or last renewed."""
    if partition.lease_expires_at is None:
        return None
    return partition.lease_expires_at - lease_delta()


class Keeper:
    """Renews the leases of this process's live reads every third of a lease, in one UPDATE.

    A read registers its lease for as long as it is alive (``holding``), so a read that
    lands nothing for longer than a lease (a slow source, a long page) keeps its lease.
    A lease found taken by someone else is reported lost (``lost``): the read stops at
    its next record, and its checkpoint would be refused anyway.
    """

    def __init__(self) -> None:
        self._held: dict[int, str] = {}
        self._lost: set[tuple[int, str]] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def period(self) -> float:
        """Return the seconds between two renewals: a third of a lease."""
        return settings.CDC_LEASE_SECONDS / 3

    def hold(self, partition_id: int, owner: str) -> None:
        """Renew this lease on the timer from now on."""
        with self._lock:
            self._held[partition_id] = owner
            self._lost.discard((partition_id, owner))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()

    def drop(self, partition_id: int, owner: str) -> None:
        """Stop renewing this lease (the read is over)."""
        with self._lock:
            if self._held.get(partition_id) == owner:
                del self._held[partition_id]
            self._lost.discard((partition_id, owner))

    def lost(self, partition_id: int, owner: str) -> bool:
        """Return whether a renewal found the lease held by someone else."""
        return (partition_id, owner) in self._lost

    def _run(self) -> None:
        try:
            while not self._wake.wait(self.period()):
                with self._lock:
                    if not self._held:  # no read alive: stop, the next hold() starts another
                        self._thread = None
                        return
                try:
                    self.renew_all()
                except DatabaseError as error:
                    # The database is away (a restart): leases run on until it is back.
                    log.warning("renewing leases failed, retrying in %.1fs: %s", self.period(), error)
                    replace_broken_connections()
        finally:
            connections.close_all()  # this thread's own connection

    def renew_all(self) -> int:
        """Renew every registered lease (one UPDATE, one SELECT); return how many are still held."""
        with self._lock:
            held = dict(self._held)
        if not held:
            return 0
        with transaction.atomic():
            # Locked in id order, as the checkpoint writer locks them (batch.py): one
            # UPDATE over thousands of rows in scan order deadlocked with it.
            rows = Partition.objects.select_for_update(no_key=True).filter(pk__in=held).order_by("pk")
            locked = rows.exclude(state=P.FINISHED).values_list("pk", "lease_owner")
            mine = [pk for pk, owner in locked if held[pk] == owner]
            Partition.objects.filter(pk__in=mine).update(lease_expires_at=expiry())
            renewed = dict(Partition.objects.filter(pk__in=mine).values_list("pk", "lease_expires_at"))
        for pk, expires in renewed.items():
            log_lease("renew", pk, held[pk], expires)
        still = set(renewed)
        with self._lock:
            for pk, owner in held.items():
                if pk not in still and self._held.get(pk) == owner:
                    self._lost.add((pk, owner))
        return len(still)


KEEPER = Keeper()
