"""What the pages show of alerts: firing now, silenced, recently resolved (a query each, bounded)."""

from __future__ import annotations

from .models import Alert

A = Alert.State
RESOLVED_ROWS = 50
FIRING_ROWS = 200


def _alerts():
    return Alert.objects.select_related("rule", "stream")


def firing(limit: int = FIRING_ROWS) -> list[Alert]:
    """Return the alerts firing and sent (not silenced), oldest first: the longest trouble on top."""
    return list(_alerts().filter(state=A.FIRING, silenced=False).order_by("fired_at", "id")[:limit])


def silenced(limit: int = FIRING_ROWS) -> list[Alert]:
    """Return the alerts firing under a silence, oldest first."""
    return list(_alerts().filter(state=A.FIRING, silenced=True).order_by("fired_at", "id")[:limit])


def resolved(limit: int = RESOLVED_ROWS) -> list[Alert]:
    """Return the most recently resolved alerts."""
    return list(_alerts().filter(state=A.RESOLVED).order_by("-resolved_at", "-id")[:limit])


def sections() -> dict[str, list[Alert]]:
    """Return the alerts page's three lists."""
    return {"firing": firing(), "silenced": silenced(), "resolved": resolved()}
