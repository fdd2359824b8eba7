"""Assumptions about the reader beside the cost (DESIGN §10): query volume and Dataflow prices.

The Spark job prices what Spanner stores and computes; what reading costs depends on
how many partitions were open and the stream's window and heartbeat, which only the
database knows, so these rows are added on the Django side.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from partitions.models import Partition

from .output import LIST_PRICE

DAY = 86_400.0
DATAFLOW = {
    "vcpu_hour_usd": ("USD per vCPU-hour", "Dataflow streaming worker, us-central1"),
    "gb_hour_usd": ("USD per GB-hour", "Dataflow streaming worker memory, us-central1"),
    "gib_processed_usd": ("USD per GiB", "Dataflow Streaming Engine data processed, us-central1"),
}


def open_partitions(report) -> float:
    """Return how many partitions were open on average over the report's range."""
    span = (report.until - report.since).total_seconds()
    alive = Partition.objects.filter(stream=report.stream, start_at__lt=report.until).filter(
        Q(end_at__isnull=True) | Q(end_at__gt=report.since)
    )
    seconds = 0.0
    for start, end in alive.values_list("start_at", "end_at").iterator():
        seconds += ((min(end or report.until, report.until)) - max(start, report.since)).total_seconds()
    return seconds / span if span > 0 else 0.0


def reader_assumptions(report) -> list[dict]:
    """Return the reader's query volume of the range and the Dataflow comparison prices."""
    stream, partitions = report.stream, open_partitions(report)
    rows = [
        {"name": "open_partitions", "value": round(partitions, 2), "unit": "partitions",
         "source": "average over the range, from the partition lineage", "note": "measured"},
        {"name": "reader_queries_per_day", "value": round(partitions * DAY / stream.window_seconds),
         "unit": "queries", "source": f"partitions x 86,400 / window of {stream.window_seconds} s",
         "note": "measured"},
        {"name": "idle_heartbeats_per_day", "value": round(partitions * DAY * 1000 / stream.heartbeat_ms),
         "unit": "heartbeats", "note": "apache/beam#38707: idle polling grows with partitions",
         "source": f"partitions x 86,400 / heartbeat of {stream.heartbeat_ms / 1000:g} s on an idle stream"},
    ]  # fmt: skip
    for name, value in settings.CDC_DATAFLOW_PRICES.items():
        unit, source = DATAFLOW[name]
        rows.append({"name": f"dataflow_{name}", "value": value, "unit": unit,
                     "source": f"{source}, for comparison", "note": LIST_PRICE})  # fmt: skip
    return rows
