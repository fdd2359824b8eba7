"""The dashboard in Debian's headless Chromium against a live server and a running demo stream.

The stream is real: a Celery worker reads it from the simulator over gRPC (the
pipeline fixtures of tests/partitions/pipeline), and the web server is a separate
`manage.py runserver` process on the same database and broker, so a Pause clicked
in the browser reaches the worker that drains the stream.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from partitions.models import LagSample, Partition
from streams.models import Stream

pytestmark = pytest.mark.slow
DRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path("test-artifacts")
# Reuse the pipeline engineer's fixtures (simulator, worker processes, shared database).
_spec = importlib.util.spec_from_file_location(
    "pipeline_fixtures", Path(__file__).resolve().parents[2] / "partitions" / "pipeline" / "conftest.py"
)
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
pipeline, sim_config, sim = _fixtures.pipeline, _fixtures.sim_config, _fixtures.sim
pipeline_database, pipeline_broker = _fixtures.pipeline_database, _fixtures.pipeline_broker

POINTS_JS = """
const el = document.getElementById(arguments[0]);
if (!el || !el.data) return 0;
return el.data.reduce((n, t) => n + (t.x || []).filter(v => v !== null).length, 0);
"""


@pytest.fixture(scope="module")
def pipeline_env() -> dict[str, str]:
    """Return the pipeline tests' settings, with the alert rules evaluated every second and a secret
    key (the web server refuses the development one)."""
    return {
        **_fixtures.TEST_ENV,
        "CDC_ALERT_EVALUATE_SECONDS": "1",
        "DJANGO_SECRET_KEY": "browser-test-" + "k" * 50,
    }


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Yield a headless Chromium driven by Selenium, or skip when none is installed."""
    binary = _chromium()
    if binary is None or not os.path.exists(DRIVER):
        pytest.skip("chromium not found: apt-get install chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1440,2000"):  # fmt: skip
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    # The console is read after each page: a Content-Security-Policy violation is an error there.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def live_url(pipeline):
    """Start `manage.py runserver` on the pipeline's database and broker; return its URL."""
    port = _free_port()
    pipeline.spawn("web", sys.executable, "manage.py", "runserver",
                   f"127.0.0.1:{port}", "--noreload", "--insecure")  # fmt: skip

    def answers() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    _fixtures._wait_for(
        "the web server to accept connections", answers, detail=lambda: pipeline.log_text("web")[-2000:]
    )
    return f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def demo_stream(pipeline, sim, _wait):
    """Start a demo stream with a backlog, read by a real worker; wait for lineage and lag samples."""
    pipeline.beat()
    pipeline.worker("w1")
    start = (timezone.now() - timedelta(minutes=2)).replace(microsecond=0)
    pipeline.manage(
        "cdc_stream", "create", "demo", "--project", "p", "--instance", "i", "--database", "demo-db",
        "--change-stream", sim.config.stream, "--start", start.isoformat(), "--heartbeat-ms", "1000",
        "--window-seconds", "5", "--emulator-host", sim.emulator_host,
    )  # fmt: skip
    pipeline.manage("cdc_stream", "start", "demo")
    stream = Stream.objects.get(name="demo")
    _wait("partitions and lag samples", lambda: Partition.objects.filter(stream=stream).count() > 8
          and LagSample.objects.filter(stream=stream).count() >= 3, timeout=120)  # fmt: skip
    return stream


@pytest.fixture(scope="module")
def _wait():
    return _fixtures._wait_for


@pytest.fixture(scope="module")
def operator_login(pipeline):
    """Create an operator account in the pipeline's database; return (name, password)."""
    user = User.objects.create_user("olga", password="olga-pw-123")
    user.groups.add(Group.objects.get_or_create(name="operators")[0])
    return "olga", "olga-pw-123"


def console_errors(driver) -> list[str]:
    """Return the console's errors since the last call (CSP violations, script errors, failed loads)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _until(driver, what, check, timeout=60):
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
        TimeoutException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    # Live refresh swaps parts of the page: an element read mid-swap is simply read again.
    ignored = (NoSuchElementException, StaleElementReferenceException)
    wait = WebDriverWait(driver, timeout, poll_frequency=0.3, ignored_exceptions=ignored)
    try:
        return wait.until(lambda d: check(d))
    except TimeoutException:
        driver.save_screenshot(str(ARTIFACTS / "failure.png"))
        pytest.fail(f"timed out waiting for {what} ({timeout} s)")
    except Exception as error:
        driver.save_screenshot(str(ARTIFACTS / "failure.png"))
        pytest.fail(f"waiting for {what}: {type(error).__name__}: {error}")


def _shot(driver, name: str) -> None:
    assert console_errors(driver) == [], f"console errors on {driver.current_url}"
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1440, max(900, min(height + 40, 6000)))
    driver.save_screenshot(str(ARTIFACTS / name))


def _click(driver, by, selector: str, attempts: int = 5) -> None:
    """Click an element, finding it again if a live refresh replaced it in between."""
    from selenium.common.exceptions import StaleElementReferenceException

    for attempt in range(attempts):
        try:
            driver.find_element(by, selector).click()
            return
        except StaleElementReferenceException:
            if attempt == attempts - 1:
                raise


def _state(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, "stream-state").text.strip()


def _act(driver, action: str) -> None:
    """Click an action button, confirm in its dialog, and wait for the page that follows."""
    from selenium.webdriver.common.by import By

    def messages(d) -> str:
        return " ".join(m.text for m in d.find_elements(By.CSS_SELECTOR, ".message"))

    # (the previous action's message may still be shown: wait for this one's)
    before = _until(driver, "the messages shown", lambda d: messages(d) or " ", 10).strip()
    _click(driver, By.CSS_SELECTOR, f'[data-open-dialog="dlg-{action}"]')
    _until(
        driver, f"the {action} dialog", lambda d: d.find_element(By.ID, f"dlg-{action}").is_displayed(), 10
    )
    _click(driver, By.CSS_SELECTOR, f'#dlg-{action} [data-confirm="{action}"]')
    _until(driver, "the action's message", lambda d: messages(d) not in ("", before), 30)


def test_operator_watches_pauses_and_resumes_a_running_stream(
    browser, pipeline, live_url, demo_stream, operator_login
):
    from selenium.webdriver.common.by import By

    driver, (name, password) = browser, operator_login
    # given an operator who logs in
    driver.get(live_url + "/")
    assert "/login/" in driver.current_url
    driver.find_element(By.NAME, "username").send_keys(name)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit].btn-primary").click()
    # when they open the overview, then the stream's row shows its state and lag
    row_text = _until(
        driver, "the stream's row", lambda d: d.find_element(By.CSS_SELECTOR, 'tr[data-stream="demo"]').text
    )
    assert "RUNNING" in row_text or "STARTING" in row_text
    _shot(driver, "overview.png")
    # when they open the stream page, then the lineage and lag charts have data
    _click(driver, By.CSS_SELECTOR, 'tr[data-stream="demo"] a')
    _until(driver, "lineage points", lambda d: d.execute_script(POINTS_JS, "lineage-chart") > 8, 60)
    _until(driver, "lag points", lambda d: d.execute_script(POINTS_JS, "lag-chart") >= 3, 60)
    # (drawn, not only given data: WebGL charts need a Plotly that runs under the CSP, no eval)
    for chart in ("lineage-chart", "lag-chart"):
        assert "WebGL is not supported" not in driver.find_element(By.ID, chart).text, chart
    _until(
        driver,
        "the partition tree",
        lambda d: d.find_elements(By.CSS_SELECTOR, "#partition-tree details"),
        30,
    )
    _until(driver, "RUNNING", lambda d: _state(d) == "RUNNING", 60)
    _shot(driver, "stream.png")
    # when they pause it, then it is DRAINING, and PAUSED a little later without a reload
    _act(driver, "pause")
    assert "DRAINING" in driver.find_element(By.ID, "messages").text
    driver.execute_script("window.__sameDocument = true;")
    _until(driver, "PAUSED", lambda d: _state(d) == "PAUSED", 90)
    assert driver.execute_script("return window.__sameDocument === true;"), "the page reloaded"
    _shot(driver, "paused.png")
    # when they resume it, then it runs again
    _act(driver, "resume")
    assert "STARTING" in driver.find_element(By.ID, "messages").text
    driver.execute_script("window.__sameDocument = true;")
    _until(driver, "RUNNING again", lambda d: _state(d) == "RUNNING", 90)
    assert driver.execute_script("return window.__sameDocument === true;")
    assert list(demo_stream.transitions.values_list("to_state", flat=True))[-4:] == [
        "DRAINING", "PAUSED", "STARTING", "RUNNING",
    ]  # fmt: skip
    _shot(driver, "resumed.png")
    # and a partition's page opens from the table
    # (the table refreshes itself every few seconds, so read the link in one step rather
    # than holding an element that a swap can replace between find and click)
    href = driver.execute_script("return document.querySelector('#partition-table tbody a').href")
    driver.get(href)
    _until(driver, "the watermark chart", lambda d: d.execute_script(POINTS_JS, "watermark-chart") >= 2, 30)
    _shot(driver, "partition.png")
    # and the reports page and the API's docs run under the Content-Security-Policy too
    driver.get(live_url + "/reports/")
    _until(
        driver, "the reports page", lambda d: d.find_elements(By.CSS_SELECTOR, "select[data-autosubmit]"), 30
    )
    _shot(driver, "reports.png")
    driver.get(live_url + "/api/docs/")
    _until(driver, "the API docs", lambda d: d.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock"), 60)
    _shot(driver, "api-docs.png")


def _log_in(driver, live_url: str, name: str, password: str, path: str) -> None:
    """Open path, logging in first if the session has none."""
    from selenium.webdriver.common.by import By

    driver.get(live_url + path)
    if "/login/" in driver.current_url:
        driver.find_element(By.NAME, "username").send_keys(name)
        driver.find_element(By.NAME, "password").send_keys(password)
        driver.find_element(By.CSS_SELECTOR, "button[type=submit].btn-primary").click()
        driver.get(live_url + path)


def test_operator_creates_an_alert_rule_and_sees_it_fire(
    browser, pipeline, live_url, demo_stream, operator_login
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver, (name, password) = browser, operator_login
    # given an operator on the new-rule page
    _log_in(driver, live_url, name, password, "/alerts/rules/new/")
    # when they ask for an alert as soon as the demo stream has any lag at all
    driver.find_element(By.NAME, "name").send_keys("demo-any-lag")
    Select(driver.find_element(By.NAME, "kind")).select_by_value("lag_above")
    Select(driver.find_element(By.NAME, "stream")).select_by_visible_text("demo")
    for field, value in (("threshold_seconds", "0"), ("for_minutes", "0")):
        driver.find_element(By.NAME, field).clear()
        driver.find_element(By.NAME, field).send_keys(value)
    driver.find_element(By.CSS_SELECTOR, "#alert-form button[type=submit]").click()
    # then the rule is listed with its condition
    row = _until(
        driver, "the new rule", lambda d: d.find_element(By.CSS_SELECTOR, 'tr[data-rule="demo-any-lag"]')
    )
    assert "lag above 0 s for 0 min" in row.text
    # and the alerts page shows it firing within seconds, without a reload
    driver.get(live_url + "/alerts/")
    firing = '#alerts-firing tr[data-rule="demo-any-lag"]'
    text = _until(driver, "the alert firing", lambda d: d.find_element(By.CSS_SELECTOR, firing).text, 60)
    assert "FIRING" in text
    assert "demo: lag" in text
    _shot(driver, "alert-firing.png")
    # and its evidence link opens the stream's lag chart over the alert's window
    href = driver.execute_script(f"return document.querySelector('{firing} a[href*=\"since=\"]').href")
    driver.get(href)
    _until(driver, "lag points in the window", lambda d: d.execute_script(POINTS_JS, "lag-chart") >= 1, 30)
