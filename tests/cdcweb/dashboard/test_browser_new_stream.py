"""The New stream page in Debian's headless Chromium: check against the simulator, refused, fixed, created.

A live `manage.py runserver` on the pipeline's database, and the Spanner simulator over
gRPC as the source: the checks the browser shows are those the server ran against it.
"""

from __future__ import annotations

import pytest

from streams.models import AuditEntry, Stream
from tests.cdcweb.dashboard import test_browser as shared

pytestmark = pytest.mark.slow
# The browser, live server and pipeline fixtures of the dashboard's browser test.
pipeline, sim_config, sim = shared.pipeline, shared.sim_config, shared.sim
pipeline_database, pipeline_broker, pipeline_env = (
    shared.pipeline_database,
    shared.pipeline_broker,
    shared.pipeline_env,
)
browser, live_url, operator_login, _until = (
    shared.browser,
    shared.live_url,
    shared.operator_login,
    shared._until,
)


def _fill(driver, values: dict[str, str]) -> None:
    from selenium.webdriver.common.by import By

    for name, value in values.items():
        field = driver.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)


def _beside(driver, setting: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, f"checks-{setting}").text


def test_operator_checks_a_new_stream_fixes_it_and_creates_it(
    browser, pipeline, sim, live_url, operator_login
):
    from selenium.webdriver.common.by import By

    driver, (name, password) = browser, operator_login
    # given an operator on the overview
    driver.get(live_url + "/login/")
    driver.find_element(By.NAME, "username").send_keys(name)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit].btn-primary").click()
    _until(driver, "the overview", lambda d: d.find_element(By.ID, "new-stream-button"))
    # when they pick New stream, then the kind first, then its settings with their help
    driver.find_element(By.ID, "new-stream-button").click()
    _until(driver, "the kinds", lambda d: d.find_element(By.ID, "kind-spanner_change_stream")).click()
    _until(driver, "the form", lambda d: d.find_element(By.ID, "new-stream"))
    assert "the change stream's name" in driver.page_source
    _fill(driver, {
        "name": "checked", "project": "p", "instance": "i", "database": "demo-db", "change_stream": "Orders",
        "emulator_host": sim.emulator_host, "start_at": "-5m", "heartbeat_ms": "1000",
    })  # fmt: skip
    # when they press Check, then the failure shows beside the change stream's field
    driver.find_element(By.ID, "check").click()
    _until(driver, "the checks", lambda d: d.find_element(By.ID, "check-summary"))
    assert "change stream Orders does not exist (there are: Changes)" in _beside(driver, "change_stream")
    assert "✓ database answers" in _beside(driver, "database")
    # when they press Create anyway without overriding, then it is refused and nothing exists
    driver.find_element(By.ID, "create").click()
    _until(driver, "the refusal", lambda d: "Create refused" in d.find_element(By.ID, "messages").text)
    assert not Stream.objects.filter(name="checked").exists()
    # when they fix the name and check again, then every check passes; Create makes the stream
    _fill(driver, {"change_stream": "Changes"})
    driver.find_element(By.ID, "check").click()
    _until(
        driver,
        "all checks passing",
        lambda d: "All 5 checks passed" in d.find_element(By.ID, "check-summary").text,
    )
    driver.find_element(By.ID, "create").click()
    _until(
        driver,
        "the stream's page",
        lambda d: "Created stream checked" in d.find_element(By.ID, "messages").text,
    )
    stream = Stream.objects.get(name="checked")
    assert stream.state == Stream.State.NOT_STARTED
    assert AuditEntry.objects.get(stream=stream).action == "create"
    assert shared.console_errors(driver) == []
