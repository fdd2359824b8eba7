"""The admin: rules, channels and silences editable (secrets never shown back), alerts read-only."""

from __future__ import annotations

import pytest

from cdcweb.alerts.models import Alert, AlertRule, Channel

pytestmark = pytest.mark.django_db
MODELS = ("alertrule", "channel", "silence", "alert", "deliveryattempt")


@pytest.fixture
def admin(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.mark.parametrize("model", MODELS)
def test_every_alerts_model_has_an_admin_list(admin, model):
    assert admin.get(f"/admin/alerts/{model}/").status_code == 200


def test_a_channels_secret_is_not_shown_in_the_admin_and_a_blank_keeps_it(admin, webhook):
    page = admin.get(f"/admin/alerts/channel/{webhook.pk}/change/").content.decode()
    assert webhook.secret not in page
    body = {
        "name": "ops-hook",
        "kind": "webhook",
        "url": "https://8.8.8.8/h",
        "secret": "",
        "enabled": "on",
    }
    assert admin.post(f"/admin/alerts/channel/{webhook.pk}/change/", body).status_code == 302
    webhook.refresh_from_db()
    assert (webhook.url, webhook.secret) == ("https://8.8.8.8/h", "s" * 32)


def test_the_admin_refuses_the_no_data_kind_while_it_is_off(admin):
    body = {"name": "q", "kind": "no_data", "threshold_seconds": "0", "for_minutes": "5",
            "retention_hours": "6", "repeat_minutes": "0"}  # fmt: skip
    response = admin.post("/admin/alerts/alertrule/add/", body)
    assert "CDC_ALERTS_NO_DATA" in response.content.decode()
    assert not AlertRule.objects.exists()


def test_alerts_cannot_be_added_or_changed_in_the_admin(admin, make_stream, make_rule):
    rule = make_rule("stream_failed", make_stream("orders"))
    alert = Alert.objects.create(rule=rule, stream=rule.stream, kind=rule.kind, summary="x")
    assert admin.get("/admin/alerts/alert/add/").status_code == 403
    page = admin.get(f"/admin/alerts/alert/{alert.pk}/change/").content.decode()
    assert 'name="_save"' not in page
    assert Channel.objects.count() == 1
