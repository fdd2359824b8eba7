"""Template filters for the dashboard: durations, counts and state colours."""

from __future__ import annotations

from django import template

from streams.times import human_duration

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """Render seconds as "2 m 13 s" (or "—" when unknown)."""
    return human_duration(seconds)


@register.filter
def state_class(state: str) -> str:
    """Return the CSS class of a stream or partition state badge."""
    return f"state-{str(state or '').lower().replace('_', '-')}"


@register.filter
def compact(number) -> str:
    """Render a count as 1.2 k, 3.4 M (or "—" when unknown)."""
    if number is None:
        return "—"
    value = float(number)
    for limit, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


@register.filter
def short_token(token: str, length: int = 14) -> str:
    """Return the start of a partition token, with an ellipsis when cut."""
    token = str(token or "")
    return token if len(token) <= length else token[:length] + "…"
