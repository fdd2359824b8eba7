"""Read one partition of a Bigtable change stream with the official client: a PartitionRead.

A read starts from the partition's continuation tokens (its cursor) or, for a root read
for the first time, from its watermark as the start time, and runs to ``end`` (None:
open-ended). It yields each change once its last message arrived, PROGRESS after a
heartbeat, and ``Ended`` when a CloseStream reports a split or merge. The client does
not retry ReadChangeStream: a stream broken with UNAVAILABLE is resumed here from the
last tokens, so nothing is lost or delivered twice; after ``max_attempts`` failures in a
row without a yielded item the read gives up with RetryableSourceError.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from google.cloud.bigtable_v2.types import ReadChangeStreamResponse

from partitions.sources.base import (
    PROGRESS,
    Ended,
    MalformedRecordError,
    PartitionState,
    ReadOptions,
    RetryableSourceError,
)

from .cursor import (
    Token,
    delivered,
    low_watermark,
    origin,
    parse_cursor,
    tokens_cursor,
    with_delivered,
    with_origin,
)
from .decode import ChangeAssembler
from .errors import classify, code_name, from_status
from .ranges import RowRange, label
from .requests import children_of, partition_range, read_request

# ReadChangeStream's own default deadline is 12 hours; a bounded read gets the time to
# its end plus this much for a backlog, an open-ended one the client's default.
BOUNDED_GRACE_S = 600.0
OPEN_ENDED_TIMEOUT_S = 43200.0
_OK = 0  # google.rpc.Code
_ONE_US = timedelta(microseconds=1)
_RESPONSE_PB = ReadChangeStreamResponse.pb


class BigtableRead:
    """One read of one partition's window; iterate it once for changes, PROGRESS and Ended."""

    def __init__(
        self,
        client,
        table_name: str,
        app_profile: str,
        partition: PartitionState,
        end: datetime | None,
        options: ReadOptions,
        *,
        max_attempts: int = 5,
        backoff_s: float = 0.05,
    ):
        try:
            self.row_range, self._tokens = parse_cursor(partition.cursor)
        except ValueError as error:
            raise MalformedRecordError(f"partition {partition.token}: {error}") from None
        self._client, self._table, self._profile = client, table_name, app_profile
        self._partition, self._end, self._options = partition, end, options
        self._max_attempts, self._backoff_s = max_attempts, backoff_s
        low = low_watermark(partition.cursor)
        self._delivered = delivered(partition.cursor)
        self._origin = origin(partition.cursor)
        self._restart = False  # a read from a time sent back to the origin's tokens
        # A merged child is only as far as its slowest parent (the lowest handed over).
        self.watermark = partition.watermark if low is None else min(partition.watermark, low)
        self._assembler = ChangeAssembler(where=partition.label or label(self.row_range))
        self._closed = threading.Event()
        self._call = None
        self.attempts = 0  # streams opened, for tests and logs
        self.messages = 0  # responses received over every stream
        self.retries = 0

    @property
    def cursor(self) -> dict[str, Any]:
        """Return the resume state after the last yielded item: the range and its latest tokens."""
        cursor = with_delivered(tokens_cursor(self.row_range, self._tokens), self._delivered)
        return with_origin(cursor, self._origin)

    def __iter__(self) -> Iterator[object]:
        return self._run()

    def close(self) -> None:
        """Stop the read early: cancel the gRPC call; safe to call twice and from another thread."""
        self._closed.set()
        call = self._call
        if call is not None:
            call.cancel()

    def _run(self) -> Iterator[object]:
        """Yield the read's items, resuming a stream broken with UNAVAILABLE from the last tokens."""
        if self._tokens_past_end():
            self._reached_end()  # a checkpoint stored after the end's last change: nothing is left
            return
        failures = 0
        while not self._closed.is_set():
            answered = self.messages
            try:
                for item in self._stream():
                    if item is not None:
                        yield item
                if not self._restart:
                    return
                self._restart = False  # read again from the origin's tokens at once
            except Exception as exc:  # classified below: the client raises many kinds
                if self._closed.is_set():
                    return
                error = classify(exc, self._table, self._profile)
                self._assembler.reset()  # a change cut off mid-way is sent again on resume
                if self.messages > answered:
                    # The server answered before the break: it is up, and the tokens (or the
                    # chunks of a long change) moved on. Only breaks without a word count.
                    failures = 0
                if error.code != "UNAVAILABLE" or failures + 1 >= self._max_attempts:
                    if error.retryable and failures:
                        raise RetryableSourceError(f"gave up after {failures + 1} attempts: {error}") from exc
                    raise error from exc
                # A stream broken once (a server restart, a GOAWAY) is resumed at once; one
                # that keeps breaking without progress is given more and more time.
                if failures:
                    self._closed.wait(min(self._backoff_s * 2**failures, 2.0))
                failures += 1
                self.retries += 1
            finally:
                self._cancel()

    def _tokens_past_end(self) -> bool:
        """Return whether the tokens are already past a change committed after the end.

        The server refuses a read whose end_time is not after its tokens' position: a read
        resumed from a checkpoint taken after the end's last change (a worker killed before
        the checkpoint that finished the partition) must not ask it.
        """
        if not self._tokens or self._end is None or self._delivered is None:
            return False
        return self._delivered > self._end

    def _stream(self) -> Iterator[object]:
        """Yield an item (or None) per message of one ReadChangeStream call, until it ends."""
        request = read_request(
            self._table,
            self._profile,
            self.row_range,
            self._tokens,
            self._start_time(),
            self._end,
            self._options,
        )
        self.attempts += 1
        self._call = self._client.read_change_stream(request=request, timeout=self._timeout())
        if self._closed.is_set():
            return
        for response in self._call:
            self.messages += 1
            raw = _RESPONSE_PB(response)  # the wrapped protobuf itself: no copy, no conversion
            yield self.on_response(raw)
            if raw.HasField("close_stream"):
                return
        # The call ended without a CloseStream. Past end_time that means the end was
        # reached; before it the server just ended the stream, and the next read resumes.
        if self._end is not None and datetime.now(UTC) > self._end:
            self._reached_end()

    def on_response(self, raw) -> object | None:
        """Take one raw ReadChangeStreamResponse; return the item it completes, if any (the hot path)."""
        kind = raw.WhichOneof("stream_record")
        if kind == "data_change":
            return self._data_change(raw.data_change)
        if kind == "heartbeat":
            return self._heartbeat(raw.heartbeat)
        if kind == "close_stream":
            return self._close_stream(raw.close_stream)
        return None  # a record kind newer than this reader: nothing to do with it

    def _start_time(self) -> datetime | None:
        """Return where a stream starts when there are no tokens: the watermark."""
        return None if self._tokens else self.watermark

    def _timeout(self) -> float:
        """Return the call's deadline in seconds: the option's, else until the end plus grace."""
        if self._options.timeout is not None:
            return self._options.timeout
        if self._end is None:
            return OPEN_ENDED_TIMEOUT_S
        remaining = (self._end - datetime.now(UTC)).total_seconds()
        return max(remaining, 0.0) + BOUNDED_GRACE_S

    def _cancel(self) -> None:
        """Cancel the current call, if any (the server then stops sending)."""
        call, self._call = self._call, None
        if call is not None:
            call.cancel()

    def _advance(self, watermark: datetime | None) -> None:
        """Move the watermark forward to an estimate, never back."""
        # The low watermark is an estimate and may step back; the read's never does.
        if watermark is not None and watermark > self.watermark:
            self.watermark = watermark

    def _data_change(self, raw):
        """Feed a DataChange; return the change it completes (then the cursor is its token), or None."""
        change = self._assembler.feed(raw)
        if change is None:
            return None
        self._tokens = [Token(self.row_range, change.token)]
        self._delivered = change.commit_timestamp
        # Other changes may share its commit timestamp (another cluster's, another
        # tiebreaker), so the watermark stays below it whatever the estimate says: a read
        # resumed from a stored watermark must not skip them.
        estimate = change.estimated_low_watermark
        if estimate is not None:
            self._advance(min(estimate, change.commit_timestamp - _ONE_US))
        return change

    def _heartbeat(self, raw):
        """Take a heartbeat's token and low watermark; return PROGRESS."""
        if self._assembler.in_progress:
            raise self._malformed("a heartbeat came in the middle of a change")
        token = raw.continuation_token
        token_range = self._range_of(token.partition)
        if token_range != self.row_range:
            raise self._malformed(f"a heartbeat's token is for {label(token_range)}, not this partition")
        self._tokens = [Token(token_range, token.token)]
        if raw.HasField("estimated_low_watermark"):
            self._advance(self._assembler.convert_time(raw.estimated_low_watermark))
        return PROGRESS

    def _close_stream(self, raw):
        """Return Ended with the new partitions of a split or merge, or None at the end time."""
        if self._assembler.in_progress:
            raise self._malformed("the stream closed in the middle of a change")
        if raw.continuation_tokens and not self._tokens and self._origin and self._origin.tokens:
            # A read from a time before the partition began (a re-read from its start, which
            # is its parents' watermark): the server names the partitions live then instead.
            # Its own changes begin at the tokens its parents handed over: read from those.
            self._tokens, self._restart = list(self._origin.tokens), True
            return None
        code, message = raw.status.code, raw.status.message
        if code == _OK and not raw.continuation_tokens and not raw.new_partitions:
            self._reached_end()
            return None
        if not raw.continuation_tokens:
            name = code_name(code)
            raise from_status(
                name, message or f"the stream closed with status {name}", self._table, self._profile
            )
        tokens = [self._own_part(t) for t in raw.continuation_tokens]
        partitions = [self._range_of(p) for p in raw.new_partitions]
        try:
            children = children_of(tokens, partitions, self.watermark)
        except ValueError as error:
            raise self._malformed(str(error)) from None
        # Resuming this partition from its closing tokens closes it again, the same way.
        self._tokens = tokens
        return Ended(self.watermark, children)

    def _own_part(self, raw_token) -> Token:
        """Return a handed-over token for its range within this partition's own range.

        The server has been seen to name a merged child's whole range in a closing
        parent's token; taken as is, the child would look covered by one parent and
        start before the others closed. Beam's connector intersects the two ranges
        (ChangeStreamContinuationTokenHelper); so does this reader.
        """
        token_range = self._range_of(raw_token.partition)
        own = token_range.intersection(self.row_range)
        if own is None:
            raise self._malformed(f"a closing token for {label(token_range)} lies outside this partition")
        return Token(own, raw_token.token)

    def _range_of(self, partition) -> RowRange:
        """Return a raw StreamPartition's row range, or raise MalformedRecordError."""
        try:
            return partition_range(partition)
        except ValueError as error:
            raise self._malformed(str(error)) from None

    def _malformed(self, message: str) -> MalformedRecordError:
        """Return the error for malformed data, naming the partition, and drop any partial change."""
        self._assembler.reset()
        where = self._partition.label or label(self.row_range)
        return MalformedRecordError(f"malformed change stream data: {message} (partition {where})")

    def _reached_end(self) -> None:
        """Mark the window done: the stream passed end_time, so every change to it arrived."""
        if self._end is not None:
            self._advance(self._end)
