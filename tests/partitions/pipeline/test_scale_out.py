"""Scale-out: two reader hosts (separate CDC_VAR_DIRs) on one database, one Redis, one landing zone in
an object store; one host is SIGKILLed mid-read, and the landing zone still equals the ground truth.

Production timings: the 60 s lease, so the dead host's partitions wait out their leases
before the live one takes them over (nothing shortened here).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from partitions.models import Partition
from partitions.pipeline import landing
from partitions.sources.landing import DEDUPE_KEY
from streams.models import Stream
from tests.factories.redis_server import RedisServer
from tests.partitions.pipeline.test_pipeline import create_stream, truth_keys, wait_until_finished

pytestmark = [pytest.mark.slow, pytest.mark.long_deadlines]
S = Stream.State
# Production defaults but for the broker's polling (unused with Redis) and the client's metrics.
PRODUCTION_ENV = {"SPANNER_DISABLE_BUILTIN_METRICS": "true", "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def redis_broker(tmp_path_factory):
    """Yield a Redis of this module's own, as the hosts' shared broker."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pipeline_broker(redis_broker) -> str:
    return redis_broker.url


@pytest.fixture(scope="module")
def landing_uri(s3_server) -> str:
    return s3_server.uri("cdc-scale-out")


@pytest.fixture(scope="module")
def pipeline_env(landing_uri) -> dict[str, str]:
    return {**PRODUCTION_ENV, "CDC_LANDING_URI": landing_uri}


def holds_leases(pipeline, name: str) -> bool:
    return bool(re.search(r"LEASE start", pipeline.log_text(name)))


def test_two_hosts_one_killed_land_the_ground_truth_in_the_object_store(
    pipeline, sim, landing_uri, tmp_path_factory, wait_for
):
    # given beat and two reader hosts, each with a CDC_VAR_DIR of its own
    pipeline.beat()
    pipeline.worker("host-a", CDC_VAR_DIR=str(tmp_path_factory.mktemp("host-a")))
    doomed = pipeline.worker("host-b", CDC_VAR_DIR=str(tmp_path_factory.mktemp("host-b")))
    # and a stream over 40 s of the past (splits and merges every 2 s)
    start = (timezone.now() - timedelta(minutes=25)).replace(microsecond=0)
    stream = create_stream(pipeline, sim, "scaled", start, start + timedelta(seconds=40))
    # when both read, and host b is SIGKILLed while it holds leases
    wait_for("host b to read", lambda: holds_leases(pipeline, "host-b"), timeout=60)
    wait_for("records landed", lambda: Partition.objects.filter(stream=stream, data_records__gt=0).exists())
    pipeline.kill(doomed)
    # then host a finishes the stream once host b's leases lapse
    wait_until_finished(wait_for, stream, timeout=240)
    assert holds_leases(pipeline, "host-a")
    # and the shared landing zone, deduplicated, is exactly the ground truth
    table = landing.read_landing(landing_uri, stream.pk)
    landed = set(zip(*(table.column(c).to_pylist() for c in DEDUPE_KEY), strict=True))
    assert landed == truth_keys(sim, stream)
    assert stream.transitions.filter(to_state=S.FAILED).count() == 0
