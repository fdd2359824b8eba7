"""Endpoints from the environment, one client per process, and fresh channels after a fork."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from partitions.sources.base import PermanentSourceError
from partitions.sources.datastream.client import (
    DATASTREAM_ENDPOINT_ENV,
    MONITORING_ENDPOINT_ENV,
    DatastreamApi,
    endpoints,
    shared_api,
)

ROOT = Path(__file__).resolve().parents[4]
STREAM = "projects/demo-project/locations/us-central1/streams/stream-003"


def test_endpoint_variables_point_both_clients_at_the_server(ds_sim, monkeypatch):
    # given both variables set to the simulator
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, ds_sim.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, ds_sim.endpoint)
    mark = ds_sim.mark()
    # when the process's shared client reads a stream and the metric descriptors
    api = shared_api()
    api.get_stream(STREAM)
    api.missing_metric_types("demo-project")
    # then both calls reached the simulator, and the same client serves the next caller
    assert [(r.method, r.target) for r in ds_sim.requests(since=mark)] == [
        ("GetStream", STREAM),
        ("ListMetricDescriptors", "projects/demo-project"),
    ]
    assert shared_api() is api
    assert (api.datastream_endpoint, api.monitoring_endpoint) == (ds_sim.endpoint, ds_sim.endpoint)


def test_unset_variables_mean_the_real_apis_with_default_credentials(monkeypatch):
    # given no endpoint variables
    monkeypatch.delenv(DATASTREAM_ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(MONITORING_ENDPOINT_ENV, raising=False)
    assert endpoints() == (None, None)
    api = DatastreamApi(*endpoints())
    # when the client is built, then it aims at datastream.googleapis.com with default
    # credentials, or says there are none (as on a machine without any)
    outcome = _build(api)
    assert outcome in ("datastream.googleapis.com", "UNAUTHENTICATED")


def _build(api: DatastreamApi) -> str:
    """Return the built client's endpoint, or the error code when it cannot be built."""
    try:
        return api.datastream.api_endpoint
    except PermanentSourceError as error:
        return error.code


def test_shared_client_follows_the_variables(ds_sim, monkeypatch):
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, ds_sim.endpoint)
    monkeypatch.setenv(MONITORING_ENDPOINT_ENV, ds_sim.endpoint)
    first = shared_api()
    monkeypatch.setenv(DATASTREAM_ENDPOINT_ENV, "127.0.0.1:9")
    second = shared_api()
    assert second is not first
    assert second.datastream_endpoint == "127.0.0.1:9"


FORKED = textwrap.dedent(
    """
    import os, sys, time
    from partitions.sources.base import RetryableSourceError
    from partitions.sources.datastream.client import DatastreamApi
    api = DatastreamApi(sys.argv[1], sys.argv[1], timeout=10)
    before = api.datastream
    api.get_stream(sys.argv[2])
    pid = os.fork()
    if pid == 0:
        # gRPC may refuse the first call right after a fork ("UNAVAILABLE: Stream removed
        # (sendmsg: Wrong file descriptor generation)"): retryable, so retried, as the
        # pipeline retries it.
        for attempt in range(3):
            try:
                ok = api.get_stream(sys.argv[2]).name == sys.argv[2] and api.datastream is not before
                break
            except RetryableSourceError as error:
                print(f"child, attempt {attempt + 1}: {error!r}", file=sys.stderr, flush=True)
                time.sleep(0.2)
            except BaseException as error:  # say why on stderr: the parent prints the exit code
                print(f"child: {error!r}", file=sys.stderr, flush=True)
                os._exit(4)
        else:
            os._exit(5)
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    api.get_stream(sys.argv[2])
    print(os.waitstatus_to_exitcode(status), api.datastream is before)
    """
)


@pytest.mark.slow
def test_a_forked_worker_builds_its_own_channels(ds_sim):
    # given a process that used its client, then forked (as a prefork pool does)
    result = subprocess.run(
        [sys.executable, "-c", FORKED, ds_sim.endpoint, STREAM],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # then the child read the stream through new clients and the parent kept its own
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True"], result.stderr
