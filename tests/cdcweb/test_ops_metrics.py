"""/metrics: Prometheus text from database aggregates, parsed with the official client's parser."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from partitions.models import Partition, PartitionEdge
from partitions.sources.bigtable.kind import KIND
from streams.models import Stream
from tests.factories import reference
from tests.factories.lineage import build_lineage, make_lineage_stream
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures

FAMILIES = {
    "cdc_stream_lag_seconds", "cdc_stream_low_watermark_timestamp_seconds", "cdc_stream_partitions",
    "cdc_stream_data_records", "cdc_stream_splits", "cdc_stream_merges", "cdc_stream_stalled_partitions",
    "cdc_stream_scheduling_latency_seconds",
}  # fmt: skip


def scrape(client) -> dict:
    """Return {family name: family} from one anonymous scrape."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def value(family, name: str | None = None, **labels) -> float:
    """Return the one sample of the family (or of a sample name) whose labels include `labels`."""
    found = [
        s.value
        for s in family.samples
        if (name is None or s.name == name) and labels.items() <= s.labels.items()
    ]
    assert len(found) == 1, (family.name, labels, found)
    return found[0]


def test_metrics_need_no_login_and_have_every_family(client, stream):
    assert set(scrape(client)) >= FAMILIES


def test_partitions_records_and_stalls_match_the_database(client, stream):
    families = scrape(client)
    labels = {"stream": "orders", "state": "RUNNING"}
    truth = reference(stream)
    for state, count in truth["by_state"].items():
        assert value(families["cdc_stream_partitions"], partition_state=state, **labels) == count
    assert (
        value(families["cdc_stream_data_records"], "cdc_stream_data_records_total", **labels)
        == (truth["data_records"])
    )
    assert (
        value(families["cdc_stream_stalled_partitions"], **labels)
        == stream.partitions.filter(stalled=True).count()
    )
    low = value(families["cdc_stream_low_watermark_timestamp_seconds"], **labels)
    assert low == pytest.approx(truth["low"].timestamp())
    assert value(families["cdc_stream_lag_seconds"], **labels) == pytest.approx(truth["lag"], abs=2)


def test_splits_and_merges_are_counted_from_edges(client, db):
    # given a root that splits in two, and the two that merge back into one
    stream = make_lineage_stream("tiny", 0)
    root, left, right, merged = (
        Partition.objects.create(stream=stream, token=t, start_at=stream.start_at, watermark=stream.start_at)
        for t in ("root", "left", "right", "merged")
    )
    for parent, child in ((root, left), (root, right), (left, merged), (right, merged)):
        PartitionEdge.objects.create(stream=stream, parent=parent, child=child)
    families = scrape(client)
    labels = {"stream": "tiny"}
    assert value(families["cdc_stream_splits"], "cdc_stream_splits_total", **labels) == 1
    assert value(families["cdc_stream_merges"], "cdc_stream_merges_total", **labels) == 1


def test_scheduling_latency_is_the_wait_after_the_last_parent(client, db):
    # given a merged child that ran 2 s after its later parent finished
    stream = make_lineage_stream("waits", 0)
    t0 = stream.start_at
    a, b, child = (
        Partition.objects.create(stream=stream, token=t, start_at=t0, watermark=t0)
        for t in ("a", "b", "child")
    )
    Partition.objects.filter(pk=a.pk).update(finished_at=t0 + timedelta(seconds=1))
    Partition.objects.filter(pk=b.pk).update(finished_at=t0 + timedelta(seconds=3))
    Partition.objects.filter(pk=child.pk).update(running_at=t0 + timedelta(seconds=5))
    for parent in (a, b):
        PartitionEdge.objects.create(stream=stream, parent=parent, child=child)
    family = scrape(client)["cdc_stream_scheduling_latency_seconds"]
    assert value(family, "cdc_stream_scheduling_latency_seconds_count", stream="waits") == 1
    assert value(family, "cdc_stream_scheduling_latency_seconds_sum", stream="waits") == pytest.approx(2.0)
    assert value(family, "cdc_stream_scheduling_latency_seconds_bucket", stream="waits", le="1.0") == 0
    assert value(family, "cdc_stream_scheduling_latency_seconds_bucket", stream="waits", le="2.5") == 1


def test_a_scrape_costs_the_same_queries_for_more_partitions(client, db):
    make_lineage_stream("small", 10)
    with CaptureQueriesContext(connection) as few:
        scrape(client)
    few = len(few)  # now: the slice is taken from a log that the next request resets
    make_lineage_stream("large", 300, seed=3)
    with CaptureQueriesContext(connection) as many:
        scrape(client)
    assert len(many) == few > 0


def test_metrics_need_the_bearer_token_once_one_is_set(client, stream, settings):
    # given CDC_METRICS_TOKEN set
    settings.CDC_METRICS_TOKEN = "s3cret-scrape-token"
    # then a scrape without it, or with another, gets 401 and a Bearer challenge
    refused = client.get("/metrics")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert b"cdc_stream" not in refused.content
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Token s3cret-scrape-token").status_code == 401
    # and with it, the figures
    answer = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert answer.status_code == 200
    assert b"cdc_stream_lag_seconds" in answer.content


def test_a_bigtable_stream_is_measured_like_any_other(client, db):
    # given a running Bigtable stream with a lineage of splits and merges
    connection = KIND.clean(
        {"project": "my-project", "instance": "my-instance", "table": "t", "app_profile": "a"}
    )
    stream = Stream.objects.create(
        name="bt", source_kind="bigtable", connection=connection, state=Stream.State.RUNNING,
        start_at=timezone.now() - timedelta(days=1),
    )  # fmt: skip
    build_lineage(stream, 20, days=1)
    # when /metrics is scraped, then its partitions, records and lag are there as for Spanner
    families = scrape(client)
    labels = {"stream": "bt", "state": "RUNNING"}
    truth = reference(stream)
    for state, count in truth["by_state"].items():
        assert value(families["cdc_stream_partitions"], partition_state=state, **labels) == count
    assert value(families["cdc_stream_lag_seconds"], **labels) == pytest.approx(truth["lag"], abs=2)
    parents = Counter(PartitionEdge.objects.filter(stream=stream).values_list("child_id", flat=True))
    merges = sum(n > 1 for n in parents.values())
    assert merges
    assert value(families["cdc_stream_merges"], "cdc_stream_merges_total", **labels) == merges
