"""Session-wide fixtures shared by every app's tests."""

from __future__ import annotations

import itertools
import os

import pytest

from cdcweb import embedded_db
from partitions.models import Partition
from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server
from tests import factories
from tests.factories import databases
from tests.factories.object_store import S3Server

# The tests' database is on the embedded PostgreSQL (DATABASE_URL unset), as the demo's is.
embedded_db.start_if_default()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Name the test database after this process: two test runs on one server never share it."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("postgresql"):
        database.setdefault("TEST", {})["NAME"] = f"test_{database['NAME']}_{os.getpid()}"


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


@pytest.fixture
def make_stream(db):
    """Return the stream factory (tests.factories.make_stream)."""
    return factories.make_stream


@pytest.fixture
def make_partition(db):
    """Return a partition factory whose tokens count from token-0 in each test."""
    counter = itertools.count()

    def make(stream, state: str = Partition.State.RUNNING, minutes: float = 0, **fields) -> Partition:
        fields.setdefault("token", f"token-{next(counter)}")
        return factories.make_partition(stream, state, minutes, **fields)

    return make


@pytest.fixture(scope="session")
def s3_server():
    """Yield a local S3-compatible server (moto), its credentials in this process's environment."""
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def fresh_database():
    """Return the URL of an empty PostgreSQL database for processes a test starts; dropped after it."""
    url = databases.create_database("fresh")
    yield url
    databases.drop_database(url)


@pytest.fixture
def wait_for():
    """Return the polling helper: wait_for(what, check, timeout=60, every=0.2, detail=None)."""
    return factories.wait_for
