"""A session Bigtable simulator and a source reading it through the official client."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bigtable_support import BIGTABLE_CONFIG, source_for

from partitions.simulator.bigtable.server import start_server
from partitions.simulator.core.config import Fault
from partitions.sources.bigtable.kind import BigtableSource


@pytest.fixture(scope="session")
def bigtable_simulator():
    """Yield a running simulator (``.emulator_host``, ``.config``, ``.reads()``, ``.tables``)."""
    server = start_server(BIGTABLE_CONFIG)
    try:
        yield server
    finally:
        server.stop(grace=0.5)


@pytest.fixture(scope="session")
def bigtable_source(bigtable_simulator) -> BigtableSource:
    """Return a Source of the session simulator's table with a change stream."""
    return source_for(bigtable_simulator)


@pytest.fixture
def faulty_simulator(bigtable_simulator):
    """Yield a simulator like the session's that breaks streams with UNAVAILABLE (1 message in 15)."""
    config = replace(bigtable_simulator.config, faults=(Fault("unavailable", 1 / 15),))
    server = start_server(config)
    try:
        yield server
    finally:
        server.stop(grace=0)
