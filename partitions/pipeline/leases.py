"""Who is responsible for reading a partition now: take, renew, reserve and release its lease.

A partition's lease fields say it:

- ``lease_owner`` set and ``lease_expires_at`` in the future: a reader holds it;
- ``lease_owner`` empty and ``lease_expires_at`` in the future: a read is queued (a
  reservation), so nobody queues another one;
- otherwise nobody is, and scheduling queues a read (this is how a task lost with a
  crashed worker, or never delivered, is recovered).

Every change is a conditional UPDATE on the row's own columns; its row count says who won.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from partitions import states
from partitions.models import Partition
from streams.models import Stream

P = Partition.State
S = Stream.State
# States in which readers keep reading; FAILED retries by itself (DESIGN §5).
READING_STATES = (S.RUNNING, S.FAILED)


def lease_delta(extra_seconds: float = 0) -> timedelta:
    """Return how long a lease (or a reservation) lives."""
    return timedelta(seconds=settings.CDC_LEASE_SECONDS + extra_seconds)


def free_q(now) -> Q:
    """Return the filter of partitions that nobody holds and for which no read is queued."""
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)


def take(partition: Partition, owner: str) -> bool:
    """Take the partition's lease if nobody holds a live one and its stream reads on."""
    if not Stream.objects.filter(pk=partition.stream_id, state__in=READING_STATES).exists():
        return False  # a pause racing this check is seen again after the window
    now = timezone.now()
    # Only the row's own columns in the WHERE: PostgreSQL re-checks them on the row a
    # concurrent winner committed, but a join would turn them into an `id IN (subquery)`
    # that is not re-checked, and two readers would both "win" (the pipeline tests saw it).
    free = Partition.objects.filter(pk=partition.pk).filter(
        Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
    )
    moved = states.move(
        free,
        P.RUNNING,
        lease_owner=owner,
        lease_expires_at=now + lease_delta(),
        running_at=Coalesce("running_at", now),
        last_progress_at=Coalesce("last_progress_at", now),
    )
    return moved == 1


def renew(partition_id: int, owner: str) -> bool:
    """Extend the lease `owner` holds by one lease from now; return whether it still held it."""
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner).exclude(state=P.FINISHED)
    return bool(rows.update(lease_expires_at=timezone.now() + lease_delta()))


def reserve(partition_id: int, owner: str, countdown: float = 0) -> bool:
    """Turn our lease into a reservation for the queued next read; return whether it was ours."""
    expires = timezone.now() + lease_delta(countdown)
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner)
    return bool(rows.update(lease_owner="", lease_expires_at=expires))


def release(partition_id: int, owner: str | None = None) -> bool:
    """Give up the lease (or the reservation when owner is None); return whether it was ours."""
    rows = Partition.objects.filter(pk=partition_id, lease_owner=owner or "")
    return bool(rows.update(lease_owner="", lease_expires_at=None))


def live(stream: Stream):
    """Return the stream's partitions held by a reader or awaiting a queued read."""
    return Partition.objects.filter(stream=stream, lease_expires_at__gt=timezone.now())
