"""What a stream's cost report rests on, from the stream's kind: its price model and its call counts.

The kind knows its source's prices and what reading it costs (partitions/sources/<kind>/:
cost_model, reading_assumptions); an operator may override any price (CDC_PRICE_*). The
Spark job computes with the values it is given; the report shows each beside its source,
as the kind states it, and the reader's call volume, which only the lineage knows.
"""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.db.models import Q

from partitions.models import Partition
from partitions.sources import kind_of
from partitions.sources.costs import LIST_PRICE
from partitions.sources.kinds import Assumption

DATAFLOW = {
    "vcpu_hour_usd": ("USD per vCPU-hour", "Dataflow streaming worker, us-central1"),
    "gb_hour_usd": ("USD per GB-hour", "Dataflow streaming worker memory, us-central1"),
    "gib_processed_usd": ("USD per GiB", "Dataflow Streaming Engine data processed, us-central1"),
}


def price_model(stream) -> list[Assumption]:
    """Return the stream's price model: its kind's, with every CDC_PRICE_* an operator set instead."""
    rows = []
    for row in kind_of(stream.source_kind).cost_model(stream.connection):
        override = settings.CDC_PRICE_MODEL.get(row.name, "")
        if override not in ("", None):
            env = f"CDC_PRICE_{row.name.upper()}"
            row = Assumption(row.name, _number(override), row.unit, f"set by {env} (the kind's: {row.value})")
        rows.append(row)
    return rows


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return text  # the edition


def price_options(stream) -> list[str]:
    """Return the price model as the job's ``--<field>`` options; a None value uses the job's rule."""
    options = []
    for row in price_model(stream):
        if row.value not in ("", None):
            options += [f"--{row.name.replace('_', '-')}", str(row.value)]
    return options


def label(job_rows: list[dict], stream) -> list[dict]:
    """Return the job's assumption rows with each price field's unit and source as the kind states it."""
    ours = {row.name: row for row in price_model(stream)}
    labelled = []
    for row in job_rows:
        mine = ours.get(row["name"])
        labelled.append({**row, "unit": mine.unit, "source": mine.source} if mine else row)
    return labelled


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
    """Return the reader's call volume over the range (as the kind counts it) and Dataflow's prices."""
    stream, partitions = report.stream, open_partitions(report)
    kind = kind_of(stream.source_kind)
    rows = [Assumption("open_partitions", round(partitions, 2), "partitions",
                       "average over the range, from the partition lineage", "measured")]  # fmt: skip
    rows += kind.reading_assumptions(
        stream.connection, partitions, stream.window_seconds, stream.heartbeat_ms
    )
    for name, value in settings.CDC_DATAFLOW_PRICES.items():
        unit, source = DATAFLOW[name]
        rows.append(Assumption(f"dataflow_{name}", value, unit, f"{source}, for comparison", LIST_PRICE))
    return [asdict(row) for row in rows]
