"""Partition actions in the admin: release the leases of selected partitions, re-read them; audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from partitions.models import Partition
from streams.models import AuditEntry, Stream
from tests.factories import make_stream

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
