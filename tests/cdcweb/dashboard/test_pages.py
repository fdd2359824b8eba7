"""The dashboard pages through Django's test client: login, roles, actions, partition table."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from partitions.models import Partition
from streams.models import Stream, StreamTransition
from tests.factories import make_stream

PAGES = ("overview", "stream-detail", "partition-detail")


def url_of(name: str, stream) -> str:
    if name == "overview":
        return reverse(name)
    if name == "partition-detail":
        return reverse(name, args=[stream.parts["m"].pk])
    return reverse(name, args=[stream.pk])


@pytest.mark.parametrize("page", PAGES)
def test_pages_send_anonymous_visitors_to_the_login_page(client, stream_with_parts, page):
    response = client.get(url_of(page, stream_with_parts))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("page", PAGES)
def test_pages_render_for_a_viewer(client, users, stream_with_parts, page):
    client.force_login(users["viewer"])
    response = client.get(url_of(page, stream_with_parts))
    assert response.status_code == 200
    assert b"orders" in response.content


def test_login_page_logs_in_and_lands_on_the_overview(client, users):
    response = client.post(reverse("login"), {"username": "vera", "password": "pw"})
    assert response.status_code == 302
    assert response["Location"] == reverse("overview")
    assert client.get(reverse("overview")).status_code == 200


def test_unknown_ids_answer_404_without_a_trace(client, users):
    client.force_login(users["viewer"])
    for url in ("/streams/999999/", "/partitions/999999/", "/streams/999999/panel/"):
        response = client.get(url)
        assert response.status_code == 404
        assert b"Traceback" not in response.content


def test_overview_shows_lag_throughput_sparkline_and_warnings(client, users, stream_with_parts):
    client.force_login(users["viewer"])
    html = client.get(reverse("overview")).content.decode()
    assert "RUNNING" in html
    assert "<polyline" in html
    assert "rec/s" in html
    assert "1 stalled partition" in html
    assert "lag growing" in html


def test_overview_warns_when_a_paused_stream_nears_the_retention_end(client, users, stream_with_parts):
    # given a stream paused 20 hours ago (retention 24 h: less than 25 % left)
    Stream.objects.filter(pk=stream_with_parts.pk).update(
        state=Stream.State.PAUSED, paused_at=timezone.now() - timedelta(hours=20)
    )
    client.force_login(users["viewer"])
    html = client.get(reverse("overview")).content.decode()
    assert "paused: resume within" in html


def test_viewer_sees_no_action_buttons_and_cannot_post(client, users, stream_with_parts):
    client.force_login(users["viewer"])
    html = client.get(reverse("stream-detail", args=[stream_with_parts.pk])).content.decode()
    assert "data-open-dialog" not in html
    response = client.post(reverse("stream-action", args=[stream_with_parts.pk, "pause"]))
    assert response.status_code == 403
    assert Stream.objects.get(pk=stream_with_parts.pk).state == Stream.State.RUNNING


def test_operator_sees_buttons_enabled_by_state(client, users, stream_with_parts):
    client.force_login(users["operator"])
    html = client.get(reverse("stream-detail", args=[stream_with_parts.pk])).content.decode()
    assert 'data-open-dialog="dlg-pause"' in html
    assert '<dialog id="dlg-recover"' in html
    assert 'data-open-dialog="dlg-resume" disabled' in html


def test_refused_action_shows_the_state_machine_message(client, users, stream_with_parts):
    client.force_login(users["operator"])
    response = client.post(reverse("stream-action", args=[stream_with_parts.pk, "resume"]), follow=True)
    assert response.status_code == 200
    assert "cannot resume stream" in response.content.decode()
    assert "it is RUNNING" in response.content.decode()


def test_pause_moves_the_stream_to_draining_and_says_so(client, users, stream_with_parts):
    client.force_login(users["operator"])
    response = client.post(reverse("stream-action", args=[stream_with_parts.pk, "pause"]), follow=True)
    html = response.content.decode()
    assert "Pause requested" in html
    assert Stream.objects.get(pk=stream_with_parts.pk).state == Stream.State.DRAINING
    assert StreamTransition.objects.filter(stream=stream_with_parts, by="otto", to_state="DRAINING").exists()


def test_recover_with_a_bad_timestamp_shows_a_message(client, users, stream_with_parts):
    Stream.objects.filter(pk=stream_with_parts.pk).update(state=Stream.State.FAILED_PERMANENTLY)
    client.force_login(users["operator"])
    response = client.post(
        reverse("stream-action", args=[stream_with_parts.pk, "recover"]),
        {"strategy": "timestamp", "timestamp": "not a time"},
        follow=True,
    )
    assert response.status_code == 200
    assert "cannot read the time" in response.content.decode()
    response = client.post(
        reverse("stream-action", args=[stream_with_parts.pk, "recover"]),
        {"strategy": "timestamp"},
        follow=True,
    )
    assert "needs a timestamp" in response.content.decode()


def test_partition_table_filters_by_state_and_stalled(client, users, stream_with_parts):
    client.force_login(users["viewer"])
    url = reverse("stream-partitions", args=[stream_with_parts.pk])
    html = client.get(url, {"state": "RUNNING"}).content.decode()
    assert "tok-b" in html
    assert "tok-m" in html
    assert "tok-a1" not in html
    html = client.get(url, {"stalled": "yes"}).content.decode()
    assert "tok-m" in html
    assert "tok-b" not in html


def test_partition_table_sorts_by_lag_and_start(client, users, stream_with_parts):
    client.force_login(users["viewer"])
    url = reverse("stream-partitions", args=[stream_with_parts.pk])
    html = client.get(url, {"sort": "lag"}).content.decode()
    assert html.index("tok-m") < html.index("tok-b") < html.index("tok-a1")
    html = client.get(url, {"sort": "-start"}).content.decode()
    assert html.index("tok-m") < html.index("tok-a1") < html.index("tok-a<")


def test_partition_table_paginates(client, users, stream_with_parts):
    for i in range(30):
        Partition.objects.create(
            stream=stream_with_parts,
            token=f"extra-{i:02d}",
            start_at=stream_with_parts.start_at,
            watermark=stream_with_parts.start_at,
        )
    client.force_login(users["viewer"])
    url = reverse("stream-partitions", args=[stream_with_parts.pk])
    first = client.get(url, {"sort": "start"}).content.decode()
    second = client.get(url, {"sort": "start", "page": 2}).content.decode()
    assert "page 1 of 2" in first
    assert "page 2 of 2" in second
    assert "35 partitions" in first
    assert first.count("<tr") - 1 == 25
    assert second.count("<tr") - 1 == 10


def test_tree_marks_a_merged_child_under_each_parent(client, users, stream_with_parts):
    client.force_login(users["viewer"])
    roots = client.get(reverse("stream-tree", args=[stream_with_parts.pk])).content.decode()
    assert "tok-a" in roots
    assert "tok-b" in roots
    assert "tok-m" not in roots
    for parent in ("a1", "a2"):
        html = client.get(
            reverse("partition-children", args=[stream_with_parts.parts[parent].pk])
        ).content.decode()
        assert "tok-m" in html
        assert "merged from" in html


def test_partition_page_links_parents_children_and_ancestors(client, users, stream_with_parts):
    client.force_login(users["viewer"])
    html = client.get(reverse("partition-detail", args=[stream_with_parts.parts["m"].pk])).content.decode()
    for name in ("a1", "a2", "a"):
        assert reverse("partition-detail", args=[stream_with_parts.parts[name].pk]) in html
    assert "watermark_stalled" in html
    assert "lag sample (held the stream back)" in html


def test_fixed_shards_are_listed_in_natural_order(client, users):
    # given a table watched over shards 0..11, created in an order that sorts badly as text
    stream = make_stream("events", state=Stream.State.RUNNING)
    for shard in (10, 2, 11, 0, 1):
        Partition.objects.create(
            stream=stream, token=f"shard:{shard}", label=f"shard {shard}", start_at=stream.start_at,
            watermark=stream.start_at,
        )  # fmt: skip
    client.force_login(users["viewer"])
    # when the partition tree is shown
    html = client.get(reverse("stream-tree", args=[stream.pk])).content.decode()
    # then shard 2 comes before shard 10
    order = [html.index(f"shard:{n}") for n in (0, 1, 2, 10, 11)]
    assert order == sorted(order)
