"""The partition page's actions (release a lease, re-read) for operators, and the audit log on both pages."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from partitions.models import Partition
from streams.models import AuditEntry, Stream
from tests.factories import make_stream


def running_partition() -> Partition:
    """Return a partition a reader holds, of a stream that started ten minutes ago."""
    stream = make_stream("payments", Stream.State.RUNNING, start_at=timezone.now() - timedelta(minutes=10))
    return Partition.objects.create(
        stream=stream, token="tok-1", state=Partition.State.RUNNING, start_at=stream.start_at,
        watermark=stream.start_at + timedelta(minutes=5), lease_owner="task.0.a@w1@host",
        lease_expires_at=timezone.now() + timedelta(minutes=1),
    )  # fmt: skip


def test_an_operator_releases_a_lease_from_the_page_and_both_pages_show_it(client, users):
    partition = running_partition()
    client.force_login(users["operator"])
    page = client.get(reverse("partition-detail", args=[partition.pk])).content.decode()
    assert 'id="release-lease"' in page
    answer = client.post(reverse("partition-action", args=[partition.pk, "release-lease"]), follow=True)
    text = answer.content.decode()
    assert "Lease released" in text
    assert "release-lease" in text  # the audit entry...
    assert "task.0.a@w1@host" in text  # ...with the holder before
    stream_page = client.get(reverse("stream-detail", args=[partition.stream_id])).content.decode()
    assert f"partition {partition.pk}</a>: released the lease of task.0.a@w1@host" in stream_page


def test_a_reread_from_the_page_refuses_a_time_before_the_start(client, users):
    partition = running_partition()
    client.force_login(users["operator"])
    early = (partition.start_at - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    answer = client.post(
        reverse("partition-action", args=[partition.pk, "reread"]), {"from": early}, follow=True
    )
    assert "is before the partition&#x27;s start" in answer.content.decode()
    assert not AuditEntry.objects.exists()
    start = partition.start_at.strftime("%Y-%m-%dT%H:%M:%S")
    answer = client.post(
        reverse("partition-action", args=[partition.pk, "reread"]), {"from": start}, follow=True
    )
    assert "Re-reading from" in answer.content.decode()
    assert AuditEntry.objects.get().action == "reread"


def test_a_viewer_sees_no_actions_and_cannot_post_them(client, users):
    partition = running_partition()
    client.force_login(users["viewer"])
    page = client.get(reverse("partition-detail", args=[partition.pk])).content.decode()
    assert 'id="release-lease"' not in page
    assert client.post(reverse("partition-action", args=[partition.pk, "release-lease"])).status_code == 403
    partition.refresh_from_db()
    assert partition.lease_owner == "task.0.a@w1@host"
