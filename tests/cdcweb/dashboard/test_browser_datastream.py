"""A Datastream stream in Debian's headless Chromium: paused and resumed from its page, and a move
made in Datastream by someone else shown within one polling interval plus the page's refresh.

Real parts: the Datastream simulator over gRPC, beat and a housekeeping worker polling it every
second (the pipeline fixtures of tests/partitions/pipeline), `manage.py runserver`, Chromium.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from partitions.simulator.datastream.config import DatastreamSimConfig
from partitions.simulator.datastream.server import start_server
from partitions.sources.datastream import operations
from partitions.sources.datastream.client import (
    DATASTREAM_ENDPOINT_ENV,
    MONITORING_ENDPOINT_ENV,
    DatastreamApi,
)
from streams.models import Stream, StreamOperation

pytestmark = pytest.mark.slow
_browser_spec = importlib.util.spec_from_file_location(
    "browser_tests", Path(__file__).with_name("test_browser.py")
)
_b = importlib.util.module_from_spec(_browser_spec)
_browser_spec.loader.exec_module(_b)
pipeline, pipeline_database, pipeline_broker = _b.pipeline, _b.pipeline_database, _b.pipeline_broker
browser, live_url, operator_login = _b.browser, _b.live_url, _b.operator_login
WATCH_SECONDS = 1.0
PANEL_REFRESH_SECONDS = 3.0  # templates/streams/_panel.html: hx-trigger "every 3s"


@pytest.fixture(scope="module")
def ds_server():
    """Yield a Datastream simulator whose streams hold their states for hours."""
    config = DatastreamSimConfig(seed=11, streams=40, cycle=7200.0, operation_seconds=0.5, metric_step=10.0)
    server = start_server(config)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pipeline_env(ds_server) -> dict[str, str]:
    """Return the pipeline tests' settings, polling watched streams every second at the simulator."""
    return {
        **_b._fixtures.TEST_ENV,
        "DJANGO_SECRET_KEY": "browser-test-" + "k" * 50,
        "CDC_WATCH_SECONDS": str(WATCH_SECONDS),
        DATASTREAM_ENDPOINT_ENV: ds_server.endpoint,
        MONITORING_ENDPOINT_ENV: ds_server.endpoint,
    }


def _wait(what, check, timeout=60):
    return _b._fixtures._wait_for(what, check, timeout=timeout)


def test_operator_pauses_and_resumes_a_datastream_stream_from_its_page(
    browser, pipeline, live_url, operator_login, ds_server
):
    from selenium.webdriver.common.by import By

    # given a running Datastream stream, imported and watched by beat
    name = next(iter(ds_server.steady_streams("RUNNING", 600.0)))
    stream_id = name.rsplit("/", 1)[-1]
    pipeline.manage("cdc_stream", "import-datastream", "--project", "demo-project", "--location",
                    "us-central1", "--stream", stream_id)  # fmt: skip
    pipeline.beat()
    stream = Stream.objects.get(name=stream_id)
    driver, (user, password) = browser, operator_login
    _b._log_in(driver, live_url, user, password, f"/streams/{stream.pk}/")
    _b._until(driver, "RUNNING", lambda d: _b._state(d) == "RUNNING", 60)
    _b._until(
        driver, "the Datastream state", lambda d: "RUNNING" in d.find_element(By.ID, "source-state").text, 30
    )
    # when the operator pauses it, then Datastream pauses it and the page shows it without a reload
    _b._act(driver, "pause")
    assert "Pause sent to Datastream" in driver.find_element(By.ID, "messages").text
    driver.execute_script("window.__sameDocument = true;")
    _b._until(driver, "PAUSED", lambda d: _b._state(d) == "PAUSED", 60)
    assert driver.execute_script("return window.__sameDocument === true;"), "the page reloaded"
    assert StreamOperation.objects.filter(stream=stream, action="pause", status="DONE").exists()
    _b._shot(driver, "datastream-paused.png")
    # when they resume it, then it runs again
    _b._act(driver, "resume")
    _b._until(driver, "RUNNING again", lambda d: _b._state(d) == "RUNNING", 60)
    _b._shot(driver, "datastream-resumed.png")
    # when someone pauses it in Datastream itself (not through cdcweb)
    outside = DatastreamApi(ds_server.endpoint, ds_server.endpoint, timeout=10.0)
    operations.pause(outside, name, interval=0.05, timeout=30)
    moved = time.monotonic()
    # then the page shows it within one polling interval, the page's refresh and 2 s
    _b._until(driver, "PAUSED from outside", lambda d: _b._state(d) == "PAUSED", 30)
    seen = time.monotonic() - moved
    print(f"a move made in Datastream showed on the page after {seen:.2f} s")
    assert seen <= WATCH_SECONDS + PANEL_REFRESH_SECONDS + 2.0
    _wait("the move recorded by beat", lambda: Stream.objects.get(pk=stream.pk).transitions.filter(
        by="partitions.watch.tasks.poll_watched_streams_task", to_state="PAUSED").exists())  # fmt: skip
