"""Celery tasks of alerts: thin wrappers that take ids and call evaluation and delivery.

evaluate_alerts_task runs on "housekeeping" (beat sends it every CDC_ALERT_EVALUATE_SECONDS);
deliver_alert_task on "alerts", a queue with its own worker, so a slow receiver never
delays the evaluation, lag sampling or reads (cdcweb/settings.py, Procfile).
"""

from __future__ import annotations

import threading

from celery import shared_task
from django.conf import settings
from django.db import transaction

from . import delivery, evaluation
from .models import Alert, Channel

_evaluating = threading.Lock()
# Only transient failures come back: after CDC_ALERT_RETRY_BACKOFF * 2^n seconds (jittered,
# at most CDC_ALERT_RETRY_BACKOFF_MAX), CDC_ALERT_DELIVERY_RETRIES times at most.
RETRY = {
    "autoretry_for": (delivery.TransientDeliveryError,),
    "retry_backoff": settings.CDC_ALERT_RETRY_BACKOFF,
    "retry_backoff_max": settings.CDC_ALERT_RETRY_BACKOFF_MAX,
    "retry_jitter": True,
    "max_retries": settings.CDC_ALERT_DELIVERY_RETRIES,
}


class CeleryOutbox:
    """The evaluation's Outbox: a delivery task per notice and channel, sent once the transaction commits."""

    def send(self, alert_id: int, channel_id: int, event: str, notice: str) -> None:
        """Queue the notice's delivery after the commit that recorded it."""
        transaction.on_commit(lambda: deliver_alert_task.delay(alert_id, channel_id, event, notice))


@shared_task(bind=True, acks_late=True)
def evaluate_alerts_task(self) -> dict | str:
    """Evaluate every enabled rule; a run already going in this process makes this one return at once.

    Not retried: beat sends the next one within CDC_ALERT_EVALUATE_SECONDS anyway.
    """
    if not _evaluating.acquire(blocking=False):
        return "busy"
    try:
        return evaluation.evaluate(CeleryOutbox()).counts()
    finally:
        _evaluating.release()


@shared_task(bind=True, acks_late=True, **RETRY)
def deliver_alert_task(self, alert_id: int, channel_id: int, event: str, notice: str) -> str | None:
    """Send one notice of an alert to one channel; transient failures come back with backoff."""
    alert = Alert.objects.select_related("rule", "stream").filter(pk=alert_id).first()
    channel = Channel.objects.filter(pk=channel_id).first()
    if alert is None or channel is None:
        return None  # deleted after this was queued
    final = self.request.retries >= self.max_retries
    return delivery.deliver(alert, channel, event, notice, attempt=self.request.retries + 1, final=final)
