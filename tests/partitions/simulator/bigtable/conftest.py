"""A session Bigtable simulator for the simulator's own tests (its own config, its own port)."""

from __future__ import annotations

import pytest

from partitions.simulator.bigtable.config import BigtableSimulatorConfig
from partitions.simulator.bigtable.server import start_server

# A split and a merge every 3 s over an hour of history.
CONFIG = BigtableSimulatorConfig(
    seed=5, roots=3, split_every=3.0, merge_every=3.0, tps=80.0, retention=3600.0, chunk_bytes=1024
)


@pytest.fixture(scope="session")
def bigtable_sim():
    """Yield a running simulator of CONFIG."""
    server = start_server(CONFIG)
    try:
        yield server
    finally:
        server.stop(grace=0.5)
