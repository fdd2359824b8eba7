"""What a notice says: the webhook's JSON body, and the text Slack and email show.

The JSON body (version 1):

    {"version": 1, "id": "<notice uuid, the same in every retry>", "event": "firing|repeat|resolved",
     "sent_at": "...", "alert": {"id", "state", "kind", "summary", "fired_at", "resolved_at",
     "silenced", "url"}, "rule": {"id", "name", "kind"}, "stream": {"id", "name", "state", "url"},
     "evidence": {... what the rule fired on ...}}
"""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from streams.times import human_duration

from .models import Alert, DeliveryAttempt

E = DeliveryAttempt.Event
CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
HEADLINE = {E.FIRING: "FIRING", E.REPEAT: "STILL FIRING", E.RESOLVED: "RESOLVED"}


def absolute(path: str) -> str:
    """Return the dashboard URL of a path, as receivers reach it (CDC_ALERT_BASE_URL)."""
    return settings.CDC_ALERT_BASE_URL + path


def lag_chart_path(alert: Alert) -> str:
    """Return the stream page's path showing the lag chart over the alert's evidence window."""
    path = reverse("stream-detail", args=[alert.stream_id])
    window = (alert.evidence or {}).get("window") or {}
    if window.get("since") and window.get("until"):
        path += "?" + urlencode({"since": window["since"], "until": _until(alert, window["until"])})
    return path + "#lag-chart"


def _until(alert: Alert, until: str) -> str:
    """Return the window's end, or the resolution time if the alert resolved later."""
    if alert.resolved_at and alert.resolved_at.isoformat() > until:
        return alert.resolved_at.isoformat()
    return until


def payload(alert: Alert, event: str, notice: str, now: datetime) -> dict:
    """Return the webhook's JSON body for one notice of the alert."""
    rule, stream = alert.rule, alert.stream
    return {
        "version": 1,
        "id": notice,
        "event": event,
        "sent_at": now.isoformat(),
        "alert": {
            "id": alert.pk,
            "state": alert.state,
            "kind": alert.kind,
            "summary": alert.summary,
            "fired_at": alert.fired_at.isoformat(),
            "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
            "silenced": alert.silenced,
            "url": absolute(reverse("alert-detail", args=[alert.pk])),
        },
        "rule": {"id": rule.pk, "name": rule.name, "kind": rule.kind},
        "stream": {
            "id": stream.pk,
            "name": stream.name,
            "state": stream.state,
            "url": absolute(lag_chart_path(alert)),
        },
        "evidence": alert.evidence,
    }


def subject(alert: Alert, event: str) -> str:
    """Return a one-line title: what happened, to which stream, under which rule.

    One line whatever a name holds: a CR or LF in a mail header would end it (and start
    another, such as Bcc:), so control characters become spaces.
    """
    return CONTROL.sub(" ", f"[cdcweb] {HEADLINE[event]}: {alert.rule.name} · {alert.stream.name}")


def text(alert: Alert, event: str) -> str:
    """Return the plain text of a notice (the email body; Slack's message with links)."""
    lines = [subject(alert, event), "", alert.summary]
    if event == E.RESOLVED and alert.resolved_at:
        held = (alert.resolved_at - alert.fired_at).total_seconds()
        lines.append(f"Resolved at {alert.resolved_at:%Y-%m-%d %H:%M:%S} UTC after {human_duration(held)}.")
    else:
        lines.append(f"Firing since {alert.fired_at:%Y-%m-%d %H:%M:%S} UTC.")
    lines += [
        "",
        f"Alert: {absolute(reverse('alert-detail', args=[alert.pk]))}",
        f"Lag chart: {absolute(lag_chart_path(alert))}",
    ]
    return "\n".join(lines)


def slack_escape(text: str) -> str:
    """Return text Slack shows as it is: &, < and > escaped, so "<!channel>" pings no one."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(alert: Alert, event: str) -> dict:
    """Return a Slack-compatible incoming-webhook body (text with mrkdwn links; names escaped)."""
    mark = ":white_check_mark:" if event == E.RESOLVED else ":red_circle:"
    alert_url = absolute(reverse("alert-detail", args=[alert.pk]))
    said = slack_escape(f"{alert.rule.name}: {alert.summary}")
    return {
        "text": (
            f"{mark} *{HEADLINE[event]}* {said}\n"
            f"<{alert_url}|alert> · <{absolute(lag_chart_path(alert))}|lag chart>"
        )
    }
