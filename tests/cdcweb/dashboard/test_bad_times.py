"""No time anyone can type gives a 500: every form and filter that takes one answers with a clear error."""

from __future__ import annotations

import pytest
from django.urls import reverse

from cdcweb.alerts.models import AlertRule
from streams.models import Stream

# Well formed but impossible, out of range, overflowing when turned to UTC, or not a time at all.
BAD_TIMES = [
    "2026-02-30T10:00",
    "2026-02-30T10:00:00Z",
    "2026-13-01T00:00",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00",
    "tomorrow",
    "",
]


@pytest.fixture
def rule(stream_with_parts):
    return AlertRule.objects.create(name="failed", kind="stream_failed", stream=stream_with_parts)


@pytest.mark.parametrize("value", BAD_TIMES)
def test_the_recover_form_says_what_is_wrong_with_its_timestamp(client, users, stream_with_parts, value):
    client.force_login(users["operator"])
    url = reverse("stream-action", args=[stream_with_parts.pk, "recover"])
    Stream.objects.filter(pk=stream_with_parts.pk).update(state=Stream.State.FAILED_PERMANENTLY)
    response = client.post(url, {"strategy": "timestamp", "timestamp": value}, follow=True)
    assert response.status_code == 200
    said = [str(m) for m in response.context["messages"]]
    assert len(said) == 1
    assert any(words in said[0] for words in ("cannot read the time", "out of range", "needs a timestamp"))
    assert Stream.objects.get(pk=stream_with_parts.pk).state == Stream.State.FAILED_PERMANENTLY


@pytest.mark.parametrize("value", BAD_TIMES)
@pytest.mark.parametrize("field", ["since", "until"])
def test_the_new_report_form_refuses_a_bad_time_with_a_form_error(
    client, users, stream_with_parts, value, field
):
    client.force_login(users["operator"])
    body = {
        "stream": stream_with_parts.pk,
        "since": "2026-01-01T00:00",
        "until": "2026-01-02T00:00",
        field: value,
    }
    response = client.post(reverse("report-new"), body)
    assert response.status_code == 200  # the form again, with its error
    assert response.context["form"].errors[field]


@pytest.mark.parametrize("value", BAD_TIMES)
def test_the_silence_form_refuses_a_bad_end_with_a_form_error(client, users, rule, value):
    client.force_login(users["operator"])
    response = client.post(reverse("alert-silence-new"), {"rule": rule.pk, "ends_at": value})
    assert response.status_code == 200
    assert response.context["form"].errors["ends_at"]


@pytest.mark.parametrize("value", [v for v in BAD_TIMES if v])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/alerts/?fired_after={}",
        "/api/v1/alerts/?fired_before={}",
        "/api/v1/streams/{stream}/lineage/?since={}",
        "/api/v1/streams/{stream}/lag/?until={}",
    ],
)
def test_api_filters_answer_400_naming_the_parameter(client, users, stream_with_parts, path, value):
    client.force_login(users["operator"])
    response = client.get(path.format(value, stream=stream_with_parts.pk))
    assert response.status_code == 400, response.content
    name = path.split("?")[1].split("=")[0]
    assert name in response.json()


@pytest.mark.parametrize("value", [v for v in BAD_TIMES if v])
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/reports/", {"since": "2026-01-01T00:00:00Z"}, "until"),
        ("/api/v1/alerts/silences/", {}, "ends_at"),
        ("/api/v1/streams/{stream}/recover/", {"strategy": "timestamp"}, "timestamp"),
    ],
)
def test_api_bodies_answer_400_naming_the_field(
    client, users, stream_with_parts, rule, path, body, field, value
):
    client.force_login(users["operator"])
    body = {"stream": stream_with_parts.pk, "rule": rule.pk, **body, field: value}
    response = client.post(path.format(stream=stream_with_parts.pk), body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in response.json()
