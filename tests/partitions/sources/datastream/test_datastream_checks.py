"""Datastream checks before a create, against the simulator through the official clients."""

from __future__ import annotations

import pytest

from partitions.sources import KINDS
from partitions.sources.checks import run_checks
from partitions.sources.datastream.client import DATASTREAM_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV


@pytest.fixture
def check(ds_sim, monkeypatch):
    """Return check(**settings) -> {check: (ok, detail)} against the session's simulator."""
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, ds_sim.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, ds_sim.endpoint)
    kind = KINDS["datastream"]

    def run(**settings) -> dict[str, tuple[bool, str]]:
        values = {"project": "demo-project", "location": "us-central1", "stream_id": "stream-001", **settings}
        return {r.check: (r.ok, r.detail) for r in run_checks(kind.checks(kind.clean(values)))}

    return run


def test_a_stream_that_exists_is_visible_with_its_metrics(check):
    found = check()
    assert [ok for ok, _ in found.values()] == [True, True, True]
    assert found["stream exists"][1] == "stream stream-001 exists"


def test_a_stream_that_does_not_exist_fails_naming_some_that_do(check):
    found = check(stream_id="stream-9999")
    ok, detail = found["stream exists"]
    assert not ok
    assert detail.startswith("stream stream-9999 does not exist (there are: stream-000, stream-001,")
    assert found["stream visible"] == (False, "not checked: stream exists failed")
