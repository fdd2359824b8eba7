"""Time as the simulators count it: microseconds since 1970, and the wall clock in them."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

_UNIX = datetime(1970, 1, 1, tzinfo=UTC)


def to_datetime(us: int) -> datetime:
    """Return the aware UTC datetime for microseconds since 1970."""
    return _UNIX + timedelta(microseconds=us)


def to_us(value: datetime) -> int:
    """Return microseconds since 1970 for an aware datetime."""
    delta = value - _UNIX
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def now_us() -> int:
    """Return the wall clock in microseconds since 1970."""
    return time.time_ns() // 1000
