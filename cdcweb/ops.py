"""Operations endpoints: /metrics for Prometheus and /healthz, both without login.

The metrics come from a custom collector that reads database aggregates at scrape
time (four queries, whatever the number of partitions), so every process that
serves /metrics reports the same figures and nothing is kept in memory.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Min, Q, Sum
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from partitions.models import Partition, PartitionEdge
from streams import status
from streams.models import Stream

# Seconds from the last parent finishing to the child running (the parent-wait rule's cost).
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BROKER_TIMEOUT = 2.0
LABELS = ["stream", "state"]


def _partition_stats() -> dict[int, dict]:
    """Return per stream: partitions by state, records, stalled count and low-watermark inputs."""
    unfinished = ~Q(state=Partition.State.FINISHED)
    rows = Partition.objects.values("stream_id", "state").order_by()
    rows = rows.annotate(
        n=Count("id"),
        records=Sum("data_records"),
        stalled=Count("id", filter=Q(stalled=True)),
        low=Min("watermark", filter=unfinished),
        last_end=Max("end_at"),
        last_watermark=Max("watermark"),
    )
    stats: dict[int, dict] = defaultdict(
        lambda: {"by_state": Counter(), "records": 0, "stalled": 0, "lows": []}
    )
    for row in rows:
        entry = stats[row["stream_id"]]
        entry["by_state"][row["state"]] += row["n"]
        entry["records"] += row["records"] or 0
        entry["stalled"] += row["stalled"]
        entry["lows"].append(row)
    return stats


def _low_watermark(stream: Stream, entry: dict):
    """Return the stream's low watermark from its per-state rows, as streams.status defines it."""
    rows = entry["lows"]
    unfinished = [r["low"] for r in rows if r["low"] is not None]
    agg = {
        "total": sum(r["n"] for r in rows),
        "unfinished": sum(r["n"] for r in rows if r["state"] != Partition.State.FINISHED),
        "low": min(unfinished, default=None),
        "last_end": max((r["last_end"] for r in rows if r["last_end"]), default=None),
        "last_watermark": max((r["last_watermark"] for r in rows if r["last_watermark"]), default=None),
    }
    return status._low_watermark(stream, agg)


def _splits_and_merges() -> tuple[Counter, Counter]:
    """Return per stream the parents with more than one child (splits), children with more parents."""
    splits, merges = Counter(), Counter()
    for side, counter in (("parent_id", splits), ("child_id", merges)):
        rows = (
            PartitionEdge.objects.values("stream_id", side).order_by().annotate(n=Count("id")).filter(n__gt=1)
        )
        counter.update(row["stream_id"] for row in rows)
    return splits, merges


def _scheduling_latencies() -> dict[int, list[float]]:
    """Return per stream each child's wait: its running_at minus its last parent's finished_at."""
    rows = (
        PartitionEdge.objects.filter(child__running_at__isnull=False, parent__finished_at__isnull=False)
        .values("stream_id", "child_id", "child__running_at")
        .order_by()
        .annotate(last_parent=Max("parent__finished_at"))
    )
    waits: dict[int, list[float]] = defaultdict(list)
    for row in rows:
        waits[row["stream_id"]].append(
            max(0.0, (row["child__running_at"] - row["last_parent"]).total_seconds())
        )
    return waits


def _histogram(waits: list[float]) -> tuple[list[tuple[str, int]], float]:
    """Return cumulative Prometheus buckets (with +Inf) and the sum of the waits."""
    buckets = [(str(bound), sum(1 for w in waits if w <= bound)) for bound in LATENCY_BUCKETS]
    return [*buckets, ("+Inf", len(waits))], sum(waits)


class StreamCollector:
    """Prometheus collector of every stream's progress, read from the database at scrape time."""

    def describe(self):
        """Return no descriptions, so registering does not run a scrape (and touch the database)."""
        return []

    def collect(self):
        """Yield one family per figure, labelled by stream name and stream state."""
        families = self._families()
        streams = list(Stream.objects.order_by("name").only("id", "name", "state", "end_at"))
        stats, (splits, merges), waits = _partition_stats(), _splits_and_merges(), _scheduling_latencies()
        for stream in streams:
            self._add(families, stream, stats.get(stream.pk), splits[stream.pk], merges[stream.pk], waits)
        yield from families.values()

    @staticmethod
    def _families() -> dict:
        return {
            "lag": GaugeMetricFamily(
                "cdc_stream_lag_seconds", "Seconds the low watermark is behind now", labels=LABELS
            ),
            "low": GaugeMetricFamily(
                "cdc_stream_low_watermark_timestamp_seconds", "Low watermark as unix seconds", labels=LABELS
            ),
            "partitions": GaugeMetricFamily(
                "cdc_stream_partitions", "Partitions by partition state", labels=[*LABELS, "partition_state"]
            ),
            "records": CounterMetricFamily(
                "cdc_stream_data_records", "Data change records read", labels=LABELS
            ),
            "splits": CounterMetricFamily(
                "cdc_stream_splits", "Partitions that split into several", labels=LABELS
            ),
            "merges": CounterMetricFamily(
                "cdc_stream_merges", "Partitions merged from several", labels=LABELS
            ),
            "stalled": GaugeMetricFamily(
                "cdc_stream_stalled_partitions", "Partitions marked stalled", labels=LABELS
            ),
            "latency": HistogramMetricFamily(
                "cdc_stream_scheduling_latency_seconds",
                "From the last parent finishing to the child running",
                labels=LABELS,
            ),
        }

    @staticmethod
    def _add(
        families: dict, stream: Stream, entry: dict | None, splits: int, merges: int, waits: dict
    ) -> None:
        labels = [stream.name, stream.state]
        entry = entry or {"by_state": Counter(), "records": 0, "stalled": 0, "lows": []}
        low = _low_watermark(stream, entry)
        if low is not None:
            families["low"].add_metric(labels, low.timestamp())
            families["lag"].add_metric(labels, status._lag(stream, low))
        for state in Partition.State.values:
            families["partitions"].add_metric([*labels, state], entry["by_state"][state])
        families["records"].add_metric(labels, entry["records"])
        families["splits"].add_metric(labels, splits)
        families["merges"].add_metric(labels, merges)
        families["stalled"].add_metric(labels, entry["stalled"])
        buckets, total = _histogram(waits.get(stream.pk, []))
        families["latency"].add_metric(labels, buckets, total)


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(StreamCollector())


@require_GET
def metrics(request) -> HttpResponse:
    """Return every stream's figures in the Prometheus text format."""
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


def check_database() -> str:
    """Return "ok" if the database answers a query, else the error."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # noqa: BLE001 - any failure means "down", and says why
        return f"error: {error}"
    return "ok"


def check_broker(url: str | None = None) -> str:
    """Return "ok" if the Celery broker accepts a connection within two seconds, else the error."""
    from kombu import Connection

    url = url if url is not None else settings.CELERY_BROKER_URL
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) if url.startswith("filesystem") else {}
    try:
        with Connection(url, connect_timeout=BROKER_TIMEOUT, transport_options=options) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT)
    except Exception as error:  # noqa: BLE001 - any failure means "down", and says why
        return f"error: {error}"
    return "ok"


@require_GET
def healthz(request) -> JsonResponse:
    """Return {"database": "ok", "broker": "ok"} with 200, or 503 naming what is down."""
    checks = {"database": check_database(), "broker": check_broker()}
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(checks, status=200 if healthy else 503)
