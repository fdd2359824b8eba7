"""Fixtures: a simulator whose commit-timestamp tables are busy enough for small pages to matter."""

from __future__ import annotations

import pytest

from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server

# 400 row versions/s per table, in groups sharing a commit timestamp; 19 shard values;
# a key written again 60 s after its previous write, so a poller keeping up sees every version.
TABLE_CONFIG = SimulatorConfig(seed=11, tps=5.0, retention=3600.0, table_rate=400.0, table_shards=19)


@pytest.fixture(scope="module")
def table_simulator():
    """Yield a running simulator with busy commit-timestamp tables."""
    server = start_server(TABLE_CONFIG, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.stop(grace=0.5)
