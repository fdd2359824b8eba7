"""How the pipeline asks for work later: a read of a partition, a start of a stream.

Scheduling, the reading services and failure handling are handed a ``Queue``;
``partitions.pipeline.tasks`` hands them the Celery one, tests a recorder. So none of them
imports the task module that calls them.
"""

from __future__ import annotations

from typing import Protocol

from celery import current_app
from django.db import transaction


class Queue(Protocol):
    """Somewhere to send work once the current transaction commits."""

    def read(self, partition_id: int, countdown: float = 0, urgent: bool = False) -> None:
        """Queue one read of the partition (urgent: a first read, ahead of next windows)."""

    def start(self, stream_id: int, countdown: float = 0) -> None:
        """Queue the start (the initial query) of the stream."""


class NamedTaskQueue:
    """The pipeline's Celery tasks sent by name, once the transaction commits.

    For callers that act on partitions from above the pipeline (the API, pages, admin and
    commands): they queue a read without importing the task module that reads.
    """

    READ = "partitions.pipeline.tasks.read_partition_task"
    START = "partitions.pipeline.tasks.start_stream_task"

    def read(self, partition_id: int, countdown: float = 0, urgent: bool = False) -> None:
        """Queue one read; urgent goes to the "urgent" queue, as a first read does."""
        options = {"countdown": countdown} if countdown else {}
        if urgent:
            options["queue"] = "urgent"
        transaction.on_commit(lambda: _send(self.READ, (partition_id,), options))

    def start(self, stream_id: int, countdown: float = 0) -> None:
        """Queue the stream's start task."""
        options = {"countdown": countdown} if countdown else {}
        transaction.on_commit(lambda: _send(self.START, (stream_id,), options))


def _send(name: str, args: tuple, options: dict) -> None:
    """Send task `name` now (run in-process under CELERY_TASK_ALWAYS_EAGER, for debugging)."""
    if current_app.conf.task_always_eager:
        current_app.tasks[name].apply(args)
    else:
        current_app.send_task(name, args, **options)


NAMED = NamedTaskQueue()
