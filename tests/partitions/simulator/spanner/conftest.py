"""Fixtures for reading the session simulator through the official client."""

from __future__ import annotations

import pytest
from simulator_rows import Reader


@pytest.fixture(scope="session")
def reader(simulator):
    """Return a Reader bound to the session's simulator."""
    return Reader(simulator.port)
