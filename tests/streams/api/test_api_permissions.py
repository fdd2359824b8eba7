"""The permission matrix: anonymous 401, viewers read, operators and superusers write and act."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from cdcweb.alerts.models import Alert, AlertRule, Channel, Silence
from streams.models import Stream
from tests.factories.api import stream_body, token_for
from tests.factories.lineage import make_lineage_stream

S = Stream.State
ALLOWED = {"anonymous": False, "viewer": False, "operator": True, "superuser": True}
# operation -> (state the stream starts in, method, path suffix, body, success code)
WRITES = {
    "create": (None, "post", "", stream_body(), 201),
    "update": (S.NOT_STARTED, "put", "{id}/", stream_body(name="renamed"), 200),
    "partial_update": (S.RUNNING, "patch", "{id}/", {"heartbeat_ms": 5000}, 200),
    "delete": (S.PAUSED, "delete", "{id}/?data=keep", None, 204),
    "start": (S.NOT_STARTED, "post", "{id}/start/", {}, 200),
    "pause": (S.RUNNING, "post", "{id}/pause/", {}, 200),
    "resume": (S.PAUSED, "post", "{id}/resume/", {}, 200),
    "recover": (S.FAILED_PERMANENTLY, "post", "{id}/recover/", {"strategy": "watermark"}, 200),
}
READS = (
    "", "{id}/", "{id}/lineage/", "{id}/lag/", "{id}/partitions/", "{id}/transitions/", "{id}/errors/",
    "{id}/operations/",
)  # fmt: skip


def _stream(state) -> Stream:
    stream = make_lineage_stream("target", 5)
    Stream.objects.filter(pk=stream.pk).update(state=state)
    return stream


@pytest.mark.parametrize("role", ["anonymous", "viewer", "operator", "superuser"])
@pytest.mark.parametrize("operation", list(WRITES))
def test_only_operators_and_superusers_write_and_act(client_as, role, operation):
    # given a stream in a state from which the operation is allowed
    state, method, suffix, body, success = WRITES[operation]
    stream = _stream(state) if state else None
    url = "/api/v1/streams/" + suffix.format(id=stream.pk if stream else 0)
    # when the role attempts it
    response = getattr(client_as(role), method)(url, body, format="json")
    # then anonymous gets 401 (with a challenge), viewers 403, operators and superusers succeed
    expected = success if ALLOWED[role] else (401 if role == "anonymous" else 403)
    assert response.status_code == expected, response.content
    if role == "anonymous":
        assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("role", ["anonymous", "viewer", "operator", "superuser"])
@pytest.mark.parametrize("suffix", READS)
def test_every_role_but_anonymous_reads(client_as, role, suffix):
    stream = _stream(S.RUNNING)
    response = client_as(role).get("/api/v1/streams/" + suffix.format(id=stream.pk))
    assert response.status_code == (401 if role == "anonymous" else 200)


@pytest.mark.parametrize("role", ["anonymous", "viewer"])
def test_refused_writes_change_nothing(client_as, role):
    stream = _stream(S.RUNNING)
    client_as(role).post(f"/api/v1/streams/{stream.pk}/pause/")
    client_as(role).delete(f"/api/v1/streams/{stream.pk}/")
    stream.refresh_from_db()
    assert stream.state == S.RUNNING


def test_a_user_without_a_role_reads_nothing(users):
    nobody = User.objects.create_user("nobody")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(nobody)}")
    assert client.get("/api/v1/streams/").status_code == 403


def test_a_bad_token_is_401(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get("/api/v1/streams/").status_code == 401


def test_session_login_reads_like_the_pages_do(users, stream):
    # given a viewer logged in through the login form (session cookie, no token)
    client = APIClient()
    assert client.login(username="vera", password="pw")
    # then the lineage the pages fetch is readable, and acting still needs a role
    assert client.get(f"/api/v1/streams/{stream.pk}/lineage/").status_code == 200
    assert client.post(f"/api/v1/streams/{stream.pk}/pause/").status_code == 403


def test_session_writes_need_the_csrf_token(users, stream):
    client = APIClient(enforce_csrf_checks=True)
    client.login(username="otto", password="pw")
    response = client.post(f"/api/v1/streams/{stream.pk}/pause/")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


# --- alerts: rules, channels and silences follow the same roles -------------------------
def _alert_rows() -> dict:
    stream = _stream(S.FAILED)
    rule = AlertRule.objects.create(name="failed", kind="stream_failed", stream=stream)
    channel = Channel.objects.create(name="mail", kind="email", email_to=["ops@example.com"])
    silence = Silence.objects.create(stream=stream, ends_at=timezone.now() + timedelta(hours=1))
    alert = Alert.objects.create(rule=rule, stream=stream, kind=rule.kind, summary="target: FAILED")
    later = (timezone.now() + timedelta(hours=2)).isoformat()
    bodies = {
        "rules": {"name": "other", "kind": "stream_failed", "stream": stream.pk},
        "channels": {"name": "other", "kind": "email", "email_to": ["oncall@example.com"]},
        "silences": {"stream": stream.pk, "ends_at": later, "comment": "maintenance"},
    }
    return {"rules": rule, "channels": channel, "silences": silence, "alert": alert, "bodies": bodies}


ALERT_WRITES = {
    "create": ("post", "", 201),
    "update": ("put", "{id}/", 200),
    "partial_update": ("patch", "{id}/", 200),
    "delete": ("delete", "{id}/", 204),
}


@pytest.mark.parametrize("role", ["anonymous", "viewer", "operator", "superuser"])
@pytest.mark.parametrize("resource", ["rules", "channels", "silences"])
@pytest.mark.parametrize("operation", list(ALERT_WRITES))
def test_only_operators_and_superusers_write_alert_rules_channels_and_silences(
    client_as, role, resource, operation
):
    # given a rule, a channel and a silence
    rows = _alert_rows()
    method, suffix, success = ALERT_WRITES[operation]
    body = rows["bodies"][resource] if method in ("post", "put") else {"comment": "x", "enabled": False}
    url = f"/api/v1/alerts/{resource}/" + suffix.format(id=rows[resource].pk)
    # when the role attempts the operation
    response = getattr(client_as(role), method)(url, body, format="json")
    # then anonymous gets 401, viewers 403, operators and superusers succeed
    expected = success if ALLOWED[role] else (401 if role == "anonymous" else 403)
    assert response.status_code == expected, response.content


@pytest.mark.parametrize("role", ["anonymous", "viewer", "operator", "superuser"])
@pytest.mark.parametrize(
    "path", ["", "{alert}/", "rules/", "rules/{rules}/", "channels/", "channels/{channels}/", "silences/",
             "silences/{silences}/"],
)  # fmt: skip
def test_every_role_but_anonymous_reads_alerts_and_their_rules(client_as, role, path):
    rows = _alert_rows()
    url = "/api/v1/alerts/" + path.format(**{k: getattr(v, "pk", None) for k, v in rows.items()})
    assert client_as(role).get(url).status_code == (401 if role == "anonymous" else 200)
