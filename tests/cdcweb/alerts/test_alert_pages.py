"""Alert pages: everyone reads alerts, rules, channels and silences; only operators change them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt, Silence
from streams.models import Stream

K = AlertRule.Kind
PAGES = ("/alerts/", "/alerts/rules/", "/alerts/channels/", "/alerts/silences/")


@pytest.fixture
def alert(make_stream, make_partition, make_rule):
    """Return a FIRING alert on a stalled partition, with two delivery attempts (a 500, then sent)."""
    stream = make_stream("orders", state=Stream.State.RUNNING)
    stuck = make_partition(stream, stalled=True, stall_rule="watermark_stalled")
    rule = make_rule(K.PARTITION_STALLED, stream, name="stalls")
    now = timezone.now()
    partition = {"id": stuck.pk, "token": stuck.token, "state": "RUNNING", "watermark": "2026-01-01T12:00:00"}
    partition.update(stall_rule="watermark_stalled", stall_evidence={"threshold_seconds": 60.0})
    window = {"since": (now - timedelta(minutes=15)).isoformat(), "until": now.isoformat()}
    evidence = {"stalled": 1, "partitions": [partition], "window": window}
    alert = Alert.objects.create(
        rule=rule, stream=stream, kind=rule.kind, summary="orders: 1 stalled partition", evidence=evidence,
        last_sent_at=now, notices=1,
    )  # fmt: skip
    for attempt, (status, code) in enumerate([("RETRYING", 500), ("SENT", 200)], start=1):
        DeliveryAttempt.objects.create(
            alert=alert, channel=rule.channels.first(), channel_name="ops-hook", event="firing",
            attempt=attempt, status=status, http_status=code,
            error="HTTP 500 Internal Server Error" if code == 500 else "",
        )  # fmt: skip
    return alert


@pytest.mark.parametrize("page", PAGES)
def test_pages_send_anonymous_visitors_to_log_in(client, db, page):
    assert client.get(page).status_code == 302


@pytest.mark.parametrize("page", PAGES)
def test_viewers_read_every_page_without_a_way_to_change_anything(as_role, alert, page):
    Silence.objects.create(rule=alert.rule, ends_at=timezone.now() + timedelta(hours=1))
    html = as_role("viewer").get(page).content.decode()
    assert "stalls" in html
    assert "New " not in html
    assert "Edit" not in html


def test_viewers_cannot_open_or_post_the_forms(as_role, alert):
    client = as_role("viewer")
    assert client.get("/alerts/rules/new/").status_code == 403
    assert client.post("/alerts/rules/new/", {"name": "x", "kind": K.STREAM_FAILED}).status_code == 403
    assert client.post(f"/alerts/rules/{alert.rule_id}/delete/").status_code == 403
    assert AlertRule.objects.count() == 1


def test_operator_creates_a_rule_from_the_page(as_role, make_stream, webhook):
    # given an operator on the new-rule page
    client = as_role("operator")
    stream = make_stream("orders")
    assert "every stream" in client.get("/alerts/rules/new/").content.decode()
    # when they submit "lag above 120 s for 3 minutes" on one stream, sent to the webhook
    response = client.post("/alerts/rules/new/", {
        "name": "orders-lag", "kind": K.LAG_ABOVE, "stream": stream.pk, "threshold_seconds": "120",
        "for_minutes": "3", "retention_hours": "6", "repeat_minutes": "0", "channels": [webhook.pk],
        "enabled": "on",
    })  # fmt: skip
    # then the rule exists, with its creator, and the list shows its condition
    assert response.status_code == 302
    rule = AlertRule.objects.get(name="orders-lag")
    assert (rule.stream, rule.created_by, list(rule.channels.all())) == (stream, "operator", [webhook])
    assert "lag above 2 m 0 s for 3 min" in client.get("/alerts/rules/").content.decode()


def test_the_rule_form_refuses_the_no_data_kind_while_it_is_off(as_role):
    response = as_role("operator").post("/alerts/rules/new/", {
        "name": "quiet", "kind": K.NO_DATA, "threshold_seconds": "0", "for_minutes": "10",
        "retention_hours": "6", "repeat_minutes": "0",
    })  # fmt: skip
    assert response.status_code == 200
    assert "CDC_ALERTS_NO_DATA" in response.content.decode()
    assert not AlertRule.objects.exists()


def test_a_channels_secret_is_never_shown_and_a_blank_one_keeps_it(as_role, webhook, local_receivers):
    client = as_role("operator")
    page = client.get(f"/alerts/channels/{webhook.pk}/edit/").content.decode()
    assert webhook.secret not in page
    body = {"name": "ops-hook", "kind": "webhook", "url": "http://127.0.0.1:9/other", "secret": ""}
    client.post(f"/alerts/channels/{webhook.pk}/edit/", {**body, "enabled": "on"})
    webhook.refresh_from_db()
    assert (webhook.url, webhook.secret) == ("http://127.0.0.1:9/other", "s" * 32)
    assert webhook.secret not in client.get("/alerts/channels/").content.decode()


def test_alerts_page_links_each_alert_to_its_stream_lag_window_and_evidence(as_role, alert):
    html = as_role("viewer").get("/alerts/").content.decode()
    assert f'href="/streams/{alert.stream_id}/"' in html
    assert f"/streams/{alert.stream_id}/?since=" in html
    assert "#lag-chart" in html
    assert f"/partitions/{alert.evidence['partitions'][0]['id']}/" in html
    assert "orders: 1 stalled partition" in html


def test_an_alerts_page_shows_the_stall_evidence_and_every_attempt(as_role, alert):
    html = as_role("viewer").get(f"/alerts/{alert.pk}/").content.decode()
    assert "watermark_stalled" in html
    assert "threshold_seconds: 60.0" in html
    assert html.count('data-status="') == 2
    assert "HTTP 500 Internal Server Error" in html


def test_overview_shows_firing_alerts_above_the_streams(as_role, alert):
    html = as_role("viewer").get("/").content.decode()
    assert html.index('id="firing-alerts"') < html.index('id="overview-rows"')
    assert "orders: 1 stalled partition" in html
    # and a resolved alert leaves the panel
    Alert.objects.filter(pk=alert.pk).update(state=Alert.State.RESOLVED, resolved_at=timezone.now())
    assert "orders: 1 stalled partition" not in as_role("operator").get("/alerts/firing/").content.decode()


def test_operator_silences_an_alert_from_its_page_and_ends_the_silence(as_role, alert):
    client = as_role("operator")
    new = client.get(f"/alerts/silences/new/?rule={alert.rule_id}&stream={alert.stream_id}").content.decode()
    assert f'value="{alert.rule_id}" selected' in new
    ends = (timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    response = client.post("/alerts/silences/new/", {"rule": alert.rule_id, "stream": alert.stream_id,
                                                      "ends_at": ends, "comment": "deploying"})  # fmt: skip
    assert response.status_code == 302
    silence = Silence.objects.get()
    assert silence.covers(alert.rule_id, alert.stream_id, timezone.now())
    client.post(f"/alerts/silences/{silence.pk}/expire/")
    silence.refresh_from_db()
    assert not silence.covers(alert.rule_id, alert.stream_id, timezone.now() + timedelta(seconds=1))


def test_a_silence_must_name_a_rule_or_a_stream(as_role):
    ends = (timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    response = as_role("operator").post("/alerts/silences/new/", {"ends_at": ends})
    assert "name a rule, a stream, or both" in response.content.decode()
    assert not Silence.objects.exists()


def test_operator_deletes_a_channel(as_role, webhook):
    as_role("operator").post(f"/alerts/channels/{webhook.pk}/delete/")
    assert not Channel.objects.exists()


def test_the_channels_page_shows_urls_to_operators_only(as_role, webhook):
    assert webhook.url in as_role("operator").get("/alerts/channels/").content.decode()
    page = as_role("viewer").get("/alerts/channels/").content.decode()
    assert webhook.name in page
    assert webhook.url not in page
    assert "127.0.0.1" not in page
