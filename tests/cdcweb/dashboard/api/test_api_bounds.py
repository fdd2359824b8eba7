"""Bounded answers: the lineage and lag refuse windows too long or too full; the cache stays small."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, reset_queries
from django.test.utils import CaptureQueriesContext

from partitions.models import LagSample, Partition
from partitions.sources import KINDS
from partitions.sources.base import SettingsError
from streams.models import Stream
from tests.factories.api import stream_body


def _touches_partitions(client, url: str) -> bool:
    # The request empties the connection's query log (request_started): start from an empty
    # one, or the capture's slice misses the request's queries.
    reset_queries()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return any("partitions_partition" in q["sql"] for q in queries.captured_queries)


@pytest.mark.parametrize("kind", ["lineage", "lag"])
def test_a_window_longer_than_the_limit_is_a_400_that_says_so(viewer, stream, kind, settings):
    settings.CDC_API_MAX_WINDOW_DAYS = 7
    base = f"/api/v1/streams/{stream.pk}/{kind}/"
    assert viewer.get(base + "?since=-7d").status_code == 200
    refused = viewer.get(base + "?since=-8d")
    assert refused.status_code == 400
    assert "longer than 7 days" in refused.json()["since"][0]
    assert viewer.get(base + "?since=-30d&until=-25d").status_code == 200


def test_a_lineage_with_more_partitions_than_the_limit_is_a_400(viewer, stream, settings):
    # given a stream of 40 partitions and a limit of 39
    settings.CDC_API_MAX_LINEAGE_NODES = 39
    refused = viewer.get(f"/api/v1/streams/{stream.pk}/lineage/")
    assert refused.status_code == 400
    assert "more than 39 partitions: narrow it" in refused.json()["since"][0]
    settings.CDC_API_MAX_LINEAGE_NODES = 40
    assert len(viewer.get(f"/api/v1/streams/{stream.pk}/lineage/").json()["nodes"]) == 40


def test_a_lag_series_with_more_points_than_the_limit_is_a_400(viewer, stream, settings):
    points = LagSample.objects.filter(stream=stream).count()
    settings.CDC_API_MAX_LAG_POINTS = points - 1
    refused = viewer.get(f"/api/v1/streams/{stream.pk}/lag/")
    assert refused.status_code == 400
    assert f"more than {points - 1:,} lag samples" in refused.json()["since"][0]
    settings.CDC_API_MAX_LAG_POINTS = points
    assert len(viewer.get(f"/api/v1/streams/{stream.pk}/lag/").json()) == points


def test_unknown_query_parameters_share_one_cache_entry(viewer, stream):
    # given a list read once
    url = f"/api/v1/streams/{stream.pk}/partitions/?ordering=-lag"
    assert _touches_partitions(viewer, url)
    # when made-up parameters are added, then the cached answer is served all the same
    assert not _touches_partitions(viewer, url + "&cache-buster=1")
    assert not _touches_partitions(viewer, "&".join([url, "zzz=2", "aaa=3"]))
    # and a parameter the view reads is a different answer
    assert _touches_partitions(viewer, url + "&state=RUNNING")


def test_answers_over_the_size_limit_are_not_cached(viewer, stream, settings):
    # given a lineage answer that is cached at the default limit
    url = f"/api/v1/streams/{stream.pk}/lineage/"
    size = len(viewer.get(url).content)
    assert not _touches_partitions(viewer, url)
    # when the limit is well under its size (answers of other windows differ by a few bytes
    # in their timestamps), then each read computes it again
    settings.CDC_API_CACHE_MAX_BYTES = size // 2
    other = url + "?until=now"
    assert _touches_partitions(viewer, other)
    assert _touches_partitions(viewer, other)


BAD_TIMES = ["-1000000d", "-99999999999d", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00",
             "9999-12-31T23:59:59-01:00", "%2B1000000d", "2026-01-01T00:00:00", "%00", "-1e400d"]  # fmt: skip


@pytest.mark.parametrize("kind", ["lineage", "lag"])
@pytest.mark.parametrize("value", BAD_TIMES)
def test_out_of_range_or_malformed_times_are_a_400(viewer, stream, kind, value):
    for name in ("since", "until"):
        answer = viewer.get(f"/api/v1/streams/{stream.pk}/{kind}/?{name}={value}")
        assert answer.status_code == 400, answer.content
        assert name in answer.json()


@pytest.mark.parametrize(
    "fields",
    [
        {"start_at": "0001-01-01T00:00:00Z"},
        {"start_at": "0001-01-01T00:00:00+01:00"},
        {"end_at": "9999-12-31T23:59:59-01:00"},
        {"start_at": "-1000000d"},
        {"name": "a\x00b"},
        {"name": "orders\nmore"},
        {"change_stream": "Orders\nX"},
        {"heartbeat_ms": 10**30},
        {"window_seconds": -(10**30)},
        {"project": "p\x00"},
    ],
    ids=repr,
)
def test_bad_stream_fields_are_a_400_naming_the_field(operator, fields):
    answer = operator.post("/api/v1/streams/", stream_body(**fields), format="json")
    assert answer.status_code == 400, answer.content
    assert set(fields) <= set(answer.json())
    assert not Stream.objects.exists()


def test_a_name_with_a_trailing_newline_is_refused_by_the_model(db):
    # a stream's own name, by the model
    stream = Stream(name="orders\n", connection={"change_stream": "Orders"})
    with pytest.raises(ValidationError, match="use letters"):
        stream.full_clean()
    # a change stream's name, by its kind (it becomes part of the SQL text): surrounding
    # whitespace is stripped, so no newline reaches a query, and one inside is refused
    kind = KINDS["spanner_change_stream"]
    settings = {"project": "p", "instance": "i", "database": "d", "change_stream": "Orders\n"}
    assert kind.clean(settings)["change_stream"] == "Orders"
    with pytest.raises(SettingsError) as refused:
        kind.clean({**settings, "change_stream": "Or\nders"})
    assert "change_stream" in refused.value.errors
    assert not Partition.objects.exists()
