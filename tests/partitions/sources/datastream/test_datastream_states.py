"""Datastream's states in cdcweb's terms, the actions each allows, and the paused-near-retention warning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from partitions.sources.datastream.states import CDCWEB_STATES, allowed_actions, retention_risk, to_cdcweb

NOW = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("state", CDCWEB_STATES)
def test_the_seven_shared_states_map_to_themselves(state):
    assert to_cdcweb(state, previous="RUNNING") == (to_cdcweb(state))
    assert to_cdcweb(state).state == state
    assert to_cdcweb(state).maintenance is False


def test_maintenance_keeps_the_state_before_with_the_flag():
    assert to_cdcweb("MAINTENANCE", previous="PAUSED") == to_cdcweb("PAUSED").__class__("PAUSED", True)
    assert to_cdcweb("MAINTENANCE").state == "RUNNING"
    assert to_cdcweb("MAINTENANCE").maintenance is True


def test_an_unknown_state_keeps_what_was_known():
    assert to_cdcweb("STATE_UNSPECIFIED", previous="FAILED").state == "FAILED"
    assert to_cdcweb("UNKNOWN_42").state == "NOT_STARTED"


def test_maintenance_stream_read_from_the_api_carries_the_flag(api, claim):
    stream = api.get_stream(claim("MAINTENANCE"))
    assert to_cdcweb(stream.state, previous="RUNNING").maintenance is True
    assert allowed_actions(stream.state) == frozenset()


@pytest.mark.parametrize(
    ("state", "actions"),
    [
        ("NOT_STARTED", {"resume"}),
        ("RUNNING", {"pause", "backfill"}),
        ("PAUSED", {"resume", "recover", "backfill"}),
        ("FAILED", {"pause", "recover", "backfill"}),
        ("FAILED_PERMANENTLY", {"recover"}),
        ("DRAINING", {"backfill"}),
    ],
)
def test_each_state_allows_what_datastream_accepts(state, actions):
    assert allowed_actions(state) == actions


def test_paused_near_the_log_retention_warns_with_the_hours_left():
    # given a stream paused 140 hours ago and a source keeping 168 hours of logs
    risk = retention_risk("PAUSED", NOW - timedelta(hours=140), 168, NOW)
    # then it is warned about, with 28 hours left to resume
    assert round(risk.hours_left) == 28
    assert "Paused for 140 h of the source's 168 h log retention: resume within 28 h" in risk.message


@pytest.mark.parametrize(
    ("state", "hours_ago"), [("PAUSED", 100), ("RUNNING", 500), ("FAILED_PERMANENTLY", 500), ("PAUSED", None)]
)
def test_no_warning_while_early_or_reading_or_already_lost(state, hours_ago):
    since = None if hours_ago is None else NOW - timedelta(hours=hours_ago)
    assert retention_risk(state, since, 168, NOW) is None


def test_failing_stream_is_warned_about_too():
    risk = retention_risk("FAILED", NOW - timedelta(hours=30), 24, NOW)
    assert risk.hours_left < 0
    assert risk.message.startswith("Failing for 30 h")
