"""Watching streams through the official client: import, states, errors, objects and their backfills."""

from __future__ import annotations

import pytest

from partitions.sources.base import PermanentSourceError, RetryableSourceError
from partitions.sources.datastream.client import DatastreamApi

PROJECT, LOCATION = "demo-project", "us-central1"
ALL_STATES = {
    "NOT_STARTED",
    "STARTING",
    "RUNNING",
    "DRAINING",
    "PAUSED",
    "FAILED",
    "FAILED_PERMANENTLY",
    "MAINTENANCE",
}


def test_import_lists_every_stream_of_a_location_in_one_call(ds_sim, api):
    # given a location with 200 streams
    mark = ds_sim.mark()
    # when it is listed for import
    streams = api.list_streams(PROJECT, LOCATION)
    # then every stream comes back, from a single ListStreams call
    assert [s.stream_id for s in streams] == [f"stream-{i:03d}" for i in range(200)]
    assert [(r.method, r.code) for r in ds_sim.requests(since=mark)] == [("ListStreams", "OK")]
    assert all(s.display_name and s.source_type and s.destination_type for s in streams)
    assert {s.backfill_strategy for s in streams} == {"all", "none"}
    assert any(s.last_recovery_time is not None for s in streams)


def test_another_location_has_nothing_to_import(api):
    assert api.list_streams(PROJECT, "europe-west3") == []


def test_failed_stream_shows_its_errors_with_reason_uuid_message_and_time(api, claim):
    # given a permanently failed stream
    stream = api.get_stream(claim("FAILED_PERMANENTLY"))
    # then its errors say why, each with a UUID and an aware time, and its strategy and types show
    assert stream.state == "FAILED_PERMANENTLY"
    assert len(stream.errors) == 2
    for error in stream.errors:
        assert error.reason
        assert error.message
        assert error.uuid
        assert error.error_time is not None
        assert error.error_time.tzinfo is not None
    assert "Stream failed permanently" in {e.reason for e in stream.errors}
    assert stream.source_type in ("mysql", "oracle", "postgresql", "sql_server")
    assert stream.destination_type in ("gcs", "bigquery")


def test_every_state_is_seen_through_get_stream(travel):
    # given a stream that starts after the epoch, and every instant its script changes state
    server, api = travel
    stream = server.world.streams[f"{server.config.parent}/streams/stream-000"]
    now = server.clock.now()
    changes = stream.timeline.segment_starts(now, stream.timeline.start_at + stream.timeline.length)
    # when the clock passes each change and the stream is read
    seen = [api.get_stream(stream.name).state]
    for at in changes:
        server.clock.advance(at + 0.5 - server.clock.now())
        seen.append(api.get_stream(stream.name).state)
    # then it was seen in every state the API has, MAINTENANCE included, starting NOT_STARTED
    assert seen[0] == "NOT_STARTED"
    assert set(seen) == ALL_STATES
    assert seen[-1] == "FAILED_PERMANENTLY"


def test_objects_show_their_table_and_backfill_job(ds_sim, api):
    # given a stream that backfills all its objects, long started, and one that backfills none
    automatic = next(
        s
        for s in ds_sim.world.streams.values()
        if s.backfill_all and s.timeline.start_at < ds_sim.config.epoch
    )
    manual = next(
        s for s in ds_sim.world.streams.values() if not s.backfill_all and not any(o.track for o in s.objects)
    )
    # when their objects are listed
    objects = api.list_stream_objects(automatic.name)
    untouched = api.list_stream_objects(manual.name)
    # then each object names its table and its latest backfill job
    assert len(objects) == len(automatic.objects) >= 2
    for obj in objects:
        assert obj.source_object == obj.display_name
        assert "." in obj.source_object
        assert obj.name == f"{automatic.name}/objects/{obj.object_id}"
        assert obj.backfill.trigger == "AUTOMATIC"
        assert obj.backfill.state in ("PENDING", "ACTIVE", "COMPLETED", "FAILED", "UNSUPPORTED")
    assert {o.backfill.state for o in untouched} == {"NOT_STARTED"}


def test_backfills_progress_from_pending_to_their_end(travel):
    # given a stream not started yet and one of its objects
    server, api = travel
    stream = server.world.streams[f"{server.config.parent}/streams/stream-000"]
    obj = stream.objects[0]
    first = api.get_stream_object(obj.name).backfill.state
    # when the clock passes its backfill's pending, active and end times
    jobs = []
    for at in (obj.pending_at, obj.active_at, obj.end_at):
        server.clock.advance(at + 0.5 - server.clock.now())
        jobs.append(api.get_stream_object(obj.name).backfill)
    # then its job moved through every stage and ended with its times set
    assert first == "NOT_STARTED"
    assert [job.state for job in jobs[:2]] == ["PENDING", "ACTIVE"]
    ended = jobs[-1]
    assert ended.state in ("COMPLETED", "FAILED", "UNSUPPORTED")
    assert ended.last_start_time < ended.last_end_time
    assert bool(ended.errors) == (ended.state != "COMPLETED")


def test_stream_errors_gathers_object_errors_once(ds_sim, api):
    # given a stream with an object whose scripted backfill failed (and no one restarted it)
    now = ds_sim.clock.now()
    stream, obj = next(
        (s, o)
        for s in ds_sim.world.streams.values()
        for o in s.objects
        if o.automatic and o.outcome == "FAILED" and o.end_at < now and not s.track and not o.track
    )
    # when its errors are fetched with its objects'
    errors = api.stream_errors(stream.name, objects=True)
    # then the backfill's error is there, and no error twice
    assert f"Datastream couldn't read table {obj.display_name}" in " ".join(e.message for e in errors)
    assert len({e.key for e in errors}) == len(errors)
    assert len(api.stream_errors(stream.name)) <= len(errors)


def test_unknown_stream_is_a_permanent_not_found(api):
    name = f"projects/{PROJECT}/locations/{LOCATION}/streams/no-such-stream"
    with pytest.raises(PermanentSourceError) as raised:
        api.get_stream(name)
    assert raised.value.code == "NOT_FOUND"
    assert name in str(raised.value)


def test_unreachable_endpoint_is_retryable():
    # given a client aimed at a port nothing listens on
    api = DatastreamApi("127.0.0.1:9", "127.0.0.1:9", timeout=5.0)
    # when a stream is read, then the failure is worth retrying
    with pytest.raises(RetryableSourceError) as raised:
        api.get_stream(f"projects/{PROJECT}/locations/{LOCATION}/streams/stream-001")
    assert raised.value.code == "UNAVAILABLE"
