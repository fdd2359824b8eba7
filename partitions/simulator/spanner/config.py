"""The simulator's settings as one dataclass, plus parsers for their command-line forms.

Argparse-free so that tests, benchmarks and the management command build the same
configuration; every parser raises ValueError with a message fit for one stderr line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from partitions.sources.spanner_change_stream.query import DIALECTS, GOOGLESQL, validate_stream_name

DEFAULT_DATABASES = (("demo-db", "googlesql"), ("demo-pg", "postgresql"))
FAULT_KINDS = ("unavailable", "internal", "malformed", "slow")
_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s|m|h|d)?")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_DB_NAME = re.compile(r"[a-z][a-z0-9_-]{1,29}")


@dataclass(frozen=True)
class Fault:
    """One injected fault: a kind and its value (a probability, or milliseconds)."""

    kind: str
    value: float


@dataclass(frozen=True)
class SimulatorConfig:
    """Everything that determines what the simulator serves.

    Records and topology are a pure function of these fields (epoch included), so two
    servers, or a server and ``ground_truth``, with equal configs agree exactly.
    """

    seed: int = 1
    databases: tuple[tuple[str, str], ...] = DEFAULT_DATABASES
    stream: str = "Changes"
    roots: int = 4
    split_every: float = 60.0
    merge_every: float = 60.0
    tps: float = 20.0
    max_keys: int = 4
    retention: float = 86400.0
    epoch: datetime | None = None
    faults: tuple[Fault, ...] = ()
    max_workers: int = 64
    batch_rows: int = 64
    batch_bytes: int = 64 * 1024
    # The commit-timestamp tables (watched_tables.py): row versions per second in each
    # table, the shard values of the sharded one, and the seconds between a key's writes.
    table_rate: float = 20.0
    table_shards: int = 19
    table_update_after: int = 60

    def __post_init__(self):
        validate_stream_name(self.stream)
        if self.roots < 1:
            raise ValueError(f"roots must be at least 1, got {self.roots}")
        if self.split_every <= 0 or self.merge_every <= 0:
            raise ValueError("split_every and merge_every must be positive")
        if self.tps < 0:
            raise ValueError(f"tps must not be negative, got {self.tps}")
        if not 1 <= self.max_keys <= 64:
            raise ValueError(f"max_keys must be between 1 and 64, got {self.max_keys}")
        if self.retention <= 0:
            raise ValueError(f"retention must be positive, got {self.retention}")
        if self.epoch is not None and self.epoch.tzinfo is None:
            raise ValueError("epoch must be timezone-aware")
        if not self.databases:
            raise ValueError("at least one database is needed")
        if not 0 <= self.table_rate <= 500_000:
            raise ValueError(f"table rate must be between 0 and 500,000 rows/s, got {self.table_rate}")
        if not 1 <= self.table_shards <= 1_000:
            raise ValueError(f"table shards must be between 1 and 1,000, got {self.table_shards}")
        if not 1 <= self.table_update_after <= 86_400:
            raise ValueError(f"table update interval must be 1-86,400 s, got {self.table_update_after}")

    def resolved(self, now: datetime | None = None) -> SimulatorConfig:
        """Return a copy whose epoch is set: now - retention, floored to the minute."""
        if self.epoch is not None:
            return self
        now = now or datetime.now(UTC)
        epoch = (now - timedelta(seconds=self.retention)).replace(second=0, microsecond=0)
        return replace(self, epoch=epoch)

    def dialect_of(self, database: str) -> str | None:
        """Return the dialect of a configured database, or None if it is not served."""
        return dict(self.databases).get(database)

    def fault(self, kind: str) -> float:
        """Return the summed value of the faults of one kind (0 when none)."""
        return sum(f.value for f in self.faults if f.kind == kind)


def parse_duration(text: str) -> float:
    """Return seconds for '90', '90s', '1500ms', '15m', '1h' or '1d'."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        raise ValueError(f"invalid duration {text!r}: use e.g. 90s, 15m, 1h, 1d")
    return float(match["n"]) * _UNITS[match["unit"]]


def parse_database(text: str) -> tuple[str, str]:
    """Return (name, dialect) for 'NAME' or 'NAME:googlesql|postgresql'."""
    name, _, dialect = text.partition(":")
    dialect = (dialect or GOOGLESQL).lower()
    if not _DB_NAME.fullmatch(name):
        raise ValueError(f"invalid database name {name!r}: use 2-30 of a-z, 0-9, _ and -")
    if dialect not in DIALECTS:
        raise ValueError(f"invalid dialect {dialect!r} for database {name}: use googlesql or postgresql")
    return name, dialect


def parse_timestamp(text: str) -> datetime:
    """Return an aware UTC datetime for an ISO 8601 text ('Z' or an offset; naive means UTC)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise ValueError(f"invalid timestamp {text!r}: use ISO 8601, e.g. 2024-05-01T09:00:00Z") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_fault(text: str, kinds: tuple[str, ...] = FAULT_KINDS) -> Fault:
    """Return a Fault for 'KIND:P' (a probability) or 'slow:MS', KIND one of `kinds`
    (this simulator's: unavailable, internal, malformed, slow)."""
    kind, _, raw = text.partition(":")
    kind = kind.strip().lower()
    if kind not in kinds:
        raise ValueError(f"invalid fault {text!r}: kinds are {', '.join(kinds)}")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"invalid fault {text!r}: give a number after the colon") from None
    if kind == "slow" and value < 0 or kind != "slow" and not 0 <= value <= 1:
        what = "milliseconds >= 0" if kind == "slow" else "a probability in [0, 1]"
        raise ValueError(f"invalid fault {text!r}: the value must be {what}")
    return Fault(kind, value)
