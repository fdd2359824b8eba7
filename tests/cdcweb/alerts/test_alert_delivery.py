"""Delivery: signed webhooks, Slack and email; transient failures retried, every attempt recorded."""

from __future__ import annotations

import uuid

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from cdcweb.alerts import delivery, outbound
from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt
from cdcweb.alerts.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign, verify
from cdcweb.alerts.tasks import deliver_alert_task
from streams.models import Stream

# Every test here may send to the receiver on 127.0.0.1, as CDC_WEBHOOK_ALLOW_NETWORKS lets the demo.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("local_receivers")]
S = DeliveryAttempt.Status
SECRET = "a-secret-of-32-characters-long!!"
NOTICE = "0b0e2f8e-6a43-4c39-9d2e-6f1d8e0c1a11"


@pytest.fixture
def alert(make_stream) -> Alert:
    stream = make_stream("orders", state=Stream.State.FAILED)
    rule = AlertRule.objects.create(name="failed", kind=AlertRule.Kind.STREAM_FAILED, stream=stream)
    return Alert.objects.create(
        rule=rule, stream=stream, kind=rule.kind, summary="orders: FAILED", evidence={"state": "FAILED"}
    )


@pytest.fixture
def hook(receiver) -> Channel:
    return Channel.objects.create(name="hook", kind=Channel.Kind.WEBHOOK, url=receiver.url, secret=SECRET)


def attempts() -> list[tuple]:
    return list(DeliveryAttempt.objects.order_by("id").values_list("attempt", "status", "http_status"))


def test_a_webhook_gets_the_alert_as_signed_json(alert, hook, receiver):
    # when a firing notice is delivered
    assert delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False) == S.SENT
    # then the receiver got the alert, and the signature verifies with the channel's secret
    (got,) = receiver.received
    body = got.json()
    assert (body["event"], body["id"], body["alert"]["summary"]) == ("firing", NOTICE, "orders: FAILED")
    assert (body["rule"]["name"], body["stream"]["name"], body["evidence"]) == (
        "failed",
        "orders",
        {"state": "FAILED"},
    )
    assert body["stream"]["url"].startswith("http://127.0.0.1:8000/streams/")
    assert verify(SECRET, got.headers[TIMESTAMP_HEADER], got.body, got.headers[SIGNATURE_HEADER])
    assert not verify(
        "another-secret", got.headers[TIMESTAMP_HEADER], got.body, got.headers[SIGNATURE_HEADER]
    )
    assert got.headers["X-Cdcweb-Delivery"] == NOTICE
    assert attempts() == [(1, S.SENT, 200)]


def test_a_signature_older_than_the_tolerance_is_refused():
    body = b'{"id": 1}'
    signature = sign(SECRET, "1000", body)
    assert verify(SECRET, "1000", body, signature, now=1000 + 299)
    assert not verify(SECRET, "1000", body, signature, now=1000 + 301)
    assert not verify(SECRET, "1000", body + b" ", signature, now=1000)


@pytest.mark.parametrize(
    ("answer", "retried"), [(500, True), (503, True), (429, True), (404, False), (400, False)]
)
def test_server_errors_and_throttling_are_retried_other_refusals_are_not(
    alert, hook, receiver, answer, retried
):
    receiver.answers = [answer]
    if retried:
        with pytest.raises(delivery.TransientDeliveryError):
            delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False)
    else:
        delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False)
    assert attempts() == [(1, S.RETRYING if retried else S.FAILED, answer)]
    # the receiver's own words are not kept: nobody reads an internal service's answer here
    assert DeliveryAttempt.objects.get().error == f"HTTP {answer}"


def test_the_last_attempt_fails_for_good(alert, hook, receiver):
    receiver.answers = [500]
    assert delivery.deliver(alert, hook, "firing", NOTICE, attempt=7, final=True) == S.FAILED
    assert attempts() == [(7, S.FAILED, 500)]


def test_a_refused_connection_or_a_timeout_is_retried_and_told_alike(alert, receiver, settings):
    settings.CDC_ALERT_DELIVERY_TIMEOUT = 0.3
    receiver.delay = 1.0
    nowhere = Channel.objects.create(name="down", kind="webhook", url="http://127.0.0.1:9/h", secret=SECRET)
    slow = Channel.objects.create(name="slow", kind="webhook", url=receiver.url, secret=SECRET)
    for channel in (nowhere, slow):
        with pytest.raises(delivery.TransientDeliveryError):
            delivery.deliver(alert, channel, "firing", str(uuid.uuid4()), attempt=1, final=False)
    errors = list(DeliveryAttempt.objects.order_by("id").values_list("status", "error"))
    assert [status for status, _ in errors] == [S.RETRYING, S.RETRYING]
    # a closed port and a silent one read the same: the errors cannot map the network
    assert errors[0][1] == errors[1][1] == outbound.UNREACHABLE


def test_the_task_retries_with_backoff_until_the_receiver_takes_it(alert, hook, receiver):
    # given a receiver that fails twice, then accepts
    receiver.answers = [500, 502]
    # when the delivery task runs (eagerly here: its retries run at once)
    deliver_alert_task.apply(args=(alert.pk, hook.pk, "firing", NOTICE))
    # then three attempts are recorded and the receiver got the same notice three times
    assert attempts() == [(1, S.RETRYING, 500), (2, S.RETRYING, 502), (3, S.SENT, 200)]
    assert {r.json()["id"] for r in receiver.received} == {NOTICE}


def test_a_notice_already_sent_is_not_sent_again(alert, hook, receiver):
    delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False)
    assert delivery.deliver(alert, hook, "firing", NOTICE, attempt=1, final=False) == "already sent"
    assert len(receiver.received) == 1


def test_slack_gets_a_text_with_links(alert, receiver):
    slack = Channel.objects.create(name="chat", kind="slack", slack_url=receiver.url)
    delivery.deliver(alert, slack, "firing", NOTICE, attempt=1, final=False)
    text = receiver.received[0].json()["text"]
    assert text.startswith(":red_circle: *FIRING* failed: orders: FAILED")
    assert f"/alerts/{alert.pk}/|alert>" in text
    assert "|lag chart>" in text


def test_email_goes_through_djangos_mail_backend(alert, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "cdcweb@example.com"
    channel = Channel.objects.create(
        name="mail", kind="email", email_to=["ops@example.com", "sre@example.com"]
    )
    Alert.objects.filter(pk=alert.pk).update(state=Alert.State.RESOLVED)
    alert.refresh_from_db()
    assert delivery.deliver(alert, channel, "resolved", NOTICE, attempt=1, final=False) == S.SENT
    (message,) = mail.outbox
    assert message.subject == "[cdcweb] RESOLVED: failed · orders"
    assert (message.from_email, message.to) == ("cdcweb@example.com", ["ops@example.com", "sre@example.com"])
    assert f"/alerts/{alert.pk}/" in message.body


def test_slack_shows_names_as_text_never_as_mentions(alert, receiver):
    # given a rule whose name (saved before names were checked) holds Slack's control sequences
    AlertRule.objects.filter(pk=alert.rule_id).update(name="<!channel> & <@U0123|boss>")
    alert.refresh_from_db()
    slack = Channel.objects.create(name="chat", kind="slack", slack_url=receiver.url)
    delivery.deliver(alert, slack, "firing", NOTICE, attempt=1, final=False)
    text = receiver.received[0].json()["text"]
    # then Slack gets them escaped, so it pings no one, while the links stay links
    assert "&lt;!channel&gt; &amp; &lt;@U0123|boss&gt;: orders: FAILED" in text
    assert "<!channel>" not in text
    assert "<@U0123" not in text
    assert f"/alerts/{alert.pk}/|alert>" in text


def test_a_line_break_in_a_rule_name_cannot_add_mail_headers(alert, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    AlertRule.objects.filter(pk=alert.rule_id).update(name="failed\r\nBcc: evil@example.com")
    alert.refresh_from_db()
    channel = Channel.objects.create(name="mail", kind="email", email_to=["ops@example.com"])
    assert delivery.deliver(alert, channel, "firing", NOTICE, attempt=1, final=False) == S.SENT
    (message,) = mail.outbox
    assert message.subject == "[cdcweb] FIRING: failed Bcc: evil@example.com · orders"
    assert message.recipients() == ["ops@example.com"]
    assert "\nBcc:" not in message.message().as_string().split("\n\n", 1)[0]


@pytest.mark.parametrize("name", ["failed\r\nBcc: evil@example.com", "two\nlines", "tab\there"])
def test_rule_names_are_one_printable_line(make_stream, name):
    rule = AlertRule(name=name, kind=AlertRule.Kind.STREAM_FAILED)
    with pytest.raises(ValidationError, match="one line"):
        rule.full_clean()
