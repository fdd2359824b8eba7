"""What a rule, a channel and a silence must satisfy, checked alike by the pages, the API and the admin."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from streams.times import human_duration

from . import outbound
from .models import AlertRule, Channel

K = AlertRule.Kind
MIN_SECRET = 16
MAX_RECIPIENTS = 20


def rule_errors(kind: str, for_minutes: int | None, retention_hours: float | None) -> dict[str, str]:
    """Return {field: message} for settings the kind cannot work with."""
    if kind == K.NO_DATA and not settings.CDC_ALERTS_NO_DATA:
        return {"kind": "the no-data rule is off: set CDC_ALERTS_NO_DATA=true to use it"}
    if kind == K.NO_DATA and not for_minutes:
        return {"for_minutes": "say how many minutes without records (at least 1)"}
    if kind == K.RETENTION and not retention_hours:
        return {"retention_hours": "say how many hours of retention must be left (more than 0)"}
    return {}


def channel_errors(kind: str, url: str, secret: str, slack_url: str, email_to: list[str]) -> dict[str, str]:
    """Return {field: message} for what the channel's kind needs but lacks (secret: the one it will keep)."""
    if kind == Channel.Kind.WEBHOOK:
        if not url:
            return {"url": "a webhook needs the URL to POST to"}
        if len(secret or "") < MIN_SECRET:
            return {"secret": f"a webhook needs a signing secret of at least {MIN_SECRET} characters"}
        return _url_errors("url", url)
    if kind == Channel.Kind.SLACK:
        if not slack_url:
            return {"slack_url": "a Slack channel needs its incoming webhook URL"}
        return _url_errors("slack_url", slack_url)
    if kind == Channel.Kind.EMAIL:
        return _email_errors(email_to)
    return {}


def _url_errors(field: str, url: str) -> dict[str, str]:
    try:
        outbound.check(url)
    except outbound.Refused as error:
        return {field: f"cdcweb will not send there: {error}"}
    return {}


def _email_errors(email_to: list[str]) -> dict[str, str]:
    if not email_to:
        return {"email_to": "an email channel needs at least one address"}
    if len(email_to) > MAX_RECIPIENTS:
        return {"email_to": f"at most {MAX_RECIPIENTS} addresses"}
    for address in email_to:
        try:
            validate_email(address)
        except ValidationError:
            return {"email_to": f"{address!r} is not an email address"}
    return {}


def describe(rule: AlertRule) -> str:
    """Return the rule's condition in a few words, as the pages list it."""
    texts = {
        K.LAG_ABOVE: f"lag above {human_duration(rule.threshold_seconds)} for {rule.for_minutes} min",
        K.LAG_GROWING: "lag grew in every sample of the last window",
        K.PARTITION_STALLED: "a partition's watermark stalled",
        K.STREAM_FAILED: f"FAILED or FAILED_PERMANENTLY for {rule.for_minutes} min",
        K.RETENTION: f"stopped with less than {rule.retention_hours:g} h of retention left",
        K.NO_DATA: f"no data change records for {rule.for_minutes} min while RUNNING",
    }
    return texts.get(rule.kind, rule.kind)
