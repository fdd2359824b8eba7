"""Faults at production defaults, on servers this module starts itself, all within one read.

Five live streams read to an end 150 s ahead by two reader workers, the housekeeping
worker and beat, every timing at its production default (60 s leases, 5 s scheduling,
backoff up to 60 s). Meanwhile, on a fixed timeline:

- the landing zone refuses one stream's files for 25 s (a file where its folder goes);
- reader 2 is SIGSTOPped for 70 s, past its leases, then SIGCONTed;
- the source of one stream (its own simulator) is down for 70 s, past a lease;
- PostgreSQL (a server of this module's own) is restarted;
- Redis (this module's own, the broker) is restarted.

Each test then checks one fault: the stream reached its end with nobody acting, and its
landing zone, deduplicated, equals the simulator's ground truth.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import OperationalError, connections
from django.utils import timezone

from cdcweb import embedded_db
from partitions.models import Partition
from partitions.pipeline import landing
from partitions.simulator.spanner.server import start_server
from streams.models import Stream, StreamError
from tests.factories.redis_server import RedisServer
from tests.partitions.pipeline.conftest import _wait_for
from tests.partitions.pipeline.test_pipeline import create_stream, landed_keys, truth_keys

pytestmark = [pytest.mark.slow, pytest.mark.long_deadlines]
S = Stream.State
AHEAD = timedelta(seconds=150)
PRODUCTION_ENV = {"SPANNER_DISABLE_BUILTIN_METRICS": "true", "PYTHONUNBUFFERED": "1"}
NAMES = ("f-landing", "f-sigstop", "f-source", "f-postgres", "f-redis")


@pytest.fixture(scope="module")
def own_postgres():
    """Yield the folder of a PostgreSQL server of this module's own (the embedded binaries)."""
    var = Path(tempfile.mkdtemp(prefix="cdc-faults-db-"))
    embedded_db.ensure_running(var)
    yield var
    embedded_db.stop(var, mode="immediate")


@pytest.fixture(scope="module")
def pipeline_database(own_postgres) -> str:
    return embedded_db.url(own_postgres)


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pipeline_broker(own_redis) -> str:
    return own_redis.url


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    return PRODUCTION_ENV


@pytest.fixture(scope="module")
def source_sim(sim_config):
    """Yield [server]: the faulty stream's own simulator, stopped and started again on its port."""
    servers = [start_server(sim_config)]
    yield servers
    servers[-1].stop(0)


def db(read):
    """Return read(), reconnecting this process once if PostgreSQL was restarted under it."""
    try:
        return read()
    except OperationalError:
        connections["default"].close()
        return read()


@pytest.fixture(scope="module")
def faults(pipeline, sim, source_sim, own_postgres, own_redis):
    """Run the timeline; return the streams and the watermarks seen over it."""
    pipeline.beat()
    pipeline.worker("r1", threads=32)
    stopped = pipeline.worker("r2", threads=32)
    start = (timezone.now() - timedelta(seconds=10)).replace(microsecond=0)
    end = start + AHEAD
    streams = {}
    for name in NAMES:
        source = source_sim[0] if name == "f-source" else sim
        streams[name] = create_stream(pipeline, source, name, start, end, window=60, start_it=False)
    # the landing stream's folder is a file before it lands anything
    blocker = pipeline.landing / landing.stream_dir(streams["f-landing"].pk)
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder")
    for name in NAMES:
        pipeline.manage("cdc_stream", "start", name)
    seen: dict[int, list] = defaultdict(list)
    t0 = time.monotonic()

    def until(second: float) -> None:
        while time.monotonic() - t0 < second:
            for pk, mark in db(lambda: list(Partition.objects.values_list("pk", "watermark"))):
                seen[pk].append(mark)
            time.sleep(0.5)  # sampling watermarks on a timeline of faults: not a wait for a state

    until(10)
    os.killpg(stopped.pid, signal.SIGSTOP)
    until(15)
    port = source_sim[0].port
    source_sim[0].stop(0)
    until(25)
    blocker.unlink()
    until(30)
    embedded_db.stop(own_postgres, mode="fast")
    embedded_db.ensure_running(own_postgres)
    until(50)
    own_redis.restart()
    until(80)
    os.killpg(stopped.pid, signal.SIGCONT)
    until(85)
    source_sim.append(start_server(source_sim[0].config, port=port))

    def all_ended():
        rows = db(
            lambda: list(Stream.objects.filter(name__in=NAMES).values_list("name", "state", "reached_end_at"))
        )
        assert not [name for name, state, _ in rows if state == S.FAILED_PERMANENTLY]
        return all(reached for _, _, reached in rows)

    def where_they_are() -> str:
        """What a timeout reports: each stream, its partitions, its errors, the readers' last lines."""
        lines = []
        for name in NAMES:
            stream = db(lambda name=name: Stream.objects.get(name=name))
            lines.append(
                f"{name}: {stream.state} ({stream.state_reason!r}), ended at {stream.reached_end_at}"
            )
            for p in db(lambda stream=stream: list(stream.partitions.order_by("pk"))):
                lines.append(
                    f"  {p.token[:12]} {p.state} watermark={p.watermark:%H:%M:%S} lease={p.lease_owner!r}"
                )
            for error in db(lambda stream=stream: list(StreamError.objects.filter(stream=stream)[:3])):
                lines.append(f"  error {error.kind}: {error.message[:200]}")
        for worker in ("r1", "r2"):
            lines.append(
                f"--- {worker}, last lines:\n" + "\n".join(pipeline.log_text(worker).splitlines()[-15:])
            )
        return "\n".join(lines)

    _wait_for("every stream to reach its end", all_ended, timeout=300, detail=where_they_are)
    pipeline.stop_all()
    return {name: Stream.objects.get(pk=s.pk) for name, s in streams.items()}, seen


def assert_complete(pipeline, sim, stream) -> None:
    """Assert the stream ended by itself with exactly the ground truth landed (deduplicated)."""
    assert stream.state == S.PAUSED, stream.state_reason
    assert "reached end" in stream.state_reason
    acts = stream.transitions.exclude(by__startswith="partitions.").exclude(by__startswith="cdc_stream")
    assert not acts.exists(), "an operator had to act"
    assert landed_keys(pipeline, stream) == truth_keys(sim, stream)


def test_an_unwritable_landing_zone_shows_on_the_stream_then_lands_everything(pipeline, sim, faults):
    streams, _ = faults
    stream = streams["f-landing"]
    assert StreamError.objects.filter(stream=stream, kind=StreamError.Kind.LANDING).exists()
    assert_complete(pipeline, sim, stream)


def test_a_reader_stopped_past_its_leases_changes_nothing_when_it_resumes(pipeline, sim, faults):
    streams, seen = faults
    for marks in seen.values():
        assert marks == sorted(marks), "a watermark moved backwards"
    assert "LEASE start" in pipeline.log_text("r2")
    assert_complete(pipeline, sim, streams["f-sigstop"])


def test_a_source_down_longer_than_a_lease_is_read_again_once_back(pipeline, source_sim, faults):
    # A broken live query waits for its source with backoff for about a lease
    # (partitions/sources/spanner_retry.py), then fails retryably and gives its lease back;
    # the stream retries after its backoff and reads on from its watermarks once the source
    # is back, nobody acting (the client alone had restarted the query for ever, a core busy).
    streams, _ = faults
    stream = streams["f-source"]
    assert not stream.transitions.filter(to_state=S.FAILED_PERMANENTLY).exists()
    assert_complete(pipeline, source_sim[-1], stream)


def test_a_postgresql_restart_mid_read_is_no_source_failure(pipeline, sim, faults):
    streams, _ = faults
    stream = streams["f-postgres"]
    assert not StreamError.objects.filter(stream=stream).exists()
    assert not stream.transitions.filter(to_state=S.FAILED).exists()
    assert_complete(pipeline, sim, stream)


def test_a_redis_restart_mid_read_loses_no_read(pipeline, sim, faults):
    streams, _ = faults
    assert_complete(pipeline, sim, streams["f-redis"])
