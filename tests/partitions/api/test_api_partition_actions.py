"""Partition actions in the API: release a held lease, re-read from a time; refusals are 409; all audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition
from streams.models import AuditEntry, Stream
from tests import factories

P = Partition.State


@pytest.fixture
def read_stream(db) -> Stream:
    """Return a RUNNING stream that started ten minutes ago (inside its one-day retention)."""
    return factories.make_stream(
        "orders", Stream.State.RUNNING, start_at=timezone.now() - timedelta(minutes=10)
    )


def partition(read_stream: Stream, state: str = P.RUNNING, **fields) -> Partition:
    """Return a partition of the stream that started with it and read five minutes."""
    return Partition.objects.create(
        stream=read_stream, token=f"token-{Partition.objects.count()}", state=state,
        start_at=read_stream.start_at, watermark=read_stream.start_at + timedelta(minutes=5), **fields,
    )  # fmt: skip


def held(read_stream: Stream) -> Partition:
    return partition(
        read_stream, lease_owner="task.0.abc@w1", lease_expires_at=timezone.now() + timedelta(minutes=1)
    )


def test_releasing_a_held_lease_ends_it_and_is_audited(operator, read_stream):
    # given a partition a reader holds
    target = held(read_stream)
    # when an operator releases its lease
    answer = operator.post(f"/api/v1/partitions/{target.pk}/release-lease/")
    # then the lease is gone (a reservation for the next read may stand) and the audit log says who and what
    assert answer.status_code == 200, answer.content
    target.refresh_from_db()
    assert target.lease_owner == ""
    assert target.lease_expires_at is not None  # reserved: the next read is queued at once
    entries = operator.get(f"/api/v1/streams/{read_stream.pk}/audit/").json()["results"]
    assert [(e["action"], e["by"], e["partition_id"]) for e in entries] == [
        ("release-lease", "otto", target.pk)
    ]
    assert entries[0]["before"]["lease_owner"] == "task.0.abc@w1"
    assert entries[0]["before"]["state"] == "RUNNING"


@pytest.mark.parametrize("lease", ["none", "expired", "finished"])
def test_releasing_a_lease_nobody_holds_is_a_409_with_the_reason(operator, read_stream, lease):
    expired = {"lease_owner": "old@w1", "lease_expires_at": timezone.now() - timedelta(seconds=1)}
    target = {
        "none": lambda: partition(read_stream),
        "expired": lambda: partition(read_stream, **expired),
        "finished": lambda: partition(read_stream, P.FINISHED),
    }[lease]()
    answer = operator.post(f"/api/v1/partitions/{target.pk}/release-lease/")
    assert answer.status_code == 409
    assert "cannot release the lease" in answer.json()["detail"]
    assert answer.json()["current_state"] == target.state
    assert not AuditEntry.objects.exists()


def test_rereading_a_finished_partition_schedules_it_from_that_time(operator, read_stream):
    target = partition(read_stream, P.FINISHED, end_at=read_stream.start_at + timedelta(minutes=5))
    at = read_stream.start_at + timedelta(minutes=1)
    answer = operator.post(f"/api/v1/partitions/{target.pk}/reread/", {"from": at.isoformat()}, format="json")
    assert answer.status_code == 200, answer.content
    target.refresh_from_db()
    assert (target.state, target.watermark, target.lease_owner) == (P.SCHEDULED, at, "")
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.before["state"], entry.partition_token) == (
        "reread",
        "FINISHED",
        target.token,
    )


@pytest.mark.parametrize(
    ("minutes", "reason"),
    [(-1, "is before the partition's start"), (6, "is after the partition's watermark")],
)
def test_rereading_outside_what_was_read_is_a_409(operator, read_stream, minutes, reason):
    target = held(read_stream)
    at = read_stream.start_at + timedelta(minutes=minutes)
    answer = operator.post(f"/api/v1/partitions/{target.pk}/reread/", {"from": at.isoformat()}, format="json")
    assert answer.status_code == 409
    assert reason in answer.json()["detail"]
    target.refresh_from_db()
    assert target.lease_owner == "task.0.abc@w1"  # nothing changed


def test_rereading_older_than_the_retention_is_a_409(operator, db):
    old = factories.make_stream("old", Stream.State.RUNNING, start_at=timezone.now() - timedelta(days=3))
    target = partition(old)
    answer = operator.post(
        f"/api/v1/partitions/{target.pk}/reread/", {"from": old.start_at.isoformat()}, format="json"
    )
    assert answer.status_code == 409
    assert "older than the source keeps changes" in answer.json()["detail"]


def test_a_reread_needs_a_time(operator, read_stream):
    target = held(read_stream)
    assert operator.post(f"/api/v1/partitions/{target.pk}/reread/", {}, format="json").status_code == 400
    bad = operator.post(f"/api/v1/partitions/{target.pk}/reread/", {"from": "yesterday"}, format="json")
    assert bad.status_code == 400


@pytest.mark.parametrize(("role", "status"), [("anonymous", 401), ("viewer", 403)])
def test_only_operators_may_act_on_partitions(client_as, read_stream, role, status):
    target = held(read_stream)
    client = client_as(role)
    assert client.post(f"/api/v1/partitions/{target.pk}/release-lease/").status_code == status
    body = {"from": read_stream.start_at.isoformat()}
    assert client.post(f"/api/v1/partitions/{target.pk}/reread/", body, format="json").status_code == status
    assert not AuditEntry.objects.exists()


def test_stream_actions_and_edits_go_to_the_same_audit_log(operator, viewer, db):
    read_stream = factories.make_stream("payments", Stream.State.RUNNING)
    assert operator.post(f"/api/v1/streams/{read_stream.pk}/pause/").status_code == 200
    assert (
        operator.patch(
            f"/api/v1/streams/{read_stream.pk}/", {"heartbeat_ms": 3000}, format="json"
        ).status_code
        == 200
    )
    entries = viewer.get(f"/api/v1/streams/{read_stream.pk}/audit/").json()["results"]
    assert [(e["action"], e["by"]) for e in entries] == [("edit", "otto"), ("pause", "otto")]
    assert entries[0]["before"]["heartbeat_ms"] == read_stream.heartbeat_ms
    assert entries[0]["detail"].startswith("changed ")
    assert entries[1]["before"]["state"] == "RUNNING"
