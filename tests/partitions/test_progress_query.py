"""The read model's one grouped query gives what the filtered aggregates over a join gave."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count, Max, Min, OuterRef, Q, Subquery, Sum
from django.test.utils import CaptureQueriesContext

from partitions.models import Partition
from partitions.progress import progress_of
from streams.models import Stream

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
S = Partition.State
UNFINISHED = ~Q(partitions__state=S.FINISHED)

pytestmark = pytest.mark.django_db


def old_annotate_status(queryset):
    """The computation before the grouped query (commit a931d79), kept here as the reference."""
    live_states = [state for state in S.values if state != S.FINISHED]
    holder = Partition.objects.filter(stream=OuterRef("pk"), state__in=live_states)
    by_state = {
        f"agg_{state.lower()}": Count("partitions", filter=Q(partitions__state=state)) for state in S.values
    }
    return queryset.annotate(
        agg_total=Count("partitions"),
        agg_unfinished=Count("partitions", filter=UNFINISHED),
        agg_data_records=Sum("partitions__data_records"),
        agg_low=Min("partitions__watermark", filter=UNFINISHED),
        agg_last_end=Max("partitions__end_at"),
        agg_last_watermark=Max("partitions__watermark"),
        agg_holding=Subquery(holder.order_by("watermark", "id").values("token")[:1]),
        **by_state,
    )


@pytest.fixture
def streams(make_stream, make_partition):
    """Return streams covering every case: all states mixed, all finished at an end, ties, none."""
    mixed = make_stream("mixed", state="RUNNING")
    for i, state in enumerate([S.FINISHED, S.FINISHED, S.CREATED, S.SCHEDULED, S.RUNNING, S.RUNNING]):
        end = T0 + timedelta(minutes=i + 1) if state == S.FINISHED else None
        make_partition(mixed, state=state, minutes=10 - i, data_records=100 * i + 7, end_at=end)
    ended = make_stream("ended", state="PAUSED", end_at=T0 + timedelta(hours=1))
    make_partition(ended, state=S.FINISHED, minutes=60, end_at=T0 + timedelta(hours=1), data_records=5)
    make_partition(ended, state=S.FINISHED, minutes=30, end_at=T0 + timedelta(minutes=30))
    tied = make_stream("tied", state="RUNNING")
    for state in (S.RUNNING, S.SCHEDULED, S.CREATED):  # equal watermarks: the lowest id holds
        make_partition(tied, state=state, minutes=3)
    make_partition(tied, state=S.FINISHED, minutes=1, end_at=None)  # finished without an end
    make_stream("empty")
    return list(Stream.objects.order_by("name"))


def test_the_grouped_progress_equals_the_old_aggregates_for_every_field(streams):
    old = old_annotate_status(Stream.objects.all()).in_bulk()
    new = progress_of(streams)
    for stream in streams:
        before, found = old[stream.pk], new[stream.pk]
        assert found.partitions == before.agg_total, stream.name
        assert found.unfinished == before.agg_unfinished, stream.name
        assert found.data_records == (before.agg_data_records or 0), stream.name
        assert found.by_state == {s: getattr(before, f"agg_{s.lower()}") for s in S.values}, stream.name
        assert found.holding_token == before.agg_holding, stream.name
        if before.agg_unfinished:
            assert found.low_watermark == before.agg_low, stream.name
        elif before.agg_total:
            assert found.low_watermark == (before.agg_last_end or before.agg_last_watermark), stream.name


def test_the_progress_of_many_streams_is_one_query(streams):
    with CaptureQueriesContext(connection) as queries:
        progress_of(streams)
    assert len(queries) == 1
