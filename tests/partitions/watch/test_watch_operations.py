"""Operating watched streams from the same actions: each one carried out by Datastream, followed to
its end with its progress stored, a refusal stored in Datastream's own words."""

from __future__ import annotations

import re

import pytest

from partitions.models import Partition, WatchedStream
from partitions.sources.datastream.client import shared_api
from partitions.watch.importing import import_streams
from partitions.watch.operating import run_operation
from partitions.watch.polling import poll_watched
from streams import actions
from streams.models import StreamOperation
from streams.transitions import TransitionNotAllowed
from tests.factories.datastream import LOCATION, PROJECT

pytestmark = pytest.mark.django_db
OP = StreamOperation.Status


def _watch(state: str, pick):
    return import_streams(PROJECT, LOCATION, pick(state)).created[0]


def _watch_source(state: str, source: str, pick):
    return import_streams(PROJECT, LOCATION, pick(state, source)).created[0]


def _last(stream) -> StreamOperation:
    operation = run_operation(stream.operations.get(status=OP.PENDING))
    print(operation.action, operation.status, operation.message)  # shown when a test fails
    return operation


def test_pause_is_carried_out_by_datastream_and_the_stream_shows_paused(at_sim, pick):
    # given a running watched stream
    stream = _watch("RUNNING", pick)
    # when an operator pauses it (the action records the operation; the task carries it out)
    actions.pause(stream, by="otto")
    assert stream.operations.get().status == OP.PENDING
    operation = _last(stream)
    # then Datastream paused it, the operation says so, and the stream moved with it
    assert operation.status == OP.DONE
    assert operation.by == "otto"
    assert operation.operation.startswith(f"projects/{PROJECT}/locations/{LOCATION}/operations/")
    assert "PAUSED" in operation.message
    stream.refresh_from_db()
    assert stream.state == "PAUSED"
    assert stream.transitions.last().to_state == "PAUSED"


@pytest.mark.parametrize(("state", "act"), [("PAUSED", actions.resume), ("NOT_STARTED", actions.start)])
def test_resume_and_start_run_the_stream(at_sim, pick, state, act):
    stream = _watch(state, pick)
    act(stream, by="otto")
    assert _last(stream).status == OP.DONE
    stream.refresh_from_db()
    assert stream.state in ("STARTING", "RUNNING")


@pytest.mark.parametrize(("strategy", "start"), [("now", "most_recent"), ("watermark", "next_available")])
def test_recover_runs_a_failed_stream_with_a_cdc_strategy(at_sim, pick, strategy, start):
    stream = _watch("FAILED_PERMANENTLY", pick)
    actions.recover(stream, strategy, by="otto")
    operation = _last(stream)
    assert operation.arguments == {"start": start}
    assert operation.status == OP.DONE
    stream.refresh_from_db()
    assert stream.state == "RUNNING"
    assert WatchedStream.objects.get(stream=stream).last_recovery_at is not None


@pytest.mark.parametrize(
    ("position", "stored"),
    [
        (
            "mysql:mysql-bin.000123:4",
            {"mysql_log_position": {"log_file": "mysql-bin.000123", "log_position": 4}},
        ),
        ({"mysql_gtid_position": {"gtid_set": "a:1-5"}}, {"mysql_gtid_position": {"gtid_set": "a:1-5"}}),
    ],
)
def test_recover_from_a_given_start_position(at_sim, pick, position, stored):
    # given a MySQL stream that failed permanently
    stream = _watch_source("FAILED_PERMANENTLY", "mysql", pick)
    # when an operator recovers it from a binary log position the source still keeps
    actions.recover(stream, "position", by="otto", position=position)
    operation = _last(stream)
    # then Datastream ran it from there (a specific start position) and it runs again
    assert operation.arguments == {"start": "specific", "position": stored}
    assert operation.status == OP.DONE
    stream.refresh_from_db()
    assert stream.state == "RUNNING"


@pytest.mark.parametrize(
    ("position", "status", "says"),
    [
        ("mysql:mysql-bin.000050:4", OP.REFUSED, "no longer available"),
        ("oracle:2000000", OP.REFUSED, "reads from a mysql source"),
    ],
)
def test_a_position_datastream_cannot_use_is_refused_in_its_words(at_sim, pick, position, status, says):
    stream = _watch_source("FAILED_PERMANENTLY", "mysql", pick)
    actions.recover(stream, "position", by="otto", position=position)
    operation = _last(stream)
    assert operation.status == status
    assert says in operation.message


@pytest.mark.parametrize(
    ("strategy", "position", "says"),
    [
        ("position", None, "needs a position"),
        ("now", "oracle:1", "only used with strategy 'position'"),
        ("position", "oracle:abc", "an Oracle position is oracle:SCN"),
        ("position", "db2:5", "unknown position kind 'db2'"),
        ("position", {"oracle_scn_position": {"scn": -1}}, "a whole number of 0 or more"),
        ("position", {"oracle_scn_position": {}}, "needs scn"),
        ("position", '{"nope": 1}', "unknown position 'nope'"),
    ],
)
def test_a_bad_position_is_refused_before_anything_is_sent(at_sim, strategy, position, says):
    # (nothing reaches Datastream: any failed stream will do, shared by these cases)
    failed = at_sim.steady_streams("FAILED_PERMANENTLY", 60.0)[0].rsplit("/", 1)[-1]
    stream = import_streams(PROJECT, LOCATION, failed).created[0]
    with pytest.raises(actions.InvalidAction, match=re.escape(says)):
        actions.recover(stream, strategy, by="otto", position=position)
    assert not stream.operations.exists()


def test_a_read_stream_has_no_source_position(stream):
    with pytest.raises(actions.InvalidAction, match="read by cdcweb"):
        actions.recover(stream, "position", by="otto", position="oracle:5")


@pytest.mark.parametrize(
    ("state", "act", "says"),
    [
        ("PAUSED", actions.pause, "already paused"),
        ("MAINTENANCE", actions.pause, "in maintenance"),
        ("NOT_STARTED", actions.pause, "hasn't been started"),
    ],
)
def test_a_refusal_is_stored_in_datastreams_own_words(at_sim, pick, state, act, says):
    # given a stream in a state Datastream will not take the action in
    stream = _watch(state, pick)
    before = stream.state
    # when the action is carried out
    act(stream, by="otto")
    operation = _last(stream)
    # then it is REFUSED with Datastream's message, and the stream did not move
    assert operation.status == OP.REFUSED
    assert operation.code == "FAILED_PRECONDITION"
    assert says in operation.message
    stream.refresh_from_db()
    assert stream.state == before


def _idle_object(pick):
    """Return a running watched stream and one of its objects with no backfill running."""
    for _ in range(20):
        stream_id = pick("RUNNING")
        name = f"projects/{PROJECT}/locations/{LOCATION}/streams/{stream_id}"
        for obj in shared_api().list_stream_objects(name):
            if obj.backfill.state not in ("PENDING", "ACTIVE"):
                return import_streams(PROJECT, LOCATION, stream_id).created[0], obj
    raise AssertionError("no running stream with an idle object")


def test_a_backfill_of_one_object_starts_then_stops(at_sim, pick):
    # given an object of a running stream with no backfill running
    stream, idle = _idle_object(pick)
    # when its backfill is started
    actions.backfill(stream, idle.object_id, "start", by="otto")
    started = _last(stream)
    # then it runs, and its partition shows it
    assert started.status == OP.DONE, started.message
    assert started.message.endswith("the backfill is ACTIVE")
    partition = Partition.objects.get(stream=stream, token=idle.object_id)
    assert partition.cursor["backfill_state"] == "ACTIVE"
    assert partition.state == Partition.State.RUNNING
    # and once stopped it is STOPPED
    actions.backfill(stream, idle.object_id, "stop", by="otto")
    assert _last(stream).status == OP.DONE
    partition.refresh_from_db()
    assert partition.cursor["backfill_state"] == "STOPPED"


def test_a_backfill_of_an_unknown_object_is_refused_as_not_found(at_sim, pick):
    stream = _watch("RUNNING", pick)
    actions.backfill(stream, "no-such-table", "start", by="otto")
    operation = _last(stream)
    assert operation.status == OP.REFUSED
    assert operation.code == "NOT_FOUND"
    assert "was not found" in operation.message


def test_a_second_action_waits_for_the_first(at_sim, pick):
    stream = _watch("RUNNING", pick)
    actions.pause(stream, by="otto")
    with pytest.raises(TransitionNotAllowed, match="its pause by otto is still running"):
        actions.pause(stream, by="olga")
    assert stream.operations.count() == 1


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda s: actions.recover(s, "timestamp", None, by="o"), "not from a timestamp"),
        (lambda s: actions.backfill(s, "a/b", "start", by="o"), "by its ID"),
        (lambda s: actions.backfill(s, "orders", "restart", by="o"), "'start' or 'stop'"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_sent(at_sim, pick, call, says):
    stream = _watch("FAILED_PERMANENTLY", pick)
    with pytest.raises(actions.InvalidAction, match=says):
        call(stream)
    assert not stream.operations.exists()


def test_a_read_stream_has_no_backfill(make_stream):
    with pytest.raises(actions.InvalidAction, match="read by cdcweb"):
        actions.backfill(make_stream(), "orders", "start", by="o")


def test_the_stream_is_polled_when_an_operation_ends(at_sim, pick):
    stream = _watch("RUNNING", pick)
    poll_watched()
    actions.pause(stream, by="otto")
    _last(stream)
    assert WatchedStream.objects.get(stream=stream).source_state == "PAUSED"
