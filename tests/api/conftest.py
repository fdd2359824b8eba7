"""Fixtures of the API tests: the PostgreSQL switch and fakes of the tasks the actions send.

Users, token clients and the stream come from tests/conftest.py.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from tests.api.support import django_db_setup  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set
from tests.factories.datastream import at_sim, ds_watch_sim, pick  # noqa: F401 - watched streams

ROLES = ("anonymous", "viewer", "operator", "superuser")


class FakeTask:
    """Stand-in for a Celery task: records the ids it was sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def delay(self, stream_id: int) -> None:
        self.sent.append(stream_id)


@pytest.fixture(autouse=True)
def sent_tasks(monkeypatch):
    """Replace partitions.pipeline.tasks with fakes: actions enqueue nothing real during API tests."""
    fake = SimpleNamespace(start_stream_task=FakeTask(), drain_stream_task=FakeTask())
    monkeypatch.setitem(sys.modules, "partitions.pipeline.tasks", fake)
    return fake


def stream_body(**fields) -> dict:
    """Return a valid body to create a stream."""
    return {
        "name": "payments",
        "project": "p",
        "instance": "i",
        "database": "d",
        "change_stream": "Payments",
        "dialect": "googlesql",
        "heartbeat_ms": 2000,
        "start_at": "2026-01-01T00:00:00Z",
        **fields,
    }
