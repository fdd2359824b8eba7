"""Celery tasks of watched streams: beat's poll of every one, and an operator's action followed to its end."""

from __future__ import annotations

import threading
from dataclasses import asdict

from celery import shared_task
from django.db import OperationalError

from partitions.sources.base import RetryableSourceError
from streams.models import StreamOperation

from . import operating, polling

RETRY = {
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "retry_backoff_max": 30,
    "max_retries": 8,
}
# A cycle slower than beat's period must not be joined by the next one in this process.
_polling = threading.Lock()


@shared_task(bind=True, acks_late=True, **RETRY)
def poll_watched_streams_task(self) -> dict | str:
    """Poll every watched stream once: states, errors, objects and metrics into the database."""
    if not _polling.acquire(blocking=False):
        return "busy"
    try:
        return asdict(polling.poll_watched())
    except RetryableSourceError as error:
        return f"not polled: {error}"  # the next beat tries again
    finally:
        _polling.release()


@shared_task(bind=True, acks_late=True, **RETRY)
def operate_stream_task(self, operation_id: int) -> str | None:
    """Carry out one operator action on a watched stream and follow it to its end."""
    operation = StreamOperation.objects.select_related("stream").filter(pk=operation_id).first()
    if operation is None:
        return None  # the stream was deleted after this was queued
    return operating.run_operation(operation).status
