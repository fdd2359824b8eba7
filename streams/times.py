"""Parse and format the times users type: ISO 8601, "now", or relative like "-30m"."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_RELATIVE = re.compile(r"(?P<sign>[+-])(?P<amount>\d+(?:\.\d+)?)(?P<unit>us|ms|s|m|h|d)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}
# Times anyone may type: change streams keep days of history, so nothing before 1970 or
# after 2999 is meant, and such a time only overflows later arithmetic.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """Return an aware UTC datetime for ISO 8601 text, "now", or an offset from now.

    A time without a zone is refused rather than guessed: a change stream read
    from the wrong hour silently misses data. So is a time outside 1970-2999.
    """
    return _in_range(_parse(text, now), text)


def parse_form_time(text: str) -> datetime:
    """Return an aware UTC datetime for a time typed into a form: ISO 8601, no zone meaning UTC.

    The pages' date-time inputs send "2026-11-21T12:00" without a zone and say it is UTC.
    Anything unreadable (2026-02-30, a year 1 that overflows) is a ValueError saying so.
    """
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"cannot read the time {text!r}: use YYYY-MM-DDTHH:MM (UTC)") from None
    return _in_range(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC), text)


def _in_range(parsed: datetime, text: str) -> datetime:
    if not EARLIEST <= parsed < LATEST:
        raise ValueError(f"time {text!r} is out of range: use a time from 1970 to 2999 (UTC)")
    return parsed.astimezone(UTC)


def _parse(text: str, now: datetime | None) -> datetime:
    now = now or datetime.now(UTC)
    value = text.strip()
    if value.lower() == "now":
        return now
    match = _RELATIVE.fullmatch(value)
    try:
        if match:
            seconds = float(match["amount"]) * _UNITS[match["unit"]]
            return now + timedelta(seconds=seconds if match["sign"] == "+" else -seconds)
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
        if parsed.tzinfo is None:
            raise ValueError(f"time {text!r} has no time zone: add 'Z' or an offset such as +00:00")
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"time {text!r} is out of range: use a time from 1970 to 2999 (UTC)") from None
    except ValueError as error:
        if "no time zone" in str(error):
            raise
        raise ValueError(
            f"invalid time {text!r}: use ISO 8601 with a zone (2026-11-21T12:00:00Z), 'now', or '-30m'"
        ) from None


def format_time(value: datetime) -> str:
    """Return RFC 3339 in UTC with microseconds and 'Z', as Spanner prints timestamps."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def human_duration(seconds) -> str:
    """Render seconds as "2 m 13 s", "3 h 4 m" or "2 d 5 h"; "—" when unknown."""
    if seconds is None:
        return "—"
    total = int(round(float(seconds)))
    if total < 60:
        return f"{total} s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} m"
    return f"{minutes} m {secs} s"
