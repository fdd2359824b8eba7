"""Operations endpoints: /metrics for Prometheus and /healthz, without a user login.

/metrics asks for "Authorization: Bearer <CDC_METRICS_TOKEN>" when that is set (open
when unset, as in the demo on 127.0.0.1). /healthz says "ok" or "fail" per dependency,
never why (that goes to the log), and answers from its last check for a few seconds,
so probes cannot turn it into a load on the database and the broker.

The metrics come from a custom collector that reads the database at scrape time (four
queries, whatever the number of partitions; progress from the read model, the same
figures the pages and the API show), so every process that serves /metrics reports
the same and nothing is kept in memory.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections import Counter, defaultdict

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from partitions.models import Partition, PartitionEdge
from partitions.progress import StreamProgress, progress_of
from streams.models import Stream

# Seconds from the last parent finishing to the child running (the parent-wait rule's cost).
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BROKER_TIMEOUT = 2.0
LABELS = ["stream", "state"]
# A health answer is reused this long: at most one check of each dependency per process per period.
HEALTH_CACHE_SECONDS = 5.0
log = logging.getLogger(__name__)


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
        streams = list(Stream.objects.order_by("name").only("id", "name", "state", "end_at", "source_kind"))
        progress, waits = progress_of(streams), _scheduling_latencies()
        splits, merges = _splits_and_merges()
        for stream in streams:
            self._add(families, stream, progress[stream.pk], splits[stream.pk], merges[stream.pk], waits)
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
        families: dict, stream: Stream, progress: StreamProgress, splits: int, merges: int, waits: dict
    ) -> None:
        labels = [stream.name, stream.state]
        if progress.low_watermark is not None:
            families["low"].add_metric(labels, progress.low_watermark.timestamp())
            families["lag"].add_metric(labels, progress.lag_seconds)
        for state in Partition.State.values:
            families["partitions"].add_metric([*labels, state], progress.by_state[state])
        families["records"].add_metric(labels, progress.data_records)
        families["splits"].add_metric(labels, splits)
        families["merges"].add_metric(labels, merges)
        families["stalled"].add_metric(labels, progress.stalled)
        buckets, total = _histogram(waits.get(stream.pk, []))
        families["latency"].add_metric(labels, buckets, total)


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(StreamCollector())


def _bearer_ok(request, expected: str) -> bool:
    """Return True if the request carries "Authorization: Bearer <expected>" (compared in constant time)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())


@require_GET
def metrics(request) -> HttpResponse:
    """Return every stream's figures in the Prometheus text format (401 without the bearer token, if set)."""
    expected = settings.CDC_METRICS_TOKEN
    if expected and not _bearer_ok(request, expected):
        response = HttpResponse("a bearer token is required (CDC_METRICS_TOKEN)\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


def check_database() -> bool:
    """Return True if the database answers a query; log why not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # noqa: BLE001 - any failure means "down"; the log says why
        log.warning("healthz: the database does not answer", exc_info=True)
        return False
    return True


def check_broker(url: str | None = None) -> bool:
    """Return True if the Celery broker accepts a connection within two seconds; log why not."""
    from kombu import Connection

    url = url if url is not None else settings.CELERY_BROKER_URL
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) if url.startswith("filesystem") else {}
    try:
        with Connection(url, connect_timeout=BROKER_TIMEOUT, transport_options=options) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT)
    except Exception:  # noqa: BLE001 - any failure means "down"; the log says why
        log.warning("healthz: the broker does not answer", exc_info=True)
        return False
    return True


class HealthCache:
    """The last health answer of this process, reused for HEALTH_CACHE_SECONDS; one check at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forget the last answer."""
        self._answer: dict[str, str] | None = None
        self._at = -HEALTH_CACHE_SECONDS

    def get(self) -> dict[str, str]:
        """Return {"database": "ok"|"fail", "broker": "ok"|"fail"}, checking again once the last is old."""
        with self._lock:
            if self._answer is None or time.monotonic() - self._at >= HEALTH_CACHE_SECONDS:
                checks = {"database": check_database(), "broker": check_broker()}
                self._answer = {name: "ok" if up else "fail" for name, up in checks.items()}
                self._at = time.monotonic()
            return dict(self._answer)


HEALTH = HealthCache()


@require_GET
def healthz(request) -> JsonResponse:
    """Return {"database": "ok", "broker": "ok"} with 200, or 503 with "fail" for what is down."""
    checks = HEALTH.get()
    healthy = all(value == "ok" for value in checks.values())
    response = JsonResponse(checks, status=200 if healthy else 503)
    response["Cache-Control"] = "no-store"
    return response
