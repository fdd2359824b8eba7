"""Operating streams through the official client: each action followed to its end, each refusal explained."""

from __future__ import annotations

import time

import pytest
from datastream_support import FOLLOW

from partitions.simulator.datastream.world import ACTIVE_JOBS
from partitions.sources.base import PermanentSourceError, RetryableSourceError
from partitions.sources.datastream import operations

POSITIONS = {
    "mysql": {"mysql_log_position": {"log_file": "mysql-bin.000150", "log_position": 4}},
    "oracle": {"oracle_scn_position": {"scn": 5_000_000}},
}
TOO_OLD = {
    "mysql": {"mysql_log_position": {"log_file": "mysql-bin.000007", "log_position": 4}},
    "oracle": {"oracle_scn_position": {"scn": 42}},
}


def _follow(action, *args, **kwargs):
    """Run one operation with a progress recorder; return its result and the progress reports."""
    reports = []
    result = action(*args, progress=reports.append, **kwargs, **FOLLOW)
    return result, reports


def _idle_backfills(count: int):
    """Return a claim condition: at least ``count`` objects whose backfill neither runs now nor
    in a minute (a stream started lately still runs its automatic ones)."""

    def fits(stream, now: float) -> bool:
        idle = [
            o for o in stream.objects if {o.job(now).state, o.job(now + 60.0).state}.isdisjoint(ACTIVE_JOBS)
        ]
        return len(idle) >= count

    return fits


def _assert_progressed(reports, operation_name: str):
    assert reports[0].done is False
    assert reports[-1].done is True
    assert all(r.operation == operation_name for r in reports)
    elapsed = [r.elapsed for r in reports]
    assert elapsed == sorted(elapsed)


def test_pause_drains_then_pauses_and_reports_progress(ds_sim, api, claim):
    # given a running stream
    name, mark = claim("RUNNING"), ds_sim.mark()
    # when it is paused
    result, reports = _follow(operations.pause, api, name)
    # then the operation was followed to PAUSED, reporting Datastream's messages on the way
    assert result.stream.state == "PAUSED"
    _assert_progressed(reports, result.operation)
    assert reports[0].message.startswith("Draining")
    methods = [r.method for r in ds_sim.requests(since=mark)]
    assert methods == ["UpdateStream"] + ["GetOperation"] * result.polls
    assert api.get_stream(name).state == "PAUSED"


@pytest.mark.parametrize("state", ["PAUSED", "NOT_STARTED"])
def test_resume_starts_a_paused_or_new_stream(api, claim, state):
    name = claim(state)
    result, reports = _follow(operations.resume, api, name)
    assert result.stream.state == "RUNNING"
    _assert_progressed(reports, result.operation)
    assert any(r.message.startswith("Starting") for r in reports)


@pytest.mark.parametrize(
    ("state", "sources", "start"),
    [
        ("FAILED_PERMANENTLY", ("postgresql", "sql_server"), "most_recent"),
        ("FAILED", None, "next_available"),
        ("FAILED_PERMANENTLY", ("mysql", "oracle"), "specific"),
    ],
)
def test_recover_runs_the_stream_from_the_chosen_position(ds_sim, api, claim, state, sources, start):
    # given a failed stream
    name = claim(state, sources)
    before = time.time()
    position = POSITIONS[ds_sim.world.streams[name].source] if start == "specific" else None
    # when it is recovered with a CDC strategy
    result, reports = _follow(operations.recover, api, name, start, position)
    # then it runs again, without errors, with its recovery time set
    assert result.stream.state == "RUNNING"
    assert result.stream.errors == ()
    assert result.stream.last_recovery_time.timestamp() >= before
    _assert_progressed(reports, result.operation)
    assert any("position" in r.message for r in reports)


def test_backfill_runs_then_completes(ds_sim, api, claim):
    # given two objects of a running stream with no backfill running
    stream = claim("RUNNING", where=_idle_backfills(2))
    obj = next(o for o in api.list_stream_objects(stream) if o.backfill.state not in ("PENDING", "ACTIVE"))
    # when a backfill is started and followed until it runs, then until it ends
    running, reports = _follow(operations.start_backfill, api, obj.name)
    finished, _ = _follow(
        operations.start_backfill, api, _other_idle_object(api, stream, obj), until="finished"
    )
    # then the job went PENDING to ACTIVE (manual), and the other one to COMPLETED
    assert running.object.backfill.state == "ACTIVE"
    assert running.object.backfill.trigger == "MANUAL"
    assert [r.message for r in reports][0] == "Backfill job PENDING"
    assert reports[-1].message == "Backfill job ACTIVE"
    assert reports[-1].done is True
    assert finished.object.backfill.state == "COMPLETED"
    assert finished.object.backfill.last_end_time > finished.object.backfill.last_start_time


def _other_idle_object(api, stream: str, taken) -> str:
    return next(
        o.name
        for o in api.list_stream_objects(stream)
        if o.name != taken.name and o.backfill.state not in ("PENDING", "ACTIVE")
    )


def test_stopping_a_backfill_leaves_it_stopped(api, claim):
    stream = claim("RUNNING", where=_idle_backfills(1))
    obj = next(o for o in api.list_stream_objects(stream) if o.backfill.state not in ("PENDING", "ACTIVE"))
    operations.start_backfill(api, obj.name, **FOLLOW)
    result, reports = _follow(operations.stop_backfill, api, obj.name)
    assert result.object.backfill.state == "STOPPED"
    assert reports[-1].done is True


def _pause(api, name):
    return operations.pause(api, name)


def _run(api, name):
    return operations.run(api, name)


def _recover_from_a_mysql_position(api, name):
    return operations.recover(api, name, "specific", POSITIONS["mysql"])


def _backfill_unknown_object(api, name):
    return operations.start_backfill(api, f"{name}/objects/no-such-table")


@pytest.mark.parametrize(
    ("state", "sources", "act", "code", "says"),
    [
        ("NOT_STARTED", None, _pause, "FAILED_PRECONDITION", "hasn't been started"),
        (
            "FAILED_PERMANENTLY",
            ("postgresql",),
            _run,
            "FAILED_PRECONDITION",
            "recover it with a CDC strategy",
        ),
        ("MAINTENANCE", None, _pause, "FAILED_PRECONDITION", "in maintenance"),
        ("PAUSED", None, _pause, "FAILED_PRECONDITION", "already paused"),
        (
            "FAILED_PERMANENTLY",
            ("postgresql",),
            _recover_from_a_mysql_position,
            "INVALID_ARGUMENT",
            "postgresql source",
        ),
        ("RUNNING", None, _backfill_unknown_object, "NOT_FOUND", "was not found"),
    ],
)
def test_refusal_carries_datastreams_own_message(ds_sim, api, claim, state, sources, act, code, says):
    # given a stream in a state Datastream will not accept the action in
    name, mark = claim(state, sources), ds_sim.mark()
    # when the action is tried
    with pytest.raises(PermanentSourceError) as raised:
        act(api, name)
    # then the error is the server's refusal, word for word, and nothing changed
    assert raised.value.code == code
    assert says in str(raised.value)
    assert ds_sim.requests(since=mark)[-1].code == code
    assert api.get_stream(name).state == state


def test_recovery_from_a_position_the_source_no_longer_has_fails_at_the_end(ds_sim, api, claim):
    # given a permanently failed stream and a log position older than the source keeps
    name = claim("FAILED_PERMANENTLY", ("mysql", "oracle"))
    position = TOO_OLD[ds_sim.world.streams[name].source]
    # when it is recovered from there
    with pytest.raises(PermanentSourceError) as raised:
        operations.recover(api, name, "specific", position, **FOLLOW)
    # then the operation ends with Datastream's message, and the stream failed permanently again
    assert raised.value.code == "FAILED_PRECONDITION"
    assert "no longer available in the source's logs" in str(raised.value)
    stream = api.get_stream(name)
    assert stream.state == "FAILED_PERMANENTLY"
    assert [e.reason for e in stream.errors] == ["Start position unavailable"]


def test_bad_strategy_is_refused_before_anything_is_sent(ds_sim, api, claim):
    mark = ds_sim.mark()
    with pytest.raises(PermanentSourceError, match="needs a position"):
        operations.recover(api, "projects/demo-project/locations/us-central1/streams/stream-001", "specific")
    with pytest.raises(PermanentSourceError, match="must be one of"):
        operations.recover(api, "projects/demo-project/locations/us-central1/streams/stream-001", "yesterday")
    assert ds_sim.requests(since=mark) == []


def test_operation_not_done_in_time_is_retryable_and_still_ends(api, claim, wait_for):
    # given a running stream and a patience shorter than the operation
    name = claim("RUNNING")
    # when it is paused with that patience
    with pytest.raises(RetryableSourceError) as raised:
        operations.pause(api, name, timeout=0.2, interval=0.05)
    # then following gave up, but the pause itself still completes
    assert raised.value.code == "DEADLINE_EXCEEDED"
    wait_for("the pause to complete", lambda: api.get_stream(name).state == "PAUSED", timeout=30)
