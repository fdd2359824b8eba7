"""What a kind of source is: every kind's declarations, and the two protocols (DESIGN §11).

Pure Python, no Django. Every kind names itself, declares its settings once and checks
them, describes the source in one line, and says what a user must know: notes, advice
(DDL to run), how long the source keeps what is not read yet (retention), its cost model
and what reading it costs in calls. Then it is one of two kinds of kind:

- a ``ReadKind``: cdcweb's workers read its partitions. ``connect`` returns a ``Source``
  (roots, reads, landing rows) and its lineage rules say where a child is stored and
  when it may be read (Spanner change streams, commit-timestamp tables, Bigtable);
- a ``WatchedKind``: the source runs the stream itself; cdcweb watches its state,
  errors, objects and metrics and operates it (Datastream). ``connect`` returns a
  handle on the one stream the settings name.

Shared code branches on the protocol (``isinstance(kind, ReadKind)``) and asks the kind;
it never compares a kind's name or probes for an attribute.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .base import NewPartition, PartitionState, Setting, Source
from .checks import Check


@dataclass(frozen=True)
class Advice:
    """What to change on the source for a kind to work well: statements to run, warnings, notes,
    and the stream settings that go with them (the stream page shows it)."""

    statements: tuple[str, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    settings: dict[str, str]


@dataclass(frozen=True)
class Assumption:
    """One figure a report rests on, shown beside it: its name, value, unit and where it comes from."""

    name: str
    value: Any
    unit: str
    source: str
    note: str = ""  # e.g. "measured", or the list-price caveat


class SourceKind(ABC):
    """What every kind declares, whether cdcweb reads it or watches it."""

    name: str  # the Stream.source_kind value, e.g. "bigtable"
    label: str  # e.g. "Bigtable change stream"
    settings: tuple[Setting, ...]
    # Why streams of this kind cannot be created or started ("" when they can).
    unavailable: str = ""
    # Where connect() reaches the source, in plain words (`cdc_stream create --help` shows it).
    endpoint: str = ""
    # Whether the source runs the stream (WatchedKind): streams/, which cannot import this
    # module, asks this rather than the class.
    watched: bool = False

    @abstractmethod
    def clean(self, values: dict[str, Any]) -> dict[str, Any]:
        """Return the settings cleaned (types, defaults), or raise SettingsError naming each bad one."""

    @abstractmethod
    def describe(self, values: dict[str, Any]) -> str:
        """Return one line naming the source for cleaned settings, as pages show it."""

    def notes(self, values: dict[str, Any]) -> list[str]:
        """Return what a user of this kind must know, in plain sentences (the stream page shows them)."""
        return []

    def advice(self, values: dict[str, Any]) -> Advice | None:
        """Return what to change on the source for this stream, or None when there is nothing to say."""
        return None

    def retention(self, values: dict[str, Any]) -> timedelta | None:
        """Return how long the source keeps changes not read yet (None: it does not expire them).

        A paused or failed stream must resume within it from its low watermark; the
        dashboard warns before that time and the retention alert fires on it.
        """
        return None

    def start_position(self, value: Any) -> dict[str, Any]:
        """Return a source position a recovery may start from, as the handle takes it; raise ValueError.

        ``value`` is the API's JSON or an operator's text. By default a kind takes none.
        """
        raise ValueError(f"{self.label}s recover from no given position")

    def cursor_rows(self, cursor: dict[str, Any]) -> list[tuple[str, str]]:
        """Return a partition's resume state as (what, value) rows for its page (none: nothing to show)."""
        return []

    def checks(self, values: dict[str, Any], start: datetime | None = None) -> Sequence[Check]:
        """Return what to ask the source before a stream of cleaned settings exists (checks.py).

        Each check names the setting it is about and fails with the reason the stream would
        fail; ``start`` is the stream's start (None: now). A kind with nothing to ask has none.
        """
        return ()

    def cost_model(self, values: dict[str, Any]) -> tuple[Assumption, ...]:
        """Return the cost report's price model (the Spark job's PriceModel fields), each with its source."""
        return ()

    def reading_assumptions(
        self, values: dict[str, Any], partitions: float, window_seconds: int, heartbeat_ms: int
    ) -> tuple[Assumption, ...]:
        """Return what reading costs in calls a day, for `partitions` open on average."""
        return ()


class OwnTokens:
    """The lineage rules of a kind whose children come with tokens of their own (Spanner).

    A child is stored under its own token, has no cursor to gather, and may be read once
    every parent it names has finished. A kind with fixed partitions has no children at all.
    """

    def merge_cursor(self, stored: dict[str, Any], contribution: dict[str, Any]) -> dict[str, Any]:
        """Return the stored cursor: a child resumes from its watermark alone."""
        return dict(stored)

    def child_ready(self, child: PartitionState, parents_finished: bool) -> bool:
        """Return whether every parent the child's records named has finished."""
        return parents_finished

    def place_child(self, child: NewPartition, known: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        """Return the child's own token (unique in a stream), and whether it is stored already."""
        return child.token, child.token in known


class ReadKind(SourceKind):
    """A kind whose partitions cdcweb's workers read (records, PROGRESS, Ended; base.py)."""

    read_method: str  # the landing envelope's read_method, e.g. "bigtable-change-stream"
    lineage: bool  # True: partitions split and merge; False: fixed partitions (shards)
    windows: bool  # True: a read covers one window of stream time; False: one poll up to the stream's end

    @abstractmethod
    def connect(self, values: dict[str, Any]) -> Source:
        """Return a Source for cleaned settings (endpoints from the environment where the client's own)."""

    def reread_cursor(self, cursor: dict[str, Any], at: datetime) -> dict[str, Any] | None:
        """Return the cursor of a partition to be read again from `at` (its new watermark).

        None: this kind cannot read a partition again from a time (the operator is told so).
        A kind whose reads start from the watermark alone returns ``{}``.
        """
        return None

    @abstractmethod
    def merge_cursor(self, stored: dict[str, Any], contribution: dict[str, Any]) -> dict[str, Any]:
        """Return a child's cursor once one more parent handed over its part (Bigtable tokens)."""

    @abstractmethod
    def child_ready(self, child: PartitionState, parents_finished: bool) -> bool:
        """Return whether the child may be read now (Spanner: every named parent FINISHED)."""

    def complete_at_end(
        self, child: PartitionState, ended: list[PartitionState]
    ) -> tuple[dict[str, Any], list[str]] | None:
        """Return a child's cursor completed by partitions that reached a bounded stream's end
        without ending (and their tokens), when it waits for nothing else; None: it still waits.

        Bigtable: a merge whose parents close on either side of the stream's end. A kind
        whose children wait for named parents only (Spanner) never needs it.
        """
        return None

    def is_generation(self, token: str, base: str) -> bool:
        """Return whether a stored token is the partition ``base`` names, or a later generation of it."""
        return token == base

    @abstractmethod
    def place_child(self, child: NewPartition, known: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        """Return (token to store the child under, whether it joins the stored partition of that token).

        ``known`` maps the stored partitions that may be this child (same token, or an
        earlier generation of the same key range) to their cursors. A change stream's
        tokens are unique: the child is its own token. A Bigtable range can come back
        after it finished, and then needs a new generation's token.
        """


class WatchedKind(SourceKind):
    """A kind whose streams the source runs; cdcweb watches and operates them."""

    watched = True

    @abstractmethod
    def connect(self, values: dict[str, Any]) -> Any:
        """Return a handle on the one stream the cleaned settings name (watch it, operate it)."""
