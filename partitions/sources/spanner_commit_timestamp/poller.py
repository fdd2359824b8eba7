"""One poll of one partition (a shard, or the whole table): the kind's PartitionRead.

A poll runs in ONE strong read-only transaction (a multi-use snapshot), so every page
of it sees the table as of the same read timestamp R, which the transaction returns
with its first query. Steps:

1. Ask for a page of rows after the cursor, ordered by (commit timestamp, key).
2. Yield each row as a record; the cursor becomes (its commit timestamp, its key) and
   the watermark one microsecond before its commit timestamp (rows sharing that
   timestamp may follow on the next page; commit timestamps are whole microseconds).
3. A full page: go on with the next page, in the same transaction, unless the window's
   row cap is reached (a backlog: the next read should follow at once).
4. A page that is not full: every row committed up to R (or up to the end, if it comes
   first) has been read, since a strong read at R sees every commit at or before R.
   The watermark and the cursor move to that point (PROGRESS), and when R has passed
   the stream's end the partition has ended (Ended, no children).
"""

from __future__ import annotations

from datetime import datetime

from partitions.sources.base import PROGRESS, Ended, PartitionState, PermanentSourceError, SourceError
from partitions.sources.spanner_retry import unavailable_retry

from .errors import source_error
from .query import ONE_US, Cursor, TableSpec, page_query
from .records import RowLayout, to_utc

RETRY = unavailable_retry()  # a page waits for an unavailable server about a lease, then fails

# Rows per query. Each page is one round trip; a page holds its decoded rows in memory
# at once (about 1 KB each), so 1,000 rows cost about 1 MB and a few ms of latency.
PAGE_SIZE = 1_000
# Rows per poll before the read returns so the pipeline checkpoints and lands them: at
# about 20k rows/s decoded, 20,000 rows are about a second of work and 20 MB of records.
WINDOW_ROWS = 20_000
QUERY_TIMEOUT_S = 60.0  # one page; ExecuteStreamingSql's own default is an hour


class PollRead:
    """Read one window of one partition: pages of rows after its cursor, at one read timestamp."""

    def __init__(
        self,
        database,
        spec: TableSpec,
        dialect: str,
        partition: PartitionState,
        shard: int | str | None,
        end: datetime | None,
        *,
        poll_interval_s: float,
        timeout: float | None = None,
        page_size: int = PAGE_SIZE,
        window_rows: int = WINDOW_ROWS,
        database_id: str = "",
    ):
        if page_size < 1 or window_rows < 1:
            raise ValueError("page_size and window_rows must be positive")
        self.watermark = partition.watermark
        self._cursor_json: dict | None = dict(partition.cursor)
        self.poll_interval_s = poll_interval_s
        self.read_timestamp: datetime | None = None  # the transaction's, once known
        self.live = False  # True: the poll read everything up to its read timestamp
        self.capped = False  # True: it stopped at the row cap with rows left (a backlog)
        self.ended = False
        self.rows = 0
        self.pages = 0
        self._database, self._spec, self._dialect = database, spec, dialect
        self._shard, self._end = shard, end
        self._timeout = timeout or QUERY_TIMEOUT_S
        self._page_size, self._window_rows, self._database_id = page_size, window_rows, database_id
        self._position = (
            Cursor.from_json(partition.cursor) if partition.cursor else Cursor.starting_at(self.watermark)
        )
        self._items = None

    @property
    def cursor(self) -> dict:
        """Return the resume state after the last item: JSON-able, built when asked for."""
        if self._cursor_json is None:
            self._cursor_json = self._position.to_json()
        return self._cursor_json

    def __iter__(self):
        """Return the poll's items: records, then PROGRESS and Ended as they apply (runs once)."""
        if self._items is None:
            self._items = self._poll()
        return self._items

    def close(self) -> None:
        """Stop the poll early; the snapshot is released and the open page abandoned."""
        if self._items is None:
            self._items = iter(())
        else:
            self._items.close()

    def _poll(self):
        """Yield pages in one snapshot until one is short or the row cap is reached, then the end."""
        try:
            with self._database.snapshot(multi_use=True) as snapshot:
                full = True
                while full and self.rows < self._window_rows:
                    before = self.rows
                    yield from self._page(snapshot)
                    full = self.rows - before == self._page_size
        except SourceError:
            raise
        except Exception as exc:
            raise source_error(exc, self._spec, self._database_id) from exc
        self.capped = full
        if not full:
            yield from self._reached_read_timestamp()

    def _page(self, snapshot):
        """Yield one page's records, moving the cursor and the watermark after each."""
        query = page_query(self._spec, self._dialect, self._position, self._shard, self._end, self._page_size)
        rows = snapshot.execute_sql(
            query.sql,
            params=query.params,
            param_types=query.param_types,
            timeout=self._timeout,
            lazy_decode=True,
            retry=RETRY,
        )
        layout = None
        for row in rows:
            if layout is None:
                layout = RowLayout(rows, self._spec, self._dialect)
            record = layout.record(row, self._shard)
            self._position = Cursor(record.commit_timestamp, layout.cursor_key(record), layout.key_types)
            self._cursor_json = None
            self.watermark = max(self.watermark, record.commit_timestamp - ONE_US)
            self.rows += 1
            yield record
        self.pages += 1
        if self.read_timestamp is None:
            self.read_timestamp = _read_timestamp(rows, snapshot)

    def _reached_read_timestamp(self):
        """Move the watermark and the cursor to the read timestamp (or the end); say if it ended."""
        self.live = True
        reached = self.read_timestamp if self._end is None else min(self.read_timestamp, self._end)
        if reached > self.watermark:
            self.watermark = reached
            self._position = Cursor(reached)  # after every row committed up to it
            self._cursor_json = None
            yield PROGRESS
        if self._end is not None and self.read_timestamp >= self._end:
            self.ended = True
            yield Ended(at=self._end)


def _read_timestamp(rows, snapshot) -> datetime:
    """Return the transaction's read timestamp (microseconds, rounded down)."""
    # The query that began the transaction inline carries it in its result metadata;
    # the snapshot keeps it too (a private attribute in google-cloud-spanner 3.71).
    metadata = rows.metadata
    found = metadata.transaction.read_timestamp if metadata is not None and metadata.transaction else None
    found = found or getattr(snapshot, "_transaction_read_timestamp", None)
    if found is None:
        raise PermanentSourceError(
            "the read-only transaction returned no read timestamp, so the poll cannot tell how far it read"
        )
    return to_utc(found)
