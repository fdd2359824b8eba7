"""How the pipeline asks for work later: a read of a partition, a start of a stream.

Scheduling, the reading services and failure handling are handed a ``Queue``;
``partitions.pipeline.tasks`` hands them the Celery one, tests a recorder. So none of them
imports the task module that calls them.
"""

from __future__ import annotations

from typing import Protocol


class Queue(Protocol):
    """Somewhere to send work once the current transaction commits."""

    def read(self, partition_id: int, countdown: float = 0, urgent: bool = False) -> None:
        """Queue one read of the partition (urgent: a first read, ahead of next windows)."""

    def start(self, stream_id: int, countdown: float = 0) -> None:
        """Queue the start (the initial query) of the stream."""
