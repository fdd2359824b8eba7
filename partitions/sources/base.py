"""The read contract: what the pipeline asks of a kind it reads (DESIGN §11; kinds.py has the kinds).

Pure Python, no Django: a kind's reader package (``partitions/sources/<kind>/``) builds
on these types, and the pipeline (leases, checkpoints, landing, lineage, lag, stall
rules, pages, API, reports) works with them without knowing the kind's record shapes.

One read of one window of one partition is a ``PartitionRead``: iterate it and it
yields, in order,

- data records (the kind's own objects; each has ``commit_timestamp``, an aware UTC
  datetime), which the kind's ``landing_table`` turns into landing rows;
- ``PROGRESS`` when the watermark or the cursor moved without data (a heartbeat, an
  empty poll, a Bigtable low-watermark estimate), so a reader at the live edge can
  checkpoint on time;
- at most one ``Ended`` when the partition ended (its children, possibly none), last.

After each item, ``read.watermark`` and ``read.cursor`` say how far the read got: every
record committed at or before ``watermark`` has been yielded, and ``cursor`` is the
kind's resume state (JSON-able) for a later read to continue exactly after the last
yielded item. The pipeline stores both, with the landed records, in one checkpoint;
the next read of the partition gets them back in ``PartitionState``.

A kind may also offer ``read_async`` (an ``AsyncPartitionRead``: the same items, through
its client's asyncio API). The pipeline then follows its live partitions on one event
loop per process, many at once (partitions/pipeline/live.py); a kind without it has a
thread per live partition.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


class _Progress:
    """The watermark or the cursor moved with no data record (a heartbeat, an empty poll)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PROGRESS"


PROGRESS = _Progress()


@dataclass(frozen=True)
class NewPartition:
    """A partition a read discovered: a root (no parents) or a child of the partition read.

    ``parents`` lists the tokens the child must wait for when the source names them
    (Spanner); a source that does not (Bigtable) leaves it empty and decides readiness
    from the merged ``cursor`` with ``ReadKind.child_ready`` (kinds.py). ``cursor`` is this
    parent's contribution to the child's starting state (Bigtable continuation tokens);
    ``label`` is how pages show the partition (a key range, a shard).
    """

    token: str
    start: datetime
    parents: tuple[str, ...] = ()
    cursor: dict[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class Ended:
    """The partition read ended at ``at``; ``children`` continue it (empty: none do)."""

    at: datetime
    children: tuple[NewPartition, ...] = ()


@dataclass(frozen=True)
class PartitionState:
    """A partition as stored, handed to a read: where to continue from."""

    token: str
    start: datetime
    watermark: datetime
    cursor: dict[str, Any] = field(default_factory=dict)
    label: str = ""


class PartitionRead(Protocol):
    """One read of one partition's window; iterate it for records, PROGRESS and Ended."""

    watermark: datetime
    cursor: dict[str, Any]

    def __iter__(self) -> Iterator[object]: ...

    def close(self) -> None:
        """Stop the read early (cancel the query); safe to call twice."""


class AsyncPartitionRead(Protocol):
    """The same read on an event loop: ``async for`` it; ``await aclose()`` stops it early."""

    watermark: datetime
    cursor: dict[str, Any]

    def __aiter__(self) -> AsyncIterator[object]: ...

    async def aclose(self) -> None:
        """Stop the read early (cancel the query); safe to call twice."""


class SourceError(Exception):
    """Base of the errors a reader raises; ``retryable`` says whether a retry can help."""

    retryable = False

    def __init__(self, message: str, *, code: str = ""):
        self.code = code
        super().__init__(f"{code}: {message}" if code else message)


class RetryableSourceError(SourceError):
    """A transient failure (unavailable, aborted, deadline): the same read may succeed later."""

    retryable = True


class PermanentSourceError(SourceError):
    """A failure retrying cannot fix (not found, no access, retention exceeded, bad config)."""


class MalformedRecordError(PermanentSourceError):
    """The source sent something that is not a well-formed record of its kind."""


class SettingsError(ValueError):
    """Connection settings a kind refuses: ``errors`` maps each setting's name to why."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))


@dataclass(frozen=True)
class Setting:
    """One connection setting of a kind, as the create form, the API, its schema and the CLI show it.

    ``type`` is one of "str", "int", "bool", "list" (of strings; the CLI takes them comma
    separated) or "choice" (one of ``choices``). ``cli`` is the ``cdc_stream create`` flag.
    Every setting is frozen once the stream has started unless ``editable`` says otherwise.
    """

    name: str
    label: str
    type: str = "str"
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()
    help: str = ""
    cli: str = ""
    editable: bool = False


@dataclass(frozen=True)
class ReadOptions:
    """How the pipeline reads: the stream's heartbeat (or poll) interval and a query deadline."""

    heartbeat_ms: int
    timeout: float | None = None


class Source(Protocol):
    """A connected source of one stream (one per stream and worker process, reused)."""

    def roots(self, at: datetime, end: datetime | None, options: ReadOptions) -> list[NewPartition]:
        """Return the partitions that start the stream at ``at`` (Spanner: the initial query)."""

    def read(self, partition: PartitionState, end: datetime | None, options: ReadOptions) -> PartitionRead:
        """Return a read of the partition from its watermark/cursor to ``end`` (None: open-ended)."""

    def landing_table(self, stream_name: str, token: str, records: list, read_at: datetime):
        """Return the landing rows (a pyarrow Table in LANDING_SCHEMA) of some of this kind's records."""

    def next_read_delay(self, read: PartitionRead) -> float:
        """Return how long to wait before reading the partition again (0: at once; a poller's interval)."""


def whole_hours(value: Any, low: int, high: int, default: int) -> int:
    """Return a number of hours from low to high (blank: default); raise ValueError saying the range."""
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"must be a whole number of hours from {low} to {high}")
    return value
