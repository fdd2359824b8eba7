"""Stall rules, modelled on Burrow's but on watermark age instead of offsets (DESIGN §5).

- ``watermark_stalled`` (STALLED): a RUNNING partition's watermark has not moved for
  more than CDC_STALL_HEARTBEATS heartbeat intervals.
- ``lag_growing`` (WARN): the stream's lag grew in every one of its last
  LAG_WINDOW samples; recorded on the partition that holds the low watermark.

Each finding is stored on the partition with its rule and the evidence it fired on;
a checkpoint that moves the watermark clears it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from partitions.kinds import read_streams
from streams.models import Stream

from .models import LagSample, Partition

STALLED = "watermark_stalled"
LAG_GROWING = "lag_growing"
# How many consecutive raw samples must each show more lag than the one before.
LAG_WINDOW = 10


def stall_threshold(stream: Stream) -> timedelta:
    """Return how long a watermark may stand still before its partition counts as stalled."""
    return timedelta(milliseconds=stream.heartbeat_ms * settings.CDC_STALL_HEARTBEATS)


def detect_stalled_partitions(stream: Stream, now: datetime) -> int:
    """Mark RUNNING partitions whose watermark stood still too long; return how many."""
    threshold = stall_threshold(stream)
    stuck = Partition.objects.filter(
        stream=stream, state=Partition.State.RUNNING, stalled=False, last_progress_at__lt=now - threshold
    )
    marked = 0
    for partition in stuck:
        evidence = {
            "level": "STALLED",
            "checked_at": now.isoformat(),
            "watermark": partition.watermark.isoformat(),
            "last_progress_at": partition.last_progress_at.isoformat(),
            "threshold_seconds": threshold.total_seconds(),
            "heartbeat_ms": stream.heartbeat_ms,
            "heartbeats": settings.CDC_STALL_HEARTBEATS,
        }
        # Conditional on the watermark it was judged by, so a checkpoint in between wins.
        marked += Partition.objects.filter(
            pk=partition.pk, watermark=partition.watermark, stalled=False
        ).update(stalled=True, stall_rule=STALLED, stall_evidence=evidence)
    return marked


def lag_grew_throughout(samples: list[LagSample]) -> bool:
    """Return True if each sample (oldest first) shows more lag than the one before it."""
    return len(samples) >= LAG_WINDOW and all(
        b.lag_seconds > a.lag_seconds for a, b in zip(samples, samples[1:], strict=False)
    )


def detect_growing_lag(stream: Stream, now: datetime) -> bool:
    """Record a WARN on the holding partition if the lag grew in every recent sample."""
    recent = list(LagSample.objects.filter(stream=stream, resolution_seconds=10).order_by("-at")[:LAG_WINDOW])
    recent.reverse()
    if not lag_grew_throughout(recent) or recent[-1].holding_partition_id is None:
        return False
    evidence = {
        "level": "WARN",
        "checked_at": now.isoformat(),
        "samples": [{"at": s.at.isoformat(), "lag_seconds": s.lag_seconds} for s in recent],
    }
    rows = Partition.objects.filter(pk=recent[-1].holding_partition_id, stalled=False).exclude(
        state=Partition.State.FINISHED
    )
    return bool(rows.update(stall_rule=LAG_GROWING, stall_evidence=evidence))


def detect_stalls(now: datetime | None = None) -> dict[str, int]:
    """Apply both rules to every RUNNING stream; return how many findings each made."""
    now = now or timezone.now()
    found = {STALLED: 0, LAG_GROWING: 0}
    for stream in read_streams().filter(state=Stream.State.RUNNING):
        found[STALLED] += detect_stalled_partitions(stream, now)
        found[LAG_GROWING] += int(detect_growing_lag(stream, now))
    return found
