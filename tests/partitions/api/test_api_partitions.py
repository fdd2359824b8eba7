"""Partitions, lineage, lag series, transitions and errors of a stream."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from partitions.models import LagSample, Partition, PartitionEdge
from streams.models import StreamError, StreamTransition
from tests.factories import reference
from tests.factories.lineage import make_lineage_stream

NODE_FIELDS = {
    "id", "token", "state", "start_at", "end_at", "watermark", "lag_seconds", "data_records",
    "mods", "heartbeats", "bytes", "stalled", "parents", "label",
}  # fmt: skip


def test_partitions_filter_by_state_and_stall(viewer, stream):
    url = f"/api/v1/streams/{stream.pk}/partitions/"
    finished = viewer.get(url, {"state": "FINISHED", "page_size": 500}).json()
    assert finished["count"] == stream.partitions.filter(state="FINISHED").count()
    assert {p["state"] for p in finished["results"]} == {"FINISHED"}
    Partition.objects.filter(pk=stream.partitions.first().pk).update(stalled=True)
    assert viewer.get(url, {"stalled": "true"}).json()["count"] == 1
    assert viewer.get(url, {"state": "LOST"}).status_code == 400


def test_partitions_order_by_lag_and_start(viewer, stream):
    url = f"/api/v1/streams/{stream.pk}/partitions/"
    most_behind = viewer.get(url, {"ordering": "-lag"}).json()["results"][0]
    assert most_behind["token"] == reference(stream)["holder"].token
    lags = [
        p["lag_seconds"] for p in viewer.get(url, {"ordering": "lag", "page_size": 500}).json()["results"]
    ]
    assert lags == sorted(lags)
    starts = [
        p["start_at"] for p in viewer.get(url, {"ordering": "-start", "page_size": 500}).json()["results"]
    ]
    assert starts == sorted(starts, reverse=True)
    assert viewer.get(url, {"ordering": "token"}).status_code == 400


def test_partitions_of_a_missing_stream_are_404(viewer, db):
    assert viewer.get("/api/v1/streams/424242/partitions/").status_code == 404


def test_a_partition_names_its_parents_and_children(viewer, stream):
    edge = PartitionEdge.objects.filter(stream=stream).select_related("parent", "child").first()
    child = viewer.get(f"/api/v1/partitions/{edge.child_id}/").json()
    parent = viewer.get(f"/api/v1/partitions/{edge.parent_id}/").json()
    assert edge.parent.token in child["parent_tokens"]
    assert edge.child.token in parent["child_tokens"]
    assert viewer.get("/api/v1/partitions/0/").status_code == 404


def test_the_lineage_has_every_partition_and_edge(viewer, stream):
    body = viewer.get(f"/api/v1/streams/{stream.pk}/lineage/").json()
    assert len(body["nodes"]) == stream.partitions.count()
    assert set(body["nodes"][0]) == NODE_FIELDS
    assert {(e["parent"], e["child"]) for e in body["edges"]} == set(
        PartitionEdge.objects.filter(stream=stream).values_list("parent_id", "child_id")
    )
    merged = [n for n in body["nodes"] if n["parents"] > 1]
    assert merged, "the fixture's lineage has merges"


def test_the_lineage_window_keeps_partitions_alive_in_it(viewer, stream):
    since = timezone.now() - timedelta(days=1)
    body = viewer.get(f"/api/v1/streams/{stream.pk}/lineage/", {"since": since.isoformat()}).json()
    alive = stream.partitions.exclude(end_at__lt=since).count()
    assert 0 < len(body["nodes"]) == alive < stream.partitions.count()
    ids = {n["id"] for n in body["nodes"]}
    assert all(e["parent"] in ids and e["child"] in ids for e in body["edges"])


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "tomorrow"}, "since"),
        ({"until": "2026-01-01T00:00:00"}, "until"),
        ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "until"),
    ],
)
@pytest.mark.parametrize("endpoint", ["lineage", "lag"])
def test_a_bad_window_is_400(viewer, stream, endpoint, params, field):
    response = viewer.get(f"/api/v1/streams/{stream.pk}/{endpoint}/", params)
    assert response.status_code == 400
    assert field in response.json()


def test_the_lag_series_is_oldest_first_within_the_window(viewer, stream):
    body = viewer.get(f"/api/v1/streams/{stream.pk}/lag/", {"since": "-10m"}).json()
    assert 55 <= len(body) <= 61  # 10 s samples
    assert [p["at"] for p in body] == sorted(p["at"] for p in body)
    sample = LagSample.objects.filter(stream=stream).order_by("-at").first()
    assert body[-1]["lag_seconds"] == pytest.approx(sample.lag_seconds)
    assert body[-1]["holding_partition"] == sample.holding_partition.token
    assert viewer.get(f"/api/v1/streams/{stream.pk}/lag/").json()[0]["resolution_seconds"] == 10


@pytest.mark.parametrize("endpoint", ["lineage/", "partitions/?ordering=-lag"])
def test_query_count_does_not_grow_with_partitions(viewer, db, endpoint, settings):
    settings.CDC_API_AUTH_CACHE_SECONDS = 0  # both reads authenticate from the database
    small, large = make_lineage_stream("small", 20), make_lineage_stream("large", 400, seed=3)
    counts = []
    for stream in (small, large):
        with CaptureQueriesContext(connection) as queries:
            assert viewer.get(f"/api/v1/streams/{stream.pk}/{endpoint}").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1] > 0


def test_transitions_and_errors_are_listed(viewer, stream):
    StreamTransition.objects.create(stream=stream, from_state="STARTING", to_state="RUNNING", by="task")
    partition = stream.partitions.first()
    StreamError.objects.create(
        stream=stream, partition_token=partition.token, kind="retryable", code="UNAVAILABLE", message="x"
    )
    StreamError.objects.create(stream=stream, kind="permanent", code="NOT_FOUND", message="y")
    transitions = viewer.get(f"/api/v1/streams/{stream.pk}/transitions/").json()
    assert transitions["results"][0]["to_state"] == "RUNNING"
    errors = viewer.get(f"/api/v1/streams/{stream.pk}/errors/").json()
    assert [e["code"] for e in errors["results"]] == ["NOT_FOUND", "UNAVAILABLE"]
    assert errors["results"][1]["partition_token"] == partition.token
    assert errors["results"][1]["partition"] == partition.pk
    assert viewer.get(f"/api/v1/streams/{stream.pk}/errors/", {"kind": "permanent"}).json()["count"] == 1
    assert (
        viewer.get(f"/api/v1/streams/{stream.pk}/errors/", {"partition": partition.pk}).json()["count"] == 1
    )


def test_partition_timestamps_print_as_drf_prints_them(viewer, stream):
    from rest_framework import serializers

    row = viewer.get(f"/api/v1/streams/{stream.pk}/partitions/?page_size=1").json()["results"][0]
    partition = Partition.objects.get(pk=row["id"])
    drf = serializers.DateTimeField()
    for name in ("start_at", "end_at", "watermark", "created_at", "running_at", "lease_expires_at"):
        value = getattr(partition, name)
        assert row[name] == (drf.to_representation(value) if value else None), name
