"""Factories the tests (and benchmarks) share: streams and partitions straight through the ORM, and wait_for.

They put rows in a given state directly, as test setup: nothing here goes through
the state machine or the pipeline, which the tests exercise instead.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition
from streams.models import Stream

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
_tokens = itertools.count()


SPANNER = {"project": "p", "instance": "i", "database": "d", "change_stream": "Orders", "dialect": ""}
SETTING_NAMES = {"project", "instance", "database", "change_stream", "dialect", "emulator_host"}


def make_stream(name: str = "orders", state: str = Stream.State.NOT_STARTED, **fields) -> Stream:
    """Create a Spanner change stream in `state` (set directly: test setup, not a transition).

    Its connection settings may be given as keywords too (project=..., emulator_host=...).
    """
    settings = {**SPANNER, **{k: fields.pop(k) for k in list(fields) if k in SETTING_NAMES}}
    stream = Stream.objects.create(name=name, **{"start_at": T0, "connection": settings, **fields})
    Stream.objects.filter(pk=stream.pk).update(state=state)
    stream.refresh_from_db()
    return stream


def make_partition(
    stream: Stream, state: str = Partition.State.RUNNING, minutes: float = 0, **fields
) -> Partition:
    """Create a partition of the stream with its watermark `minutes` after T0."""
    fields = {"token": f"token-{next(_tokens)}", "start_at": T0, **fields}
    return Partition.objects.create(
        stream=stream, state=state, watermark=T0 + timedelta(minutes=minutes), **fields
    )


def wait_for(
    what: str,
    check: Callable[[], object],
    timeout: float = 60,
    every: float = 0.2,
    detail: Callable[[], object] | None = None,
):
    """Return check()'s first truthy value, or fail the test naming what did not happen.

    The failure says what was awaited, for how long, what check() last returned and, if
    given, what detail() returns then (the state seen, a log's tail). Poll with this
    instead of sleeping: a loaded machine gets the whole timeout, a quick one no wait.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(every)  # the poll interval: the one sleep that waits for a state
    message = f"timed out after {timeout:g}s waiting for {what} (last check gave {value!r})"
    if detail is not None:
        message += f"\n{detail()}"
    pytest.fail(message)


def reference(stream) -> dict:
    """Return the stream's progress computed the plain way, row by row (what the read model must give)."""
    rows = list(Partition.objects.filter(stream=stream))
    live = sorted((p for p in rows if p.state != Partition.State.FINISHED), key=lambda p: (p.watermark, p.pk))
    holder = live[0] if live else None
    return {
        "by_state": {s: sum(p.state == s for p in rows) for s in Partition.State.values},
        "data_records": sum(p.data_records for p in rows),
        "holder": holder,
        "low": holder.watermark if holder else None,
        "lag": (timezone.now() - holder.watermark).total_seconds() if holder else None,
    }


class RecordingQueue:
    """The pipeline's Queue (partitions.pipeline.queue) for tests: records what would be sent."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, float]] = []
        self.starts: list[tuple[int, float]] = []

    def read(self, partition_id: int, countdown: float = 0, urgent: bool = False) -> None:
        """Record a read of the partition after `countdown` seconds."""
        self.reads.append((partition_id, countdown))

    def start(self, stream_id: int, countdown: float = 0) -> None:
        """Record a start of the stream after `countdown` seconds."""
        self.starts.append((stream_id, countdown))
