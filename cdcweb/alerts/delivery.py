"""Send one notice of an alert to one channel and record the attempt, whatever happens.

Failures are sorted once, here: a timeout, a refused connection, HTTP 408, 425, 429 or
5xx, or an SMTP 4xx may pass, so the task retries them with backoff
(TransientDeliveryError); any other answer (a 4xx, a redirect, an SMTP 5xx, a bad
address, a URL that outbound.py refuses) will not, so the attempt is FAILED at once. The
last allowed attempt is FAILED whatever the cause. Every attempt is a DeliveryAttempt row:
status, HTTP status, error.
"""

from __future__ import annotations

import json
import smtplib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import EmailMessage
from django.utils import timezone

from . import messages, outbound
from .models import Alert, Channel, DeliveryAttempt
from .signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

S = DeliveryAttempt.Status
RETRYABLE_HTTP = {408, 425, 429}


class TransientDeliveryError(Exception):
    """A failure that may pass: the task retries the notice later."""


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended: sent or not, the HTTP status if any, the error, and whether to retry."""

    sent: bool
    http_status: int | None = None
    error: str = ""
    transient: bool = False


def post_json(url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    """POST a JSON body where the channel may send; return the outcome without raising.

    The answer's body is never read: a receiver's words (or an internal service's) are not
    shown to anyone, only its status. Timeouts and refusals look alike and may pass.
    """
    try:
        target = outbound.check(url)
    except outbound.Refused as error:  # a name that does not resolve now may resolve later
        return Outcome(False, None, f"refused: {error}", isinstance(error, outbound.Unresolved))
    headers = {"Content-Type": "application/json", "User-Agent": "cdcweb-alerts/1", **headers}
    try:
        status = outbound.post(target, body, headers, settings.CDC_ALERT_DELIVERY_TIMEOUT)
    except OSError:
        return Outcome(False, None, outbound.UNREACHABLE, transient=True)
    if status < 300:
        return Outcome(True, status)
    if 300 <= status < 400:
        return Outcome(False, status, f"HTTP {status}: redirects are not followed")
    return Outcome(False, status, f"HTTP {status}", status in RETRYABLE_HTTP or status >= 500)


def send_webhook(channel: Channel, alert: Alert, event: str, notice: str) -> Outcome:
    """POST the notice's JSON, signed with the channel's secret."""
    body = json.dumps(messages.payload(alert, event, notice, timezone.now())).encode()
    timestamp = str(int(time.time()))
    headers = {"X-Cdcweb-Event": event, "X-Cdcweb-Delivery": notice, TIMESTAMP_HEADER: timestamp}
    if channel.secret:
        headers[SIGNATURE_HEADER] = sign(channel.secret, timestamp, body)
    return post_json(channel.url, body, headers)


def send_slack(channel: Channel, alert: Alert, event: str, notice: str) -> Outcome:
    """POST the notice's text to a Slack-compatible incoming webhook."""
    return post_json(channel.slack_url, json.dumps(messages.slack_body(alert, event)).encode(), {})


def send_email(channel: Channel, alert: Alert, event: str, notice: str) -> Outcome:
    """Send the notice as a plain-text email through Django's mail backend."""
    message = EmailMessage(
        messages.subject(alert, event), messages.text(alert, event), settings.DEFAULT_FROM_EMAIL,
        list(channel.email_to), headers={"X-Cdcweb-Delivery": notice},
    )  # fmt: skip
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPResponseException as error:
        transient = 400 <= error.smtp_code < 500
        return Outcome(False, None, f"SMTP {error.smtp_code}: {error.smtp_error!r}", transient)
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused, ValueError) as error:
        return Outcome(False, None, f"{type(error).__name__}: {error}")
    except OSError as error:  # refused, unreachable, timed out, disconnected
        return Outcome(False, None, f"{type(error).__name__}: {error}", transient=True)
    return Outcome(True)


# A channel whose secret the keys cannot open is not tried: unsigned, a webhook would look forged.
UNREADABLE = Outcome(
    False, error="CDC_SECRETS_KEY cannot decrypt the channel's secret (was the key changed?): save it again"
)
SENDERS = {Channel.Kind.WEBHOOK: send_webhook, Channel.Kind.SLACK: send_slack, Channel.Kind.EMAIL: send_email}


def already_sent(notice: str) -> bool:
    """Return True if an attempt at this notice succeeded (a redelivered task must not send twice)."""
    return DeliveryAttempt.objects.filter(notice=notice, status=S.SENT).exists()


def deliver(alert: Alert, channel: Channel, event: str, notice: str, attempt: int, final: bool) -> str:
    """Try the notice once and record the attempt; raise TransientDeliveryError to be retried."""
    if already_sent(notice):
        return "already sent"
    if not channel.enabled:
        return "channel disabled"
    started = time.monotonic()
    outcome = SENDERS[channel.kind](channel, alert, event, notice) if not channel.unreadable else UNREADABLE
    retry = outcome.transient and not final
    status = S.SENT if outcome.sent else S.RETRYING if retry else S.FAILED
    DeliveryAttempt.objects.create(
        alert=alert, channel=channel, channel_name=channel.name, notice=notice, event=event,
        attempt=attempt, status=status, http_status=outcome.http_status, error=outcome.error[:2000],
        duration_ms=(time.monotonic() - started) * 1000,
    )  # fmt: skip
    if retry:
        raise TransientDeliveryError(outcome.error)
    return status
