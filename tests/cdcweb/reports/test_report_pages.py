"""Report pages: list with live progress, the operators' form, charts and assumptions, CSV export."""

from __future__ import annotations

import csv
import io

import pytest

from cdcweb.reports.models import Report
from tests.factories import make_stream


@pytest.fixture
def as_viewer(client, users):
    client.force_login(users["viewer"])
    return client


@pytest.fixture
def as_operator(client, users):
    client.force_login(users["operator"])
    return client


def test_anonymous_visitors_are_sent_to_log_in(client, done_report):
    assert client.get("/reports/").status_code == 302
    assert client.get(f"/reports/{done_report.pk}/throughput.csv").status_code == 302


def test_list_shows_a_running_reports_progress_and_refreshes_every_two_seconds(as_viewer, running_report):
    # when a viewer opens the list while a report runs
    page = as_viewer.get("/reports/").content.decode()
    # then the row shows its step count, a 36 % bar and a 2 s refresh
    assert "4/11 · latency_by_minute" in page
    assert '<progress class="progress" max="100" value="36"' in page  # a progress bar, no inline style
    assert 'hx-trigger="every 2s"' in page
    # and the viewer is offered no "New report"
    assert "New report" not in page


def test_list_filters_by_stream_and_stops_refreshing_when_all_finished(as_viewer, done_report, new_stream):
    other = make_stream("other", change_stream="Other", start_at=new_stream.start_at)
    Report.objects.create(stream=other, since=done_report.since, until=done_report.until, requested_by="x",
                          status=Report.Status.DONE)  # fmt: skip
    page = as_viewer.get(f"/reports/?stream={new_stream.pk}").content.decode()
    assert page.count("data-report=") == 1
    assert "every 2s" not in page


def test_viewers_cannot_open_the_new_report_form(as_viewer, new_stream):
    assert as_viewer.get("/reports/new/").status_code == 403
    assert as_viewer.post("/reports/new/", {"stream": new_stream.pk}).status_code == 403


def test_operator_creates_a_report_and_its_task_is_sent(
    as_operator, new_stream, sent, django_capture_on_commit_callbacks
):
    body = {"stream": new_stream.pk, "since": "2026-11-20T00:00", "until": "2026-11-21T00:00"}
    with django_capture_on_commit_callbacks(execute=True):
        response = as_operator.post("/reports/new/", body)
    report = Report.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/reports/{report.pk}/"
    assert (report.status, report.requested_by, sent) == (Report.Status.QUEUED, "otto", [report.pk])


@pytest.mark.parametrize(
    ("since", "until", "message"),
    [
        ("2026-11-21T00:00", "2026-11-20T00:00", "must be after its start"),
        ("2026-01-01T00:00", "2026-11-20T00:00", "at most 31 days"),
        ("yesterday", "2026-11-20T00:00", "cannot read the time &#x27;yesterday&#x27;"),
        ("2999-01-01T00:00", "2999-01-02T00:00", "starts in the future"),
    ],
)
def test_bad_ranges_show_field_errors_not_a_server_error(as_operator, new_stream, since, until, message):
    response = as_operator.post("/reports/new/", {"stream": new_stream.pk, "since": since, "until": until})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Report.objects.exists()


def test_unknown_stream_in_the_form_is_a_field_error(as_operator, new_stream):
    body = {"stream": 999, "since": "2026-11-20T00:00", "until": "2026-11-21T00:00"}
    response = as_operator.post("/reports/new/", body)
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()


def test_done_report_page_has_its_charts_data_and_assumptions(as_viewer, done_report):
    page = as_viewer.get(f"/reports/{done_report.pk}/").content.decode()
    for chart in ("chart-throughput", "chart-latency", "chart-shape-records", "chart-cost"):
        assert f'id="{chart}"' in page
    assert 'id="report-charts"' in page
    assert "latency_by_minute" in page
    assert "storage_usd_per_gib_month" in page
    assert "list price, verify for your contract" in page
    assert f"/reports/{done_report.pk}/throughput.csv" in page
    assert "every 2s" not in page


def test_running_report_page_polls_its_status_and_reloads_when_done(as_viewer, running_report):
    page = as_viewer.get(f"/reports/{running_report.pk}/").content.decode()
    assert f"/reports/{running_report.pk}/status/?was=RUNNING" in page
    assert "report-charts" not in page
    Report.objects.filter(pk=running_report.pk).update(status=Report.Status.DONE)
    response = as_viewer.get(f"/reports/{running_report.pk}/status/?was=RUNNING")
    assert response["HX-Refresh"] == "true"


def test_failed_report_page_shows_the_reason(as_viewer, new_stream, done_report):
    Report.objects.filter(pk=done_report.pk).update(
        status=Report.Status.FAILED, error="input path x does not exist"
    )
    page = as_viewer.get(f"/reports/{done_report.pk}/").content.decode()
    assert "input path x does not exist" in page


def test_csv_export_has_a_header_and_one_line_per_row(as_viewer, done_report):
    response = as_viewer.get(f"/reports/{done_report.pk}/throughput.csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:3] == ["stream_name", "table_name", "minute"]
    assert [r[1] for r in rows[1:]] == ["Orders", "Items"]
    assert as_viewer.get(f"/reports/{done_report.pk}/nosuch.csv").status_code == 404


def test_stream_page_and_navigation_link_to_reports(as_viewer, new_stream):
    page = as_viewer.get(f"/streams/{new_stream.pk}/").content.decode()
    assert f'href="/reports/?stream={new_stream.pk}"' in page
    assert 'href="/reports/"' in page


def test_the_list_costs_the_same_queries_for_many_reports(
    as_viewer, done_report, django_assert_max_num_queries
):
    for _ in range(20):
        Report.objects.create(
            stream=done_report.stream, since=done_report.since, until=done_report.until,
            requested_by="x", status=Report.Status.DONE, summary={"empty": True},
        )  # fmt: skip
    with django_assert_max_num_queries(8):
        page = as_viewer.get("/reports/").content.decode()
    assert page.count("no data in range") == 20


def test_users_and_garbage_collection_changes_are_shown_apart(as_viewer, done_report):
    # given a report whose totals count users' and system (garbage-collection) changes apart
    totals = {"user_records": 3, "user_mods": 5, "system_records": 1, "system_mods": 2}
    done_report.summary = {**done_report.summary, "totals": {**done_report.summary["totals"], **totals}}
    done_report.save(update_fields=["summary"])
    # when its page is shown, then both counts are there
    page = as_viewer.get(f"/reports/{done_report.pk}/").content.decode()
    assert '<dd id="total-user">3 (5 mods)</dd>' in page
    assert '<dd id="total-system">1 (2 mods)</dd>' in page


def test_a_report_made_before_the_split_shows_no_empty_counts(as_viewer, done_report):
    page = as_viewer.get(f"/reports/{done_report.pk}/").content.decode()
    assert 'id="total-user"' not in page
