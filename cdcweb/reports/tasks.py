"""Celery tasks of reports: thin wrappers that take ids and call the report services."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from . import services as report_services
from .models import Report


@shared_task(bind=True, acks_late=True)
def run_report_task(self, report_id: int) -> str | None:
    """Run a QUEUED report's Spark job; a second delivery finds it claimed and does nothing."""
    report = Report.objects.select_related("stream").filter(pk=report_id).first()
    if report is None:
        return None  # deleted after this was queued
    return report_services.run_report(report, worker=self.request.hostname or "").status


@shared_task(bind=True, acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def schedule_daily_reports_task(self) -> list[int]:
    """Create and enqueue yesterday's report of every stream that had data."""
    return report_services.schedule_daily_reports()


@shared_task(bind=True, acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def sweep_reports_task(self) -> dict:
    """Send again the tasks of reports QUEUED too long; fail RUNNING ones whose worker stopped."""
    return report_services.sweep_reports()


@worker_ready.connect
def fail_reports_of_previous_run(sender=None, **kwargs) -> None:
    """Fail the reports this worker (same node name) left RUNNING when it last stopped."""
    report_services.fail_reports_left_by(getattr(sender, "hostname", "") or "")
