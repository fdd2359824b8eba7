"""Fixtures for the streams tests: a recorder of the pipeline tasks the actions send."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from streams import dispatch
from tests.factories.datastream import at_sim, ds_watch_sim  # noqa: F401 - watched streams' objects


class SentTask:
    """The stream ids one task was sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []


@pytest.fixture
def sent_tasks(monkeypatch):
    """Record the tasks the actions send by name (start_stream_task, drain_stream_task), not a broker."""
    tasks = SimpleNamespace(start_stream_task=SentTask(), drain_stream_task=SentTask())

    def send(name: str, args: tuple) -> None:
        getattr(tasks, name.rsplit(".", 1)[1]).sent.append(args[0])

    monkeypatch.setattr(dispatch, "send", send)
    return tasks
