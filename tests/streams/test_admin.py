"""The admin: streams at a glance, actions that report refusals, read-only partitions."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from partitions.models import Partition
from streams.models import Stream, StreamOperation, StreamTransition

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:streams_stream_changelist")


def act(client, action: str, *streams: Stream):
    """Post an admin action for the streams and return the page it redirects to."""
    data = {"action": action, "_selected_action": [s.pk for s in streams]}
    return client.post(CHANGELIST, data, follow=True)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_changelist_shows_state_lag_and_partitions(admin_client, make_stream, make_partition):
    stream = make_stream(state="RUNNING")
    make_partition(stream, state=Partition.State.RUNNING)
    make_partition(stream, state=Partition.State.FINISHED)
    page = admin_client.get(CHANGELIST)
    assert page.status_code == 200
    html = page.content.decode()
    assert "RUNNING" in html
    assert "running 1 / finished 1" in html


def test_start_action_moves_the_stream_and_says_so(admin_client, admin_user, make_stream, sent_tasks):
    stream = make_stream()
    page = act(admin_client, "start_streams", stream)
    assert page.status_code == 200
    assert messages_of(page) == ["Started: orders"]
    assert Stream.objects.get(pk=stream.pk).state == "STARTING"
    assert StreamTransition.objects.get().by == admin_user.username


def test_refused_action_is_an_error_message_not_a_500(admin_client, make_stream, sent_tasks):
    running = make_stream(name="running", state="RUNNING")
    paused = make_stream(name="paused", state="PAUSED")
    page = act(admin_client, "resume_streams", running, paused)
    assert page.status_code == 200
    assert "cannot resume stream 'running': it is RUNNING (resume is allowed from PAUSED)" in messages_of(
        page
    )
    assert "Resumed: paused" in messages_of(page)
    assert Stream.objects.get(pk=running.pk).state == "RUNNING"


def test_pause_action_drains(admin_client, make_stream, sent_tasks):
    stream = make_stream(state="RUNNING")
    act(admin_client, "pause_streams", stream)
    assert Stream.objects.get(pk=stream.pk).state == "DRAINING"


def test_stream_page_shows_transitions_read_only(admin_client, make_stream, sent_tasks):
    stream = make_stream(state="RUNNING")
    act(admin_client, "pause_streams", stream)
    page = admin_client.get(reverse("admin:streams_stream_change", args=[stream.pk]))
    assert page.status_code == 200
    assert "paused by admin" in page.content.decode()
    # the connection settings of a started stream are frozen: shown, not editable
    assert re.search(r'<input[^>]*name="project"[^>]*disabled', page.content.decode())


def test_partitions_are_read_only(admin_client, make_stream, make_partition):
    partition = make_partition(make_stream(state="RUNNING"))
    assert (
        admin_client.get(reverse("admin:partitions_partition_changelist") + "?state=RUNNING").status_code
        == 200
    )
    assert admin_client.get(reverse("admin:partitions_partition_add")).status_code == 403
    change = reverse("admin:partitions_partition_change", args=[partition.pk])
    admin_client.post(change, {"state": "FINISHED"})
    assert Partition.objects.get(pk=partition.pk).state == "RUNNING"
    for name in ("partitionedge", "lagsample"):
        assert admin_client.get(reverse(f"admin:partitions_{name}_changelist")).status_code == 200


def test_adding_a_stream_refuses_an_end_before_its_start(admin_client):
    add = reverse("admin:streams_stream_add")
    assert admin_client.get(add).status_code == 200
    form = {
        "name": "orders",
        "source_kind": "spanner_change_stream",
        "project": "p",
        "instance": "i",
        "database": "d",
        "change_stream": "Orders",
        "dialect": "",
        "heartbeat_ms": "10000",
        "start_at": "2026-01-01T12:00:00Z",
        "end_at": "2026-01-01T11:00:00Z",
        "window_seconds": "60",
        "transitions-TOTAL_FORMS": "0",
        "transitions-INITIAL_FORMS": "0",
        "errors-TOTAL_FORMS": "0",
        "errors-INITIAL_FORMS": "0",
    }
    page = admin_client.post(add, form)
    assert "the end timestamp must be after the start timestamp" in page.content.decode()
    assert not Stream.objects.exists()
    form["end_at"] = "2026-01-01T13:00:00Z"
    assert admin_client.post(add, form).status_code == 302
    assert Stream.objects.get().state == "NOT_STARTED"


def test_an_admin_action_on_a_watched_stream_is_sent_to_its_source_and_listed(admin_client, make_stream):
    # given a running Datastream stream
    stream = make_stream(name="ds", source_kind="datastream", state="RUNNING")
    Stream.objects.filter(pk=stream.pk).update(
        connection={
            "project": "demo-project",
            "location": "us-central1",
            "stream_id": "ds",
            "log_retention_hours": 168,
        }
    )
    # when an admin pauses it
    response = act(admin_client, "pause_streams", stream)
    # then Datastream is asked (an operation waits for the worker) and the state is the source's to move
    assert "Pausing: ds" in messages_of(response)
    operation = StreamOperation.objects.get(stream=stream)
    assert (operation.action, operation.status, operation.by) == ("pause", "PENDING", "admin")
    assert Stream.objects.get(pk=stream.pk).state == "RUNNING"
    page = admin_client.get(reverse("admin:streams_stream_change", args=[stream.pk])).content.decode()
    assert "PENDING" in page
