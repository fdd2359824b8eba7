"""Fixtures: Datastream simulators over real gRPC, and the client package pointed at them."""

from __future__ import annotations

import time

import pytest

from partitions.simulator.datastream.config import DatastreamSimConfig, SimClock
from partitions.simulator.datastream.server import start_server
from partitions.sources.datastream.client import DatastreamApi

# Long cycles keep a picked stream in its state for the length of a test; short operations
# and backfills keep the suite fast. A pinned epoch makes the states at start reproducible.
# Each module gets a simulator of its own, started when the module starts: a module run late
# in a long session (xdist) sees the streams as they are at the epoch, not minutes on, and
# no stream or backfill another module operated.
OPERATED = dict(
    seed=11, streams=200, cycle=7200.0, operation_seconds=0.6, backfill_seconds=1.5, metric_step=10.0
)


@pytest.fixture(scope="module")
def ds_sim():
    """Yield a fresh Datastream simulator whose streams the module's tests operate (``claim`` one first)."""
    server = start_server(DatastreamSimConfig(epoch=time.time(), **OPERATED))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api(ds_sim):
    """Return a DatastreamApi pointed at the module's simulator."""
    return DatastreamApi(ds_sim.endpoint, ds_sim.endpoint, timeout=10.0)


@pytest.fixture(scope="module")
def claim(ds_sim):
    """Return claim(state, sources=None, where=None): a stream in that state for the next minute,
    never given twice; ``where(stream, now)``, if given, must hold of its SimStream too."""
    taken: set[str] = set()

    def pick(state: str, sources: tuple[str, ...] | None = None, where=None) -> str:
        now = ds_sim.clock.now()
        for name in ds_sim.steady_streams(state, 60.0):
            stream = ds_sim.world.streams[name]
            fits = (sources is None or stream.source in sources) and (where is None or where(stream, now))
            if name not in taken and fits:
                taken.add(name)
                return name
        fitting = " that fits" if where else ""
        raise AssertionError(
            f"the simulator has no spare {state} stream of {sources or 'any source'}{fitting}"
        )

    return pick


@pytest.fixture
def travel():
    """Yield a small simulator whose clock tests move forward, and a client on it."""
    clock = SimClock()
    config = DatastreamSimConfig(seed=5, streams=16, cycle=600.0, metric_step=10.0, epoch=time.time())
    server = start_server(config, clock=clock)
    try:
        yield server, DatastreamApi(server.endpoint, server.endpoint, timeout=10.0)
    finally:
        server.stop()
