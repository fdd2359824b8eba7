"""Fixtures for the streams tests: streams in any state, partitions, a fake task module."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from partitions.models import Partition
from streams.models import Stream

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class FakeTask:
    """Stand-in for a Celery task: records the ids it was sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def delay(self, stream_id: int) -> None:
        self.sent.append(stream_id)


@pytest.fixture
def sent_tasks(monkeypatch):
    """Replace partitions.tasks with fakes so actions can be tested without a broker."""
    fake = SimpleNamespace(start_stream_task=FakeTask(), drain_stream_task=FakeTask())
    monkeypatch.setitem(sys.modules, "partitions.tasks", fake)
    return fake


@pytest.fixture
def make_stream(db):
    """Return a factory for streams, put straight into the given state (test setup only)."""

    def make(name: str = "orders", state: str = Stream.State.NOT_STARTED, **fields) -> Stream:
        fields = {"start_at": T0, **fields}
        stream = Stream.objects.create(
            name=name, project="p", instance="i", database="d", change_stream="Orders", **fields
        )
        Stream.objects.filter(pk=stream.pk).update(state=state)
        stream.refresh_from_db()
        return stream

    return make


@pytest.fixture
def make_partition():
    """Return a factory for partitions of a stream."""
    counter = iter(range(1_000_000))

    def make(stream: Stream, state: str = Partition.State.RUNNING, minutes: float = 0, **fields) -> Partition:
        watermark = T0 + timedelta(minutes=minutes)
        return Partition.objects.create(
            stream=stream,
            token=f"token-{next(counter)}",
            state=state,
            start_at=T0,
            watermark=watermark,
            **fields,
        )

    return make
