"""Template filters of the alert pages: badges, the lag chart link and the evidence's plain facts."""

from __future__ import annotations

from django import template

from cdcweb.alerts.messages import lag_chart_path
from cdcweb.alerts.models import Alert

register = template.Library()
# Evidence keys drawn as their own tables or links, not as plain facts.
STRUCTURED = ("partitions", "samples", "window")


@register.filter
def lag_chart(alert: Alert) -> str:
    """Return the stream page's path with the lag chart over the alert's evidence window."""
    return lag_chart_path(alert)


@register.filter
def alert_badge(alert: Alert) -> str:
    """Return the CSS class of an alert's badge (a stream state's colours)."""
    if alert.state == Alert.State.RESOLVED:
        return "state-finished"
    return "state-paused" if alert.silenced else "state-failed-permanently"


@register.filter
def alert_label(alert: Alert) -> str:
    """Return FIRING, SILENCED or RESOLVED."""
    return "SILENCED" if alert.state == Alert.State.FIRING and alert.silenced else alert.state


@register.filter
def facts(evidence: dict) -> list[tuple[str, object]]:
    """Return the evidence's plain (key, value) pairs, in order, leaving the structured ones out."""
    return [
        (key.replace("_", " "), value) for key, value in (evidence or {}).items() if key not in STRUCTURED
    ]
