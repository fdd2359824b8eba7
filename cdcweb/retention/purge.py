"""Delete what has been kept long enough: the ages are settings (CDC_KEEP_*, CDC_LANDING_KEEP_DAYS).

Rows go in batches, each its own short transaction, so a first run over a year of
errors never holds the database for long; every kind deleted is logged with its count.
An age of 0 keeps that kind for ever (landed files are, unless CDC_LANDING_KEEP_DAYS is set).
A watched source's error is aged from when the source last reported it (``last_seen_at``), so
one Datastream still reports is never deleted.
"""

from __future__ import annotations

import logging
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from cdcweb.alerts.models import Alert, DeliveryAttempt
from cdcweb.reports.models import Report
from partitions.pipeline import landing
from streams.models import StreamError

log = logging.getLogger("cdcweb.retention")
# Rows deleted per transaction: some 5,000 short rows, tens of milliseconds on SQLite.
BATCH = 5000
FINISHED = (Report.Status.DONE, Report.Status.FAILED)
RESOLVED = Alert.State.RESOLVED


def _delete(rows: QuerySet) -> int:
    """Delete the rows in batches of BATCH; return how many (cascaded rows not counted)."""
    total = 0
    while True:
        with transaction.atomic():
            ids = list(rows.values_list("pk", flat=True)[:BATCH])
            if not ids:
                return total
            rows.model.objects.filter(pk__in=ids).delete()
        total += len(ids)


def _old_rows(now: datetime) -> dict[str, tuple[int, QuerySet | None]]:
    """Return {kind: (days kept, its rows older than that, or None when kept for ever)}."""
    ages = {
        "stream errors": (settings.CDC_KEEP_ERRORS_DAYS, _errors_not_reported(now), "at"),
        "delivery attempts": (settings.CDC_KEEP_DELIVERIES_DAYS, DeliveryAttempt.objects.all(), "at"),
        "resolved alerts": (settings.CDC_KEEP_RESOLVED_ALERTS_DAYS, Alert.objects.filter(state=RESOLVED),
                            "resolved_at"),
        "reports": (
            settings.CDC_KEEP_REPORTS_DAYS, Report.objects.filter(status__in=FINISHED), "created_at",
        ),
    }  # fmt: skip
    return {
        kind: (days, rows.filter(**{f"{field}__lt": now - timedelta(days=days)}) if days > 0 else None)
        for kind, (days, rows, field) in ages.items()
    }


def _errors_not_reported(now: datetime) -> QuerySet:
    """Return the stream errors but those a watched source reported within the errors' keep time.

    Such an error is still the source's (Datastream reports it until it is resolved): deleted,
    the next poll would store it again as a new one.
    """
    days = settings.CDC_KEEP_ERRORS_DAYS
    return StreamError.objects.exclude(last_seen_at__gte=now - timedelta(days=days))


def _delete_reports(rows: QuerySet) -> int:
    """Delete finished reports with their output folders; return how many."""
    for output_dir in rows.exclude(output_dir="").values_list("output_dir", flat=True):
        shutil.rmtree(Path(output_dir), ignore_errors=True)
    return _delete(rows)


def run(now: datetime | None = None) -> dict[str, int]:
    """Delete everything older than its setting allows; log and return the counts by kind."""
    now = now or timezone.now()
    counts: dict[str, int] = {}
    for kind, (days, rows) in _old_rows(now).items():
        if rows is not None:
            counts[kind] = _delete_reports(rows) if kind == "reports" else _delete(rows)
            log.info("retention: deleted %d %s older than %d days", counts[kind], kind, days)
    if settings.CDC_LANDING_KEEP_DAYS > 0:
        day = (now - timedelta(days=settings.CDC_LANDING_KEEP_DAYS)).date()
        folders = landing.delete_days_before(settings.CDC_LANDING_URI, day)
        counts["landed files"] = sum(folders.values())
        log.info(
            "retention: deleted %d landed files in %d day folders before %s",
            counts["landed files"], len(folders), day.isoformat(),
        )  # fmt: skip
    return counts
