"""How long a stopped stream can still resume from where it stopped (DESIGN §5).

Resuming re-reads from the low watermark, which is never later than the pause, so the
source's retention (its kind says how long: partitions/sources/<kind>/) runs out first
for the older of the two. The dashboard's warning and the retention alert both ask here.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from . import kinds
from .models import Stream


def resume_deadline(stream: Stream, low: datetime | None, retention: timedelta | None) -> datetime | None:
    """Return when the stream's oldest unread change leaves the retention (None: nothing to go by).

    A source that keeps its changes (retention None, a table read by commit timestamp) has no deadline.
    A watched stream (Datastream) stopped reading its source's log when it entered its state
    (paused or failing): that is when its source's retention started to run out.
    """
    if kinds.watched(stream.source_kind):
        return stream.state_changed_at + retention if retention is not None else None
    known = [moment for moment in (low, stream.paused_at) if moment is not None]
    return min(known) + retention if known and retention is not None else None
