"""The alerts API: rules, channels (secrets write-only), silences, and alerts with their attempts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt, Silence
from tests.factories import make_stream

K = AlertRule.Kind
# Public addresses, not names: a channel's host must resolve when it is saved, and this machine
# resolves no public names.
HOOK = {"name": "ops", "kind": "webhook", "url": "https://8.8.8.8/cdc", "secret": "k" * 32}


@pytest.fixture
def channel(db) -> Channel:
    return Channel.objects.create(**HOOK)


@pytest.fixture
def orders(db):
    return make_stream("orders", state="RUNNING")


def test_operator_creates_a_rule_for_every_stream_and_reads_its_condition(operator, channel):
    body = {"name": "lagging", "kind": K.LAG_ABOVE, "threshold_seconds": 120, "for_minutes": 3,
            "channels": [channel.pk]}  # fmt: skip
    response = operator.post("/api/v1/alerts/rules/", body, format="json")
    assert response.status_code == 201, response.content
    rule = response.json()
    assert (rule["stream"], rule["stream_name"], rule["created_by"]) == (None, None, "otto")
    assert rule["condition"] == "lag above 2 m 0 s for 3 min"
    listed = operator.get("/api/v1/alerts/rules/?every_stream=true&kind=lag_above").json()
    assert [r["name"] for r in listed["results"]] == ["lagging"]


def test_the_no_data_kind_is_refused_while_it_is_off(operator):
    response = operator.post("/api/v1/alerts/rules/", {"name": "q", "kind": K.NO_DATA, "for_minutes": 5})
    assert response.status_code == 400
    assert "CDC_ALERTS_NO_DATA" in response.json()["kind"][0]


def test_the_no_data_kind_is_accepted_once_enabled(operator, settings):
    settings.CDC_ALERTS_NO_DATA = True
    response = operator.post("/api/v1/alerts/rules/", {"name": "q", "kind": K.NO_DATA, "for_minutes": 5})
    assert response.status_code == 201


def test_channel_secrets_are_written_but_never_read_back(operator):
    # given a webhook and a Slack channel created with their secrets
    created = operator.post("/api/v1/alerts/channels/", HOOK, format="json")
    slack = {"name": "chat", "kind": "slack", "slack_url": "https://8.8.4.4/services/T/B/X"}
    operator.post("/api/v1/alerts/channels/", slack, format="json")
    # then no answer carries them, only whether they are set
    assert created.status_code == 201
    listed = operator.get("/api/v1/alerts/channels/").content.decode()
    assert "k" * 32 not in listed
    assert "8.8.4.4" not in listed
    rows = {c["name"]: c for c in operator.get("/api/v1/alerts/channels/").json()["results"]}
    assert (rows["ops"]["secret_set"], rows["chat"]["slack_url_set"]) == (True, True)
    assert "secret" not in rows["ops"]
    assert "slack_url" not in rows["chat"]


def test_changing_a_channel_without_its_secret_keeps_the_secret(operator, channel):
    response = operator.patch(f"/api/v1/alerts/channels/{channel.pk}/", {"url": "https://8.8.8.8/h"})
    assert response.status_code == 200
    channel.refresh_from_db()
    assert (channel.url, channel.secret) == ("https://8.8.8.8/h", "k" * 32)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**HOOK, "secret": "short"}, "secret"),
        ({**HOOK, "url": ""}, "url"),
        ({"name": "chat", "kind": "slack"}, "slack_url"),
        ({"name": "mail", "kind": "email", "email_to": []}, "email_to"),
        ({"name": "mail", "kind": "email", "email_to": ["not-an-address"]}, "email_to"),
    ],
)
def test_a_channel_missing_what_its_kind_needs_is_refused(operator, body, field):
    response = operator.post("/api/v1/alerts/channels/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_silences_name_a_rule_or_a_stream_and_end_after_they_start(operator, orders):
    later = (timezone.now() + timedelta(hours=1)).isoformat()
    assert operator.post("/api/v1/alerts/silences/", {"ends_at": later}).status_code == 400
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    assert (
        operator.post("/api/v1/alerts/silences/", {"stream": orders.pk, "ends_at": past}).status_code == 400
    )
    created = operator.post("/api/v1/alerts/silences/", {"stream": orders.pk, "ends_at": later})
    assert created.status_code == 201
    assert created.json()["active"] is True
    assert operator.get("/api/v1/alerts/silences/?active=true").json()["count"] == 1
    assert Silence.objects.get().created_by == "otto"


def test_alerts_list_firing_first_and_one_alert_shows_every_attempt(viewer, orders, channel):
    # given a resolved and a firing alert, the firing one retried once before it was sent
    rule = AlertRule.objects.create(name="failed", kind=K.STREAM_FAILED, stream=orders)
    now = timezone.now()
    window = {"since": (now - timedelta(minutes=15)).isoformat(), "until": now.isoformat()}
    Alert.objects.create(rule=rule, stream=orders, kind=rule.kind, summary="old", state="RESOLVED",
                         fired_at=now - timedelta(hours=2), resolved_at=now - timedelta(hours=1))  # fmt: skip
    firing = Alert.objects.create(rule=rule, stream=orders, kind=rule.kind, summary="now",
                                  evidence={"window": window})  # fmt: skip
    for attempt, status in ((1, "RETRYING"), (2, "SENT")):
        DeliveryAttempt.objects.create(
            alert=firing, channel=channel, channel_name="ops", event="firing", attempt=attempt, status=status,
            http_status=503 if attempt == 1 else 200,
        )  # fmt: skip
    # when a viewer lists alerts and reads the firing one
    listed = viewer.get("/api/v1/alerts/").json()["results"]
    detail = viewer.get(f"/api/v1/alerts/{firing.pk}/").json()
    # then firing comes first, the detail lists both attempts newest first, and links the lag window
    assert [a["summary"] for a in listed] == ["now", "old"]
    assert [(d["attempt"], d["status"], d["http_status"]) for d in detail["deliveries"]] == [
        (2, "SENT", 200), (1, "RETRYING", 503),
    ]  # fmt: skip
    assert detail["links"]["lag_chart"].startswith(f"/streams/{orders.pk}/?since=")
    assert [a["summary"] for a in viewer.get("/api/v1/alerts/?state=RESOLVED").json()["results"]] == ["old"]


def test_a_channels_url_is_shown_to_operators_only(operator, viewer):
    # given a webhook whose URL carries the receiver's token
    operator.post(
        "/api/v1/alerts/channels/", {**HOOK, "url": "https://8.8.8.8/cdc?token=t0ps3cret"}, format="json"
    )
    # then operators read it back, and viewers see that there is one but not where
    (mine,) = operator.get("/api/v1/alerts/channels/").json()["results"]
    assert mine["url"] == "https://8.8.8.8/cdc?token=t0ps3cret"
    listed = viewer.get("/api/v1/alerts/channels/")
    assert listed.status_code == 200
    assert "t0ps3cret" not in listed.content.decode()
    (theirs,) = listed.json()["results"]
    assert (theirs["name"], theirs["url"], theirs["secret_set"]) == ("ops", None, True)
    assert viewer.get(f"/api/v1/alerts/channels/{theirs['id']}/").json()["url"] is None


def test_a_rule_name_with_a_line_break_is_refused(operator):
    body = {"name": "failed\r\nBcc: evil@example.com", "kind": "stream_failed"}
    answer = operator.post("/api/v1/alerts/rules/", body, format="json")
    assert answer.status_code == 400
    assert "one line" in answer.json()["name"][0]
