"""Bigtable checks before a create, against the simulator through the official client.

Each fails for its own reason, and passes once that is fixed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from partitions.sources import KINDS
from partitions.sources.checks import run_checks


@pytest.fixture
def check(bigtable_simulator, monkeypatch):
    """Return check(**settings) -> {check: (ok, detail)} of the kind's checks against the simulator."""
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", bigtable_simulator.emulator_host)
    kind = KINDS["bigtable"]

    def run(start=None, **settings) -> dict[str, tuple[bool, str]]:
        values = {"project": "test-project", "instance": "test-instance", "table": "events",
                  "app_profile": "default", **settings}  # fmt: skip
        return {r.check: (r.ok, r.detail) for r in run_checks(kind.checks(kind.clean(values), start))}

    return run


def failed(found: dict) -> list[str]:
    return [name for name, (ok, _) in found.items() if not ok]


def test_a_table_with_its_change_stream_read_through_one_cluster_passes(check):
    assert failed(check()) == []


def test_a_multi_cluster_app_profile_fails_and_a_single_cluster_one_passes(check):
    found = check(app_profile="multi")
    assert failed(found) == ["app profile routes to one cluster", "start inside retention"]
    assert "the app profile must use single-cluster routing" in found["app profile routes to one cluster"][1]
    assert failed(check(app_profile="cdc")) == []


def test_a_table_without_a_change_stream_fails_that_check(check):
    found = check(table="plain")
    assert found["table exists"][0]
    assert not found["change stream enabled"][0]
    assert "change streams are not enabled on table plain" in found["change stream enabled"][1]


def test_a_missing_table_fails_and_the_rest_are_not_asked(check):
    found = check(table="nope")
    assert "table nope was not found" in found["table exists"][1]
    assert found["change stream enabled"] == (False, "not checked: table exists failed")


def test_a_start_outside_retention_fails_and_inside_passes(check):
    found = check(start=datetime.now(UTC) - timedelta(hours=2))  # the simulator keeps one hour
    assert failed(found) == ["start inside retention"]
    assert "older than the change stream retention period" in found["start inside retention"][1]
    assert failed(check(start=datetime.now(UTC) - timedelta(minutes=10))) == []
