"""The "New stream" page through Django's client, against the simulator: kind, check, create, override."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.models import AuditEntry, Stream

URL = reverse("stream-new")


@pytest.fixture
def form(simulator) -> dict:
    return {
        "name": "orders", "heartbeat_ms": "10000", "start_at": "now", "end_at": "", "window_seconds": "60",
        "project": "p", "instance": "i", "database": "demo-db", "change_stream": "Wrong", "dialect": "",
        "retention_hours": "24", "emulator_host": simulator.emulator_host,
    }  # fmt: skip


def post(client, data: dict, button: str):
    return client.post(f"{URL}?kind=spanner_change_stream", {**data, button: "1"}, follow=True)


def test_the_kind_comes_first_and_unavailable_kinds_say_why(client, users, unfinished_kind):
    client.force_login(users["operator"])
    page = client.get(URL).content.decode()
    assert 'id="kind-spanner_change_stream"' in page
    assert "its pipeline is not finished (a test)" in page  # the unavailable kind, with its reason
    assert f'id="kind-{unfinished_kind}"' not in page  # and no link to its form
    form_page = client.get(f"{URL}?kind=spanner_commit_timestamp").content.decode()
    assert "a TIMESTAMP column with allow_commit_timestamp=true" in form_page  # the settings' help


def test_check_shows_each_result_beside_its_field_and_creates_nothing(client, users, form):
    client.force_login(users["operator"])
    page = post(client, form, "check").content.decode()
    assert "3 of 5 checks failed" in page  # the name, the retention of that name, the query
    beside = page.split('id="checks-change_stream"')[1].split("</td>")[0]
    assert "change stream Wrong does not exist (there are: Changes)" in beside
    assert not Stream.objects.exists()


def test_create_is_refused_while_a_check_fails_unless_overridden(client, users, form):
    client.force_login(users["operator"])
    refused = post(client, form, "create").content.decode()
    assert "Create refused" in refused
    assert not Stream.objects.exists()
    post(client, {**form, "override": "1"}, "create")
    stream = Stream.objects.get()
    assert stream.state == Stream.State.NOT_STARTED
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.by) == ("create", users["operator"].username)
    assert "overriding failed checks: change stream exists" in entry.detail


def test_create_after_a_passing_check_goes_to_the_new_streams_page(client, users, form):
    client.force_login(users["operator"])
    answer = post(client, {**form, "change_stream": "Changes"}, "create")
    stream = Stream.objects.get()
    assert answer.redirect_chain[-1][0] == reverse("stream-detail", args=[stream.pk])
    assert AuditEntry.objects.get().detail == "created"


def test_viewers_cannot_open_the_page(client, users):
    client.force_login(users["viewer"])
    assert client.get(URL).status_code == 403
    overview = client.get(reverse("overview")).content.decode()
    assert 'id="new-stream-button"' not in overview
