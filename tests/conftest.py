"""Session-wide fixtures shared by every app's tests."""

from __future__ import annotations

import pytest

from partitions.simulator.config import SimulatorConfig
from partitions.simulator.server import start_server

# Fast-moving topology (an event every 2.5 s) over one hour of history, so that any
# window of a minute or two holds many splits and merges and a backlog to catch up.
SIMULATOR_CONFIG = SimulatorConfig(
    seed=7, roots=4, split_every=5.0, merge_every=5.0, tps=50.0, retention=3600.0
)


@pytest.fixture(scope="session")
def simulator():
    """Yield a running simulator (``.port``, ``.config``, ``.emulator_host``, ``.queries()``)."""
    server = start_server(SIMULATOR_CONFIG, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.stop(grace=0.5)


@pytest.fixture(autouse=True)
def _empty_cache():
    """Start every test with an empty cache: the API's cached answers must not cross tests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
