"""Polling watched streams: each state move a transition at the source's time, errors once, objects
as partitions, metrics in the lag and throughput charts."""

from __future__ import annotations

import pytest

from partitions.models import LagSample, Partition, WatchedStream
from partitions.progress import progress
from partitions.watch.importing import import_streams
from partitions.watch.polling import poll_watched
from streams.models import Stream, StreamError
from tests.factories.datastream import LOCATION, PROJECT

pytestmark = pytest.mark.django_db
SEVEN = {"NOT_STARTED", "STARTING", "RUNNING", "DRAINING", "PAUSED", "FAILED", "FAILED_PERMANENTLY"}


def _passing_each_change(server, stream_id: str):
    """Yield once the clock has passed each instant the stream's script changes state."""
    scripted = server.world.streams[f"{server.config.parent}/streams/{stream_id}"]
    timeline = scripted.timeline
    for at in timeline.segment_starts(server.clock.now(), timeline.start_at + timeline.length):
        server.clock.advance(at + 0.5 - server.clock.now())
        yield at


def test_every_state_move_is_a_transition_at_the_sources_time(travel):
    # given a watched stream that has not started yet
    stream = import_streams(PROJECT, LOCATION, "stream-000").created[0]
    assert stream.state == "NOT_STARTED"
    # when the clock passes each change of its script and beat polls after each
    maintenance_seen, changes = False, []
    for at in _passing_each_change(travel, "stream-000"):
        poll_watched()
        changes.append(at)
        maintenance_seen |= WatchedStream.objects.get(stream=stream).maintenance
    # then every state of the seven was entered, each move logged when Datastream says it happened
    moves = list(stream.transitions.order_by("at", "id"))
    assert {m.to_state for m in moves} == SEVEN - {"NOT_STARTED"}
    assert all(m.by == "partitions.watch.tasks.poll_watched_streams_task" for m in moves)
    for move in moves:
        assert min(abs(move.at.timestamp() - at) for at in changes) < 0.01, move
    # and MAINTENANCE kept the state before, with the flag set while it lasted
    assert maintenance_seen
    stream.refresh_from_db()
    assert stream.state == "FAILED_PERMANENTLY"


def test_errors_are_stored_once_however_often_they_are_polled(travel):
    stream = import_streams(PROJECT, LOCATION, "stream-000").created[0]
    for _ in _passing_each_change(travel, "stream-000"):
        poll_watched()
        poll_watched()
    # the script's episodes: one connect error, the log error (FAILED, then FAILED_PERMANENTLY)
    # and the lost-position error: each stored once, with Datastream's UUID and time
    errors = list(StreamError.objects.filter(stream=stream, partition_token=""))
    assert len(errors) == 3
    assert len({e.uuid for e in errors}) == 3
    assert all(e.code and e.message and e.at > stream.created_at for e in errors)
    # and the move to FAILED_PERMANENTLY says why in Datastream's words
    failed = stream.transitions.filter(to_state="FAILED_PERMANENTLY").get()
    assert failed.reason.startswith("Datastream reports FAILED_PERMANENTLY: ")
    assert any(e.message in failed.reason for e in errors)


def test_objects_are_partitions_with_their_backfill(at_sim):
    # given a watched stream whose objects are backfilled automatically
    scripted = next(
        s
        for s in at_sim.world.streams.values()
        if s.backfill_all and s.timeline.start_at < at_sim.config.epoch
    )
    stream = import_streams(PROJECT, LOCATION, scripted.name.rsplit("/", 1)[-1]).created[0]
    # when beat reads its objects
    poll_watched(objects=True)
    # then each object is a partition labelled with its table, holding its backfill state
    partitions = list(Partition.objects.filter(stream=stream))
    assert len(partitions) == len(scripted.objects)
    assert {p.token for p in partitions} == {o.name.rsplit("/", 1)[-1] for o in scripted.objects}
    for partition in partitions:
        assert "." in partition.label
        assert partition.cursor["backfill_state"] in (
            "PENDING",
            "ACTIVE",
            "COMPLETED",
            "FAILED",
            "UNSUPPORTED",
        )
        assert partition.cursor["backfill_trigger"] == "AUTOMATIC"
    # and a second read changes no count
    poll_watched(objects=True)
    assert Partition.objects.filter(stream=stream).count() == len(scripted.objects)


def test_metrics_are_lag_samples_and_throughput(at_sim, pick):
    # given a running watched stream
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    # when beat polls it twice
    poll_watched()
    poll_watched()
    # then its freshness is the lag, and the events it processed are counted once
    samples = list(LagSample.objects.filter(stream=stream).order_by("at"))
    watched = WatchedStream.objects.get(stream=stream)
    assert len(samples) == 2
    assert samples[-1].lag_seconds == watched.freshness_seconds is not None
    assert watched.events_total > 0
    assert samples[1].data_records == watched.events_total
    # (a point or two may have come between the polls; the window's points are not counted twice)
    assert 0 <= samples[1].data_records - samples[0].data_records < samples[0].data_records / 4
    assert watched.events_per_second > 0
    assert watched.bytes_total > 0


def test_a_stream_deleted_in_datastream_says_so_once(at_sim, pick):
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    Stream.objects.filter(pk=stream.pk).update(connection={**stream.connection, "stream_id": "gone-stream"})
    poll_watched()
    poll_watched()
    errors = list(StreamError.objects.filter(stream=stream))
    assert len(errors) == 1
    assert errors[0].code == "NOT_FOUND"
    assert "could not poll" in errors[0].message
    assert "NOT_FOUND" in WatchedStream.objects.get(stream=stream).poll_failure


def test_the_read_model_gives_a_watched_stream_the_sources_lag_not_its_objects(at_sim, pick):
    # given a running watched stream whose objects (backfilled long ago) are partitions
    stream = import_streams(PROJECT, LOCATION, pick("RUNNING")).created[0]
    poll_watched(objects=True)
    # when the read model (pages, API, CLI, /metrics) is asked how it is doing
    found = progress(stream)
    # then its lag is Datastream's freshness and its records the events counted
    watched = WatchedStream.objects.get(stream=stream)
    assert found.lag_seconds == watched.freshness_seconds is not None
    assert found.data_records == watched.events_total > 0
    assert found.low_watermark is None
    assert found.holding_partition_id is None
    assert found.partitions == Partition.objects.filter(stream=stream).count() > 0


def test_a_metric_without_a_descriptor_is_a_warning_not_an_empty_chart(without_freshness):
    # given a watched running stream in a project whose Cloud Monitoring lacks the freshness metric
    running = without_freshness.steady_streams("RUNNING", 60.0)[0].rsplit("/", 1)[-1]
    stream = import_streams(PROJECT, LOCATION, running).created[0]
    # when beat polls it
    poll_watched()
    # then the missing metric is recorded on the stream, the others still read, and no false lag drawn
    watched = WatchedStream.objects.get(stream=stream)
    assert watched.missing_metrics == ["datastream.googleapis.com/stream/freshness"]
    assert watched.events_per_second > 0
    assert not LagSample.objects.filter(stream=stream).exists()
