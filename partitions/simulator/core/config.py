"""What every change-stream simulator's settings hold, and the parsers of their command-line forms.

Argparse-free so that tests, benchmarks and the management commands build the same
configuration; every parser raises ValueError with a message fit for one stderr line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Self

from .clock import to_us
from .topology import Topology

_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s|m|h|d)?")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


@dataclass(frozen=True)
class Fault:
    """One injected fault: a kind and its value (a probability, or milliseconds)."""

    kind: str
    value: float


@dataclass(frozen=True)
class ChangeStreamConfig:
    """The settings every change-stream simulator has: its partitions over time, rate, retention, faults.

    What a simulator serves is a pure function of its config's fields (epoch included), so
    two servers, or a server and ``ground_truth``, with equal configs agree exactly. ``tps``
    is the events per second (a simulator says which: transactions, changes per table).
    Each simulator's config adds its own fields and checks, retention's range among them.
    """

    seed: int = 1
    roots: int = 4
    split_every: float = 60.0
    merge_every: float = 60.0
    tps: float = 20.0
    retention: float = 86400.0
    epoch: datetime | None = None
    faults: tuple[Fault, ...] = ()
    max_workers: int = 64

    def __post_init__(self):
        if self.roots < 1:
            raise ValueError(f"roots must be at least 1, got {self.roots}")
        if self.split_every <= 0 or self.merge_every <= 0:
            raise ValueError("split_every and merge_every must be positive")
        if self.tps < 0:
            raise ValueError(f"tps must not be negative, got {self.tps}")
        if self.epoch is not None and self.epoch.tzinfo is None:
            raise ValueError("epoch must be timezone-aware")

    def resolved(self, now: datetime | None = None) -> Self:
        """Return a copy whose epoch is set: now - retention, floored to the minute."""
        if self.epoch is not None:
            return self
        now = now or datetime.now(UTC)
        return replace(self, epoch=(now - timedelta(seconds=self.retention)).replace(second=0, microsecond=0))

    def fault(self, kind: str) -> float:
        """Return the summed value of the faults of one kind (0 when none)."""
        return sum(f.value for f in self.faults if f.kind == kind)

    def topology(self, seed: int | None = None) -> Topology:
        """Return a new topology of this config's partitions (seed: the config's, or e.g. a table's own)."""
        if self.epoch is None:
            raise ValueError("the config's epoch must be set: use config.resolved() or the server's config")
        return Topology(
            self.seed if seed is None else seed,
            to_us(self.epoch),
            self.roots,
            int(self.split_every * 1_000_000),
            int(self.merge_every * 1_000_000),
        )


def parse_duration(text: str) -> float:
    """Return seconds for '90', '90s', '1500ms', '15m', '1h' or '1d'."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        raise ValueError(f"invalid duration {text!r}: use e.g. 90s, 15m, 1h, 1d")
    return float(match["n"]) * _UNITS[match["unit"]]


def parse_timestamp(text: str) -> datetime:
    """Return an aware UTC datetime for an ISO 8601 text ('Z' or an offset; naive means UTC)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise ValueError(f"invalid timestamp {text!r}: use ISO 8601, e.g. 2024-05-01T09:00:00Z") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_fault(text: str, kinds: tuple[str, ...]) -> Fault:
    """Return a Fault for 'KIND:P' (a probability) or 'slow:MS', KIND one of a simulator's `kinds`."""
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
