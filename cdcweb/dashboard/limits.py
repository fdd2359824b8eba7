"""Checks of an edit of a stream against what its readers already did (the API and the pages)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Max

from partitions.models import Partition
from streams.models import Stream
from streams.times import format_time


def end_misfit(stream: Stream | None, end: datetime | None) -> str:
    """Return why `end` cannot be the stream's end timestamp now, or "" when it can.

    A partition already read past the end cannot be read "up to" it: its window would
    end before it starts, and its reads would fail and retry for ever.
    """
    if stream is None or stream.pk is None or end is None:
        return ""
    highest = Partition.objects.filter(stream=stream).aggregate(high=Max("watermark"))["high"]
    if highest is None or end >= highest:
        return ""
    return (
        f"the end timestamp {format_time(end)} is before what was already read: a partition's watermark "
        f"is at {format_time(highest)}; set an end at or after it"
    )
