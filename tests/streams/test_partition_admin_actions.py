"""Partition actions in the admin: release the leases of selected partitions, re-read them; audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from partitions.models import Partition
from partitions.watch.importing import import_streams
from partitions.watch.polling import poll_watched
from streams.models import AuditEntry, Stream
from tests.factories import make_stream
from tests.factories.datastream import LOCATION, PROJECT

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:partitions_partition_changelist")


def partitions(held: bool = True) -> list[Partition]:
    stream = make_stream("orders", Stream.State.RUNNING, start_at=timezone.now() - timedelta(minutes=10))
    lease = (
        {"lease_owner": "t.0.a@w1@h", "lease_expires_at": timezone.now() + timedelta(minutes=1)}
        if held
        else {}
    )
    return [
        Partition.objects.create(
            stream=stream, token=f"tok-{i}", state=state, start_at=stream.start_at,
            watermark=stream.start_at + timedelta(minutes=5), **(lease if state == "RUNNING" else {}),
        )
        for i, state in enumerate(["RUNNING", "FINISHED"])
    ]  # fmt: skip


def act(client, action: str, selected: list[Partition]):
    data = {"action": action, "_selected_action": [p.pk for p in selected]}
    return client.post(CHANGELIST, data, follow=True)


def test_releasing_leases_ends_the_held_one_and_reports_the_other(admin_client):
    running, finished = partitions()
    answer = act(admin_client, "release_leases", [running, finished])
    shown = [str(m) for m in answer.context["messages"]]
    assert f"Leases released: partitions {running.pk}" in shown
    assert any("it is FINISHED" in m for m in shown)
    running.refresh_from_db()
    assert running.lease_owner == ""
    assert list(AuditEntry.objects.values_list("action", "by")) == [("release-lease", "admin")]


def test_rereading_from_the_start_schedules_a_finished_partition_again(admin_client):
    _, finished = partitions(held=False)
    act(admin_client, "reread_from_start", [finished])
    finished.refresh_from_db()
    assert (finished.state, finished.watermark) == (Partition.State.SCHEDULED, finished.start_at)
    assert AuditEntry.objects.get().before["state"] == "FINISHED"


def _objects(at_sim) -> tuple[Stream, list[Partition]]:
    """Return a running watched stream and its objects (partitions), read from the simulator."""
    running = at_sim.steady_streams("RUNNING", 60.0)[0].rsplit("/", 1)[-1]
    stream = import_streams(PROJECT, LOCATION, running).created[0]
    poll_watched(objects=True)
    return stream, list(Partition.objects.filter(stream=stream).order_by("token"))


@pytest.mark.parametrize("what", ["start", "stop"])
def test_an_objects_backfill_is_started_or_stopped_from_the_admin(admin_client, at_sim, what):
    # given a watched stream's objects, shown as its partitions
    stream, objects = _objects(at_sim)
    # when an operator starts (or stops) the backfill of one of them from the admin
    answer = act(admin_client, f"{what}_backfills", objects[:1])
    # then the operation is sent to the source, audited, and the admin says so
    operation = stream.operations.get()
    assert (operation.action, operation.target, operation.status) == (
        f"{what}_backfill",
        objects[0].token,
        "PENDING",
    )
    assert AuditEntry.objects.get(stream=stream).action == f"{what}_backfill"
    assert any(f"Backfill {what} sent to the source" in str(m) for m in answer.context["messages"])


def test_a_second_object_of_the_same_stream_waits_for_the_first(admin_client, at_sim):
    stream, objects = _objects(at_sim)
    answer = act(admin_client, "start_backfills", objects[:2])
    shown = [str(m) for m in answer.context["messages"]]
    assert any("still running" in m for m in shown)
    assert stream.operations.count() == 1


def test_a_read_streams_partition_has_no_backfill(admin_client):
    running, _ = partitions()
    answer = act(admin_client, "start_backfills", [running])
    assert any("read by cdcweb" in str(m) for m in answer.context["messages"])


def test_a_staff_viewer_cannot_backfill_from_the_admin(client, users, at_sim):
    stream, objects = _objects(at_sim)
    viewer = users["viewer"]
    viewer.is_staff = True
    viewer.save()
    client.force_login(viewer)
    assert "start_backfills" not in client.get(CHANGELIST).content.decode()
    act(client, "start_backfills", objects[:1])
    assert not stream.operations.exists()
