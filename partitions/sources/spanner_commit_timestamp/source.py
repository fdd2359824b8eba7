"""A connected table watched by commit timestamp: the kind's Source.

Partitions are fixed: one per shard value (token "shard:<value>"), or one for the
whole table (token "all") when it has no shard column. None ever splits, merges or
has children; a partition ends only when a poll passes the stream's end.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from partitions.sources.base import NewPartition, PartitionState, PermanentSourceError, ReadOptions
from partitions.sources.spanner_change_stream.errors import SpannerError
from partitions.sources.spanner_change_stream.reader import detect_dialect

from .errors import source_error
from .landing import landing_table
from .poller import PAGE_SIZE, WINDOW_ROWS, PollRead
from .query import TableSpec

ALL_ROWS = "all"


def shard_token(shard: int | str) -> str:
    """Return the partition token of a shard value."""
    return f"shard:{shard}"


class CommitTimestampSource:
    """Poll one table of one database, one partition per shard (or one for all rows)."""

    def __init__(
        self,
        database,
        settings: dict[str, Any],
        *,
        page_size: int = PAGE_SIZE,
        window_rows: int = WINDOW_ROWS,
    ):
        self.database = database
        self.spec = TableSpec.from_settings(settings)  # checks every name again, before any query
        self.database_id = settings["database"]
        self.page_size, self.window_rows = page_size, window_rows
        self._dialect = settings.get("dialect") or None
        self._shards = {shard_token(s): s for s in settings.get("shards") or ()}
        if bool(self._shards) != bool(self.spec.shard_column):
            raise ValueError("shards and a shard column go together")

    @property
    def dialect(self) -> str:
        """Return the database's dialect: the setting's, or asked of the database once."""
        if self._dialect is None:
            try:
                self._dialect = detect_dialect(self.database)
            except SpannerError as error:
                raise source_error(error, self.spec, self.database_id) from error
        return self._dialect

    def roots(self, at: datetime, end: datetime | None, options: ReadOptions) -> list[NewPartition]:
        """Return the fixed partitions, each starting at ``at``: one per shard, or all rows."""
        if not self._shards:
            return [NewPartition(ALL_ROWS, at, label="all rows")]
        return [NewPartition(token, at, label=f"shard {shard}") for token, shard in self._shards.items()]

    def read(self, partition: PartitionState, end: datetime | None, options: ReadOptions) -> PollRead:
        """Return one poll of the partition from its cursor (or watermark) up to the stream's end."""
        return PollRead(
            self.database,
            self.spec,
            self.dialect,
            partition,
            self._shard_of(partition.token),
            end,
            poll_interval_s=options.heartbeat_ms / 1000,
            timeout=options.timeout,
            page_size=self.page_size,
            window_rows=self.window_rows,
            database_id=self.database_id,
        )

    def _shard_of(self, token: str) -> int | str | None:
        """Return the shard value a partition token stands for (None: all rows)."""
        if not self._shards and token == ALL_ROWS:
            return None
        if token in self._shards:
            return self._shards[token]
        raise PermanentSourceError(f"partition {token!r} is not a shard of this stream's settings")

    def landing_table(self, stream_name: str, token: str, records: list, read_at: datetime):
        """Return the landing rows of some records (one per row read)."""
        return landing_table(stream_name, token, records, read_at)

    def next_read_delay(self, read: PollRead) -> float:
        """Return 0 after a poll that stopped at its row cap (a backlog), else the poll interval."""
        return 0.0 if read.capped else read.poll_interval_s
