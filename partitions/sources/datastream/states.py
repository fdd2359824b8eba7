"""Datastream's stream states as cdcweb's seven, what each lets an operator do, and retention risk.

The v1 API's ``Stream.State`` has cdcweb's seven states under the same names, plus
MAINTENANCE and STATE_UNSPECIFIED:

=====================  ====================================  ===========
Datastream state       cdcweb state                          maintenance
=====================  ====================================  ===========
NOT_STARTED            NOT_STARTED                           no
STARTING               STARTING                              no
RUNNING                RUNNING                               no
DRAINING               DRAINING                              no
PAUSED                 PAUSED                                no
FAILED                 FAILED                                no
FAILED_PERMANENTLY     FAILED_PERMANENTLY                    no
MAINTENANCE            the state before (RUNNING if unknown)  yes
STATE_UNSPECIFIED      the state before (NOT_STARTED if unknown)  no
=====================  ====================================  ===========

MAINTENANCE is Google maintaining the stream, not a stage of its life: the stream keeps
the state it had (normally RUNNING: maintenance happens to live streams), and the flag
says that Datastream rejects every update meanwhile, so pages should show a badge and
disable the actions. STATE_UNSPECIFIED is what an older or newer API would send for a
state this code does not know: keep what was known rather than invent a move.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

CDCWEB_STATES = ("NOT_STARTED", "STARTING", "RUNNING", "DRAINING", "PAUSED", "FAILED", "FAILED_PERMANENTLY")
MAINTENANCE = "MAINTENANCE"

# What Datastream accepts in each state (the simulator enforces the same rules):
# pause = update state to PAUSED, resume = update state to RUNNING (also starts a
# NOT_STARTED stream), recover = RunStream with a CDC strategy, backfill = start or stop
# one object's backfill job.
_ACTIONS = {
    "NOT_STARTED": frozenset({"resume"}),
    "STARTING": frozenset({"pause", "backfill"}),
    "RUNNING": frozenset({"pause", "backfill"}),
    "DRAINING": frozenset({"backfill"}),
    "PAUSED": frozenset({"resume", "recover", "backfill"}),
    "FAILED": frozenset({"pause", "recover", "backfill"}),
    "FAILED_PERMANENTLY": frozenset({"recover"}),
    MAINTENANCE: frozenset(),
}
# States in which the stream reads nothing from the source's logs while they keep ageing.
_NOT_READING = frozenset({"PAUSED", "FAILED"})


@dataclass(frozen=True)
class CdcwebState:
    """A Datastream state in cdcweb's terms: one of the seven, and whether it is under maintenance."""

    state: str
    maintenance: bool = False


def to_cdcweb(datastream_state: str, previous: str | None = None) -> CdcwebState:
    """Return cdcweb's state for a Datastream state name; ``previous`` is cdcweb's last known one."""
    if datastream_state in CDCWEB_STATES:
        return CdcwebState(datastream_state)
    if datastream_state == MAINTENANCE:
        return CdcwebState(previous if previous in CDCWEB_STATES else "RUNNING", maintenance=True)
    return CdcwebState(previous if previous in CDCWEB_STATES else "NOT_STARTED")


def allowed_actions(datastream_state: str) -> frozenset[str]:
    """Return the actions Datastream accepts in a state: pause, resume, recover, backfill."""
    return _ACTIONS.get(datastream_state, frozenset())


@dataclass(frozen=True)
class RetentionRisk:
    """A stream that reads nothing while the source's logs age: how long it has, in hours."""

    state: str
    since: datetime
    elapsed_hours: float
    retention_hours: int
    hours_left: float

    @property
    def message(self) -> str:
        """Return the warning as pages show it."""
        verb = "Paused" if self.state == "PAUSED" else "Failing"
        return (
            f"{verb} for {self.elapsed_hours:.0f} h of the source's {self.retention_hours} h log retention: "
            f"resume within {max(self.hours_left, 0):.0f} h, or the stream will have to be recovered "
            "from a new position."
        )


def retention_risk(
    state: str, since: datetime | None, retention_hours: int, now: datetime, margin: float = 0.8
) -> RetentionRisk | None:
    """Return the risk when a paused or failed stream has spent ``margin`` of the log retention.

    ``since`` is when the stream entered the state (the stream's update time is the best
    the API offers). While paused or failing a stream reads nothing; once the source purges
    the logs it stopped at, it cannot continue and must be recovered from another position.
    """
    if state not in _NOT_READING or since is None or retention_hours <= 0:
        return None
    elapsed = (now - since).total_seconds() / 3600
    if elapsed < margin * retention_hours:
        return None
    return RetentionRisk(state, since, elapsed, retention_hours, retention_hours - elapsed)
