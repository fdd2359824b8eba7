"""Delete a stream, saying what becomes of its data: the one rule of the API, the admin and `cdc_stream`.

A stream that never read anything goes at once. One that has read is deleted only when
stopped (NOT_STARTED, PAUSED or FAILED_PERMANENTLY: no reader is writing its files) and
when the request says what becomes of its landed files:

- "keep": they stay where they are, under ``<landing>/stream_id=<id>/`` (and its old
  ``stream=<name>/``, if it landed before ids); no stream reads them again, since ids are
  never reused and a new stream of the same name has another;
- "purge": they are deleted first (a failure leaves the stream in place to try again).

Either way its rows go with it: partitions, lag samples, errors, transitions, reports (and
their output folders), alert rules of that stream alone, their alerts and silences.

A watched stream (Datastream) landed nothing and is run by its source: deleting it only
stops watching it, in any state; the Datastream stream itself runs on untouched.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from cdcweb.reports.models import Report
from partitions.models import Partition
from partitions.pipeline import landing
from streams import kinds
from streams.models import Stream

log = logging.getLogger("cdcweb.streams")
S = Stream.State
STOPPED = (S.NOT_STARTED, S.PAUSED, S.FAILED_PERMANENTLY)
DATA = {"keep": "keep its landed files", "purge": "delete its landed files"}


class DeletionRefused(ValueError):
    """The stream may not be deleted like this; `conflict` is True when its state is the reason."""

    def __init__(self, message: str, conflict: bool) -> None:
        super().__init__(message)
        self.conflict = conflict


@dataclass(frozen=True)
class Deleted:
    """What a deletion did: the stream's id and name, its data's fate, and files deleted."""

    stream_id: int
    name: str
    data: str
    files_purged: int


def has_read(stream: Stream) -> bool:
    """Return True if the stream ever started (it may have landed data), whatever its state now."""
    return stream.transitions.exists() or Partition.objects.filter(stream=stream).exists()


def refusal(stream: Stream, data: str) -> DeletionRefused | None:
    """Return why the stream may not be deleted with this choice of its data, or None if it may."""
    if kinds.watched(stream.source_kind) or not has_read(stream):
        return None
    if stream.state not in STOPPED:
        return DeletionRefused(
            f"cannot delete stream '{stream.name}': it is {stream.state} and has read data; stop it first "
            f"(delete is allowed from {', '.join(STOPPED)})",
            conflict=True,
        )
    if data not in DATA:
        return DeletionRefused(
            f"say what becomes of the data stream '{stream.name}' has landed: data=keep (the files stay "
            f"under stream_id={stream.pk}/, read by nothing) or data=purge (they are deleted)",
            conflict=False,
        )
    return None


def delete_stream(stream: Stream, data: str, by: str) -> Deleted:
    """Delete the stream and its rows, keeping or purging its landed files; raise DeletionRefused."""
    with transaction.atomic():
        locked = Stream.objects.select_for_update().filter(pk=stream.pk).first()
        if locked is None:
            raise DeletionRefused(f"stream '{stream.name}' is already deleted", conflict=True)
        refused = refusal(locked, data)
        if refused is not None:
            raise refused
        chosen = data if data in DATA else "none landed"
        purged = 0
        if data == "purge":
            purged = landing.delete_stream_files(settings.CDC_LANDING_URI, locked.pk, locked.landing_name)
        outputs = [
            Path(p) for p in Report.objects.filter(stream=locked).values_list("output_dir", flat=True) if p
        ]
        locked.delete()
    for folder in outputs:
        shutil.rmtree(folder, ignore_errors=True)  # derived tables; their rows are gone
    log.warning(
        "deleted stream %r (id %s) by %s: data %s (%d files deleted)",
        locked.name,
        stream.pk,
        by,
        chosen,
        purged,
    )
    return Deleted(stream.pk, locked.name, chosen, purged)
