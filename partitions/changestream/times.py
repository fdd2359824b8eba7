"""Parse and format the times users type: ISO 8601, "now", or relative like "-30m"."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_RELATIVE = re.compile(r"(?P<sign>[+-])(?P<amount>\d+(?:\.\d+)?)(?P<unit>us|ms|s|m|h|d)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """Return an aware UTC datetime for ISO 8601 text, "now", or an offset from now.

    A time without a zone is refused rather than guessed: a change stream read
    from the wrong hour silently misses data.
    """
    now = now or datetime.now(UTC)
    value = text.strip()
    if value.lower() == "now":
        return now
    match = _RELATIVE.fullmatch(value)
    if match:
        seconds = float(match["amount"]) * _UNITS[match["unit"]]
        return now + timedelta(seconds=seconds if match["sign"] == "+" else -seconds)
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise ValueError(
            f"invalid time {text!r}: use ISO 8601 with a zone (2026-11-21T12:00:00Z), 'now', or '-30m'"
        ) from None
    if parsed.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone: add 'Z' or an offset such as +00:00")
    return parsed.astimezone(UTC)


def format_time(value: datetime) -> str:
    """Return RFC 3339 in UTC with microseconds and 'Z', as Spanner prints timestamps."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
