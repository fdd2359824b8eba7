"""Fixtures shared by every app's tests: each defined here once, used wherever its name is asked for.

users, operator, viewer: one user per role, and token clients of an operator and a viewer.
stream: a RUNNING stream with a lineage of 40 partitions and an hour of lag samples.
make_stream, make_partition: rows straight through the ORM (tests.factories).
spark: the session's one local[2] Spark session (the report job's tests and the re-read's).
wait_for: the one polling helper. A directory's conftest.py adds only what is its own.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import shutil
import tempfile

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from cdcweb import embedded_db
from partitions.models import Partition
from partitions.simulator.spanner.config import SimulatorConfig
from partitions.simulator.spanner.server import start_server
from spark_tasks.session import build_session
from streams.roles import OPERATORS, VIEWERS, ensure_roles
from tests import factories
from tests.factories import databases
from tests.factories.api import token_for
from tests.factories.lineage import make_lineage_stream
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


# Under xdist, the worker's collection names each end-to-end and Spark module's kind
# (see below) in this file; the controller's scheduler reads it.
TOGETHER_FILE = "cdcweb_together"
_together_dir = pytest.StashKey[str]()
TIMED, LONG = "timed", "long"  # the two kinds of module that need cores of their own
TIMED_UNIT = "end-to-end"  # the scheduler's one unit of every TIMED module


def _kind(item) -> str | None:
    """Return what ``item`` asks of the machine: LONG, TIMED, or None for a test run in this process.

    An end-to-end (``slow``) test starts servers and workers and waits for them; a Spark
    one keeps two task threads busy. TIMED: its deadlines or assertions are about time
    (a lease lapses, the live edge within heartbeats, a browser's wait), so it needs the
    cores it has in a one-process run. LONG (the ``long_deadlines`` mark, and every test
    of the session's Spark): its waits are minutes long and it asserts what lands, not
    when, so another LONG module may run beside it.
    """
    spark = "spark" in getattr(item, "fixturenames", ())
    slow = item.get_closest_marker("slow") is not None
    if item.get_closest_marker("long_deadlines") is not None or (spark and not slow):
        return LONG
    return TIMED if slow or spark else None


def _module_id(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, name the end-to-end and Spark modules' kinds for the scheduler, and sort them.

    `make test` runs the suite on two workers (``-n 2 --dist loadgroup``, the scheduler
    below). Two end-to-end modules at once on two cores missed deadlines
    (docs/benchmarks.md, issue 22, goal 6), so the TIMED modules run one after another
    on one worker, first, while the other worker runs the modules whose tests run in the
    test process itself (they leave the second core to the TIMED module's processes).
    The LONG modules come last, one each to whichever worker is free, two at once, but
    never beside a TIMED one. Each kind's modules keep their relative order, and every
    module its own.
    """
    _unique_test_ids(items)
    if not hasattr(config, "workerinput"):
        return
    kinds: dict = {}
    for item in items:
        kind = _kind(item)
        if kind is not None and kinds.get(item.module) != TIMED:
            kinds[item.module] = kind  # one TIMED test makes its module TIMED
    order = {TIMED: 0, None: 1, LONG: 2}
    items.sort(key=lambda item: order[kinds.get(item.module)])
    path = config.workerinput.get(TOGETHER_FILE)
    if path:  # every worker collects the same tests and writes the same names
        names = {_module_id(item.nodeid): kinds[item.module] for item in items if item.module in kinds}
        tmp = f"{path}.{config.workerinput['workerid']}"
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(names, out)
        os.replace(tmp, path)


def _unique_test_ids(items) -> None:
    """Give every test its own id; stop the run if two still share one.

    schemathesis (4.32) names each API operation's test ``test[GET /path]`` but leaves
    it without parameters, and pytest 9 builds a test's id from its function's name and
    parameters alone: all 51 operations of test_api_schema got one id. xdist schedules
    by id, so under `make test` 50 of them were silently not run. The operation goes
    back into the id as its parameters (pytest 9 has no public way to set an id).
    """
    for item in items:
        original = getattr(item, "originalname", None)
        if original and item.name != original and getattr(item, "callspec", None) is None:
            label = item.name.removeprefix(f"{original}[").removesuffix("]")
            if label != item.name:
                item._id = item.parent.id.child(original).with_params(label)
    ids = collections.Counter(item.nodeid for item in items)
    shared = sorted(nodeid for nodeid, count in ids.items() if count > 1)
    if shared:
        raise pytest.UsageError(f"tests share an id, so xdist would run only one of each: {shared[:5]}")


def pytest_configure_node(node):
    """Tell each xdist worker where to name the modules that run together (controller side)."""
    if node.config.getvalue("dist") == "loadgroup":
        node.workerinput[TOGETHER_FILE] = os.path.join(node.config.stash[_together_dir], "together.json")


def pytest_configure(config):
    if not hasattr(config, "workerinput") and config.getvalue("dist") == "loadgroup":
        config.stash[_together_dir] = tempfile.mkdtemp(prefix="cdcweb-xdist-")


def pytest_unconfigure(config):
    if _together_dir in config.stash:
        shutil.rmtree(config.stash[_together_dir], ignore_errors=True)


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup``, run the TIMED modules as one unit and never beside a LONG one.

    Every other module is a unit of its own. A LONG module waits for a free worker while
    the TIMED unit still runs on the other one. (xdist's own group marks no longer reach
    its scheduler under pytest 9: the test ids it extends are not the ones reported.)
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    return _make_scheduler(config, log, os.path.join(config.stash[_together_dir], "together.json"))


def _make_scheduler(config, log, path: str):
    from xdist.scheduler import LoadScopeScheduling

    class TimedApartFromLong(LoadScopeScheduling):
        kinds: dict[str, str] | None = None

        def _kind_of(self, nodeid: str) -> str | None:
            if self.kinds is None:  # read once every worker has collected
                with open(path, encoding="utf-8") as names:
                    self.kinds = json.load(names)
            return self.kinds.get(_module_id(nodeid))

        def _split_scope(self, nodeid: str) -> str:
            return TIMED_UNIT if self._kind_of(nodeid) == TIMED else _module_id(nodeid)

        def _timed_elsewhere(self, node) -> bool:
            """Return whether a node other than ``node`` has TIMED tests (all in one unit) still to run."""
            return any(
                other is not node and not all(work.get(TIMED_UNIT, {}).values())
                for other, work in self.assigned_work.items()
            )

        def _reschedule(self, node) -> None:
            if self.workqueue and not node.shutting_down:
                nodeid = next(iter(next(iter(self.workqueue.values()))))
                if self._kind_of(nodeid) == LONG and self._timed_elsewhere(node):
                    return  # asked again as each of the other node's tests completes
            super()._reschedule(node)

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            super().mark_test_complete(node, item_index, duration)
            for other in self.nodes:  # a node held back may go on once TIMED work is done
                if other is not node:
                    self._reschedule(other)

    return TimedApartFromLong(config, log)


@pytest.fixture(scope="session", autouse=True)
def _own_landing_zone(tmp_path_factory):
    """Land and write reports under this session's temporary folder, not CDC_VAR_DIR's.

    Test databases number their streams from 1 each: two sessions at once (the workers of
    `make test`) would otherwise land their stream 1 in one shared folder.
    """
    from django.conf import settings

    settings.CDC_LANDING_URI = str(tmp_path_factory.mktemp("landing"))
    settings.CDC_REPORTS_DIR = tmp_path_factory.mktemp("reports")


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


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Hash test passwords with MD5: the real hasher costs about a second per user here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _user(name: str, group: str | None = None, **flags) -> User:
    user = User.objects.create_user(name, password="pw", **flags)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def users(db) -> dict[str, User | None]:
    """Return one user per role, each with the password "pw" (None for anonymous)."""
    ensure_roles(apps)
    return {
        "anonymous": None,
        "viewer": _user("vera", VIEWERS),
        "operator": _user("otto", OPERATORS),
        "superuser": _user("root", is_superuser=True, is_staff=True),
    }


@pytest.fixture
def client_as(users):
    """Return a factory: an APIClient authenticated with the role's token (or anonymous)."""

    tokens: dict[str, str] = {}

    def make(role: str) -> APIClient:
        client = APIClient()
        if users[role] is not None:
            if role not in tokens:
                tokens[role] = token_for(users[role])
            client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[role]}")
        return client

    return make


@pytest.fixture
def operator(client_as) -> APIClient:
    """Return an operator's token client."""
    return client_as("operator")


@pytest.fixture
def viewer(client_as) -> APIClient:
    """Return a viewer's token client."""
    return client_as("viewer")


@pytest.fixture
def stream(db):
    """Return a RUNNING stream with 40 partitions (splits and merges) and an hour of lag samples."""
    return make_lineage_stream("orders", 40, lag_days=1 / 24)


@pytest.fixture(name="make_stream")
def stream_factory_fixture(db):
    """Return the stream factory, tests.factories.make_stream, with the database open to it."""
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


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory):
    """Yield the URL of a database migrated once per session: the template of the pipeline's databases.

    Copying it (CREATE DATABASE ... TEMPLATE) takes a fraction of a second; migrating an
    empty database in a new process takes seconds, and most end-to-end modules want one.
    """
    url = databases.create_database("template")
    databases.migrate(url, tmp_path_factory.mktemp("template-var"))
    yield url
    databases.drop_database(url)


@pytest.fixture(name="wait_for")
def wait_for_fixture():
    """Return the polling helper: wait_for(what, check, timeout=60, every=0.2, detail=None)."""
    return factories.wait_for


@pytest.fixture
def unfinished_kind(monkeypatch) -> str:
    """Return the name of a registered kind made unavailable for the test, as an unfinished kind is."""
    from partitions.sources import KINDS

    reason = "streams of this kind cannot be created yet: its pipeline is not finished (a test)"
    monkeypatch.setattr(KINDS["bigtable"], "unavailable", reason)
    return "bigtable"


@pytest.fixture(scope="session")
def spark():
    """Yield one local[2] Spark session for the whole test session (a JVM takes seconds to start)."""
    session = build_session(master="local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()
