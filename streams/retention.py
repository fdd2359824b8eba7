"""How long a stopped stream can still resume from where it stopped (DESIGN §5).

Resuming re-reads from the low watermark, which is never later than the pause, so the
change stream's retention (CDC_STREAM_RETENTION_HOURS) runs out first for the older of
the two. The dashboard's warning and the retention alert both ask here.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from .models import Stream


def retention() -> timedelta:
    """Return the change stream's retention."""
    return timedelta(hours=settings.CDC_STREAM_RETENTION_HOURS)


def resume_deadline(stream: Stream, low: datetime | None) -> datetime | None:
    """Return when the stream's oldest unread change leaves the retention (None: nothing to go by)."""
    known = [moment for moment in (low, stream.paused_at) if moment is not None]
    return min(known) + retention() if known else None
