"""What operators can do to a simulated stream, with Datastream's rules and refusals.

Pause (update state to PAUSED): RUNNING, STARTING or FAILED streams drain, then pause.
Resume (update state to RUNNING): NOT_STARTED or PAUSED streams start, then run.
RunStream: NOT_STARTED, PAUSED, FAILED or FAILED_PERMANENTLY streams start; a
FAILED_PERMANENTLY one only with a CDC strategy (a recovery). Any update of a stream in
MAINTENANCE is refused, as the API's enum says, and so is a backfill's start or stop; a
backfill also needs a started, not permanently failed stream. The simulated sources
retain MySQL binary logs from mysql-bin.000100 and Oracle SCNs from 1000000 on: a
specific start position older than that makes the recovery's operation fail, and the
stream fails permanently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grpc import StatusCode

from partitions.simulator.core.server import Refusal

from .catalog import position_unavailable
from .world import ACTIVE_JOBS, Job, SimObject, SimStream

PAUSE_FROM = frozenset({"RUNNING", "STARTING", "FAILED"})
RESUME_FROM = frozenset({"NOT_STARTED", "PAUSED"})
RUN_FROM = frozenset({"NOT_STARTED", "PAUSED", "FAILED", "FAILED_PERMANENTLY"})
_POSITION_SOURCES = {
    "mysql_log_position": "mysql",
    "mysql_gtid_position": "mysql",
    "oracle_scn_position": "oracle",
    "sql_server_lsn_position": "sql_server",
    "mongodb_change_stream_position": "mongodb",
    "spanner_change_stream_position": "spanner",
}
_MYSQL_LOG = re.compile(r"^[A-Za-z0-9_.-]+\.(\d{6})$")
_OLDEST_MYSQL_LOG, _OLDEST_ORACLE_SCN = 100, 1_000_000
_STARTS = {
    "most_recent_start_position": "from the most recent position in the source",
    "next_available_start_position": "from the next available position in the source",
    "specific_start_position": "from the specific start position",
}


@dataclass(frozen=True)
class Strategy:
    """A RunStream CDC strategy: its kind and, for a specific one, the position's field and value."""

    kind: str  # most_recent_start_position, next_available_start_position, specific_start_position
    position_kind: str = ""
    position: str = ""  # the position as text, e.g. mysql-bin.000123:4


@dataclass(frozen=True)
class Outcome:
    """How an accepted operation unfolds: when it ends, its progress messages, how it ends."""

    verb: str
    done_at: float
    stages: tuple[tuple[float, str], ...]
    error: Refusal | None = None


def pause(stream: SimStream, now: float, seconds: float) -> Outcome:
    """Drain then pause a stream, or refuse."""
    moment = _updatable(stream, now)
    if moment.state not in PAUSE_FROM:
        raise Refusal(StatusCode.FAILED_PRECONDITION, _pause_refusal(stream.name, moment.state))
    done = now + seconds
    stream.schedule([(now, "DRAINING", moment.errors), (done, "PAUSED", ())])
    return Outcome(
        "update",
        done,
        (
            (now, "Draining: no longer reading new events; writing buffered events to the destination"),
            (now + seconds / 2, "Draining: writing the last buffered events"),
        ),
    )


def resume(stream: SimStream, now: float, seconds: float) -> Outcome:
    """Start a not started or paused stream, or refuse."""
    moment = _updatable(stream, now)
    if moment.state not in RESUME_FROM:
        raise Refusal(StatusCode.FAILED_PRECONDITION, _resume_refusal(stream.name, moment.state))
    done = now + seconds
    stream.schedule([(now, "STARTING", ()), (done, "RUNNING", ())])
    return Outcome("update", done, _starting(now, seconds, "from where the stream left off"))


def run(stream: SimStream, now: float, seconds: float, strategy: Strategy | None) -> Outcome:
    """Run (or recover, with a CDC strategy) a stream, or refuse."""
    moment = _updatable(stream, now)
    if moment.state not in RUN_FROM:
        raise Refusal(
            StatusCode.FAILED_PRECONDITION,
            f"Stream {stream.name} is {moment.state}: only a stream that is not started, paused or "
            "failed can be run.",
        )
    if moment.state == "FAILED_PERMANENTLY" and strategy is None:
        raise Refusal(
            StatusCode.FAILED_PRECONDITION,
            f"Stream {stream.name} failed permanently: recover it with a CDC strategy (most recent, "
            "next available or a specific start position).",
        )
    done = now + seconds
    how = _STARTS[strategy.kind] if strategy else "from where the stream left off"
    error = _position_error(stream, strategy, done) if strategy else None
    if error is not None:
        stream.schedule([(now, "STARTING", ()), (done, "FAILED_PERMANENTLY", (error,))])
        return Outcome(
            "run", done, _starting(now, seconds, how), Refusal(StatusCode.FAILED_PRECONDITION, error.message)
        )
    stream.schedule([(now, "STARTING", ()), (done, "RUNNING", ())])
    if strategy is not None:
        stream.recovered_at = done
    return Outcome("run", done, _starting(now, seconds, how))


def start_backfill(stream: SimStream, obj: SimObject, now: float, seconds: float) -> None:
    """Start a manual backfill of one object, or refuse."""
    state = _updatable(stream, now).state
    if state in ("NOT_STARTED", "FAILED_PERMANENTLY"):
        raise Refusal(
            StatusCode.FAILED_PRECONDITION,
            f"Stream {stream.name} is {state}: start or recover it before backfilling {obj.display_name}.",
        )
    if obj.job(now).state in ACTIVE_JOBS:
        raise Refusal(
            StatusCode.FAILED_PRECONDITION,
            f"A backfill job is already running for object {obj.display_name}.",
        )
    active, end = now + min(1.0, seconds / 10), now + seconds
    obj.track = [entry for entry in obj.track if entry[0] < now] + [
        (now, Job("PENDING", "MANUAL")),
        (active, Job("ACTIVE", "MANUAL", active)),
        (end, Job("COMPLETED", "MANUAL", active, end)),
    ]


def stop_backfill(stream: SimStream, obj: SimObject, now: float) -> None:
    """Stop the running backfill of one object, or refuse."""
    _updatable(stream, now)
    job = obj.job(now)
    if job.state not in ACTIVE_JOBS:
        raise Refusal(
            StatusCode.FAILED_PRECONDITION,
            f"No backfill job is running for object {obj.display_name} (its job is {job.state}).",
        )
    obj.track = [entry for entry in obj.track if entry[0] <= now] + [
        (now, Job("STOPPED", job.trigger, job.start, now))
    ]


def _updatable(stream: SimStream, now: float):
    """Return the stream's moment now, refusing any change while it is in maintenance."""
    moment = stream.moment(now)
    if moment.state == "MAINTENANCE":
        raise Refusal(
            StatusCode.FAILED_PRECONDITION,
            f"Stream {stream.name} is in maintenance: updates are rejected until the maintenance ends.",
        )
    return moment


def _pause_refusal(name: str, state: str) -> str:
    """Return Datastream's message for a pause refused in a state."""
    return {
        "NOT_STARTED": f"Stream {name} can't be paused because it hasn't been started.",
        "PAUSED": f"Stream {name} is already paused.",
        "DRAINING": f"Stream {name} is already being paused (DRAINING).",
        "FAILED_PERMANENTLY": f"Stream {name} failed permanently and can't be paused: recover it instead.",
    }.get(state, f"Stream {name} can't be paused in state {state}.")


def _resume_refusal(name: str, state: str) -> str:
    """Return Datastream's message for a resume refused in a state."""
    return {
        "RUNNING": f"Stream {name} is already running.",
        "STARTING": f"Stream {name} is already starting.",
        "DRAINING": f"Stream {name} is draining: resume it once it is paused.",
        "FAILED": f"Stream {name} failed: Datastream retries it automatically, or recover it with RunStream.",
        "FAILED_PERMANENTLY": (
            f"Stream {name} failed permanently: recover it with RunStream and a CDC strategy."
        ),
    }.get(state, f"Stream {name} can't be resumed in state {state}.")


def _starting(now: float, seconds: float, how: str) -> tuple[tuple[float, str], ...]:
    """Return the progress messages of a stream starting over ``seconds``."""
    return (
        (now, "Starting: validating the stream's source and destination"),
        (now + seconds / 3, f"Starting: connecting to the source to read {how}"),
        (now + 2 * seconds / 3, "Starting: writing the first events to the destination"),
    )


def _position_error(stream: SimStream, strategy: Strategy, at: float):
    """Refuse a position of another source type; return the error of one the source no longer has."""
    if strategy.kind != "specific_start_position":
        return None
    wanted = _POSITION_SOURCES.get(strategy.position_kind)
    if wanted != stream.source:
        raise Refusal(
            StatusCode.INVALID_ARGUMENT,
            f"The specific start position is a {strategy.position_kind or 'missing position'} but stream "
            f"{stream.name} reads from a {stream.source} source.",
        )
    if _too_old(strategy):
        return position_unavailable(stream.name, strategy.position, at)
    return None


def _too_old(strategy: Strategy) -> bool:
    """Return whether the source no longer retains a specific start position."""
    if strategy.position_kind == "mysql_log_position":
        match = _MYSQL_LOG.match(strategy.position.split(":")[0])
        if match is None:
            raise Refusal(
                StatusCode.INVALID_ARGUMENT, f"Invalid binary log file name in {strategy.position}."
            )
        return int(match[1]) < _OLDEST_MYSQL_LOG
    if strategy.position_kind == "oracle_scn_position":
        return int(strategy.position) < _OLDEST_ORACLE_SCN
    return False
