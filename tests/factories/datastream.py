"""Fixtures of watched streams: a Datastream simulator over real gRPC, the clients pointed at it.

conftest.py files import them (tests/partitions/watch, tests/cdcweb/dashboard and its api/)."""

from __future__ import annotations

import time

import pytest

from partitions.simulator.datastream.config import DatastreamSimConfig, SimClock
from partitions.simulator.datastream.server import start_server
from partitions.sources.datastream.client import DATASTREAM_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV

PROJECT, LOCATION = "demo-project", "us-central1"
# Long cycles keep a stream in its state for a test; quick operations keep the suite fast.
STEADY = dict(
    seed=11, streams=200, cycle=7200.0, operation_seconds=0.4, backfill_seconds=8.0, metric_step=10.0
)


@pytest.fixture(scope="session")
def ds_watch_sim():
    """Yield a running Datastream simulator of 200 streams in every state."""
    server = start_server(DatastreamSimConfig(epoch=time.time(), **STEADY))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def at_sim(ds_watch_sim, monkeypatch):
    """Point DATASTREAM_API_ENDPOINT and MONITORING_API_ENDPOINT at the simulator; return it."""
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, ds_watch_sim.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, ds_watch_sim.endpoint)
    return ds_watch_sim


@pytest.fixture
def travel(monkeypatch):
    """Yield a small simulator whose clock a test moves forward, the clients pointed at it."""
    clock = SimClock()
    config = DatastreamSimConfig(seed=5, streams=4, cycle=600.0, metric_step=10.0, epoch=time.time())
    server = start_server(config, clock=clock)
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, server.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, server.endpoint)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def without_freshness(monkeypatch):
    """Yield a small simulator whose project has no freshness descriptor, the clients pointed at it."""
    config = DatastreamSimConfig(
        seed=5, streams=4, cycle=7200.0, metric_step=10.0, epoch=time.time(), missing_metrics=("freshness",)
    )
    server = start_server(config)
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, server.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, server.endpoint)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pick(ds_watch_sim):
    """Return pick(state, source=None): the ID of a simulated stream in that state for the next minute
    (of that source type, e.g. mysql, when given), never twice."""
    taken: set[str] = set()

    def one(state: str, source: str | None = None) -> str:
        for name in ds_watch_sim.steady_streams(state, 60.0):
            if name not in taken and source in (None, ds_watch_sim.world.streams[name].source):
                taken.add(name)
                return name.rsplit("/", 1)[-1]
        raise AssertionError(f"the simulator has no spare {state} stream of {source or 'any source'}")

    return one
