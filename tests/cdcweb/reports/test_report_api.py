"""Reports API: roles, creation with field errors, status and results, CSV of one table."""

from __future__ import annotations

import csv
import io

import pytest

from cdcweb.reports.models import Report

BODY = {"since": "2026-11-20T00:00:00Z", "until": "2026-11-21T00:00:00Z"}


@pytest.mark.parametrize(("role", "expected"), [(None, 401), ("viewer", 403), ("operator", 201)])
def test_only_operators_create_reports(
    api, new_stream, sent, role, expected, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api(role).post("/api/v1/reports/", {**BODY, "stream": new_stream.pk}, format="json")
    assert response.status_code == expected
    if expected == 201:
        assert response.json()["status"] == "QUEUED"
        assert sent == [response.json()["id"]]
    else:
        assert sent == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"since": "2026-11-21T00:00:00Z", "until": "2026-11-20T00:00:00Z"}, "until"),
        ({"since": "2026-01-01T00:00:00Z", "until": "2026-11-20T00:00:00Z"}, "until"),
        ({"since": "2026-11-20T00:00:00", "until": "2026-11-21T00:00:00Z"}, "since"),
        ({"since": "soon", "until": "2026-11-21T00:00:00Z"}, "since"),
        ({"until": "2026-11-21T00:00:00Z"}, "since"),
        ({"since": "2999-01-01T00:00:00Z", "until": "2999-01-02T00:00:00Z"}, "since"),
    ],
)
def test_bad_ranges_are_400_with_field_errors(api, new_stream, sent, body, field):
    response = api("operator").post("/api/v1/reports/", {**body, "stream": new_stream.pk}, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Report.objects.exists()


def test_unknown_stream_is_a_field_error(api, db, users):
    response = api("operator").post("/api/v1/reports/", {**BODY, "stream": 404}, format="json")
    assert response.status_code == 400
    assert "stream" in response.json()


def test_list_filters_by_stream_and_status(api, done_report, running_report):
    viewer = api("viewer")
    assert viewer.get("/api/v1/reports/").json()["count"] == 2
    running = viewer.get("/api/v1/reports/", {"status": "RUNNING"}).json()["results"]
    assert [(r["id"], r["progress_done"], r["progress_total"], r["percent"]) for r in running] == [
        (running_report.pk, 4, 11, 36)
    ]
    assert "results" not in running[0]
    assert viewer.get("/api/v1/reports/", {"stream": done_report.stream_id + 1}).status_code == 400
    assert api(None).get("/api/v1/reports/").status_code == 401


def test_detail_has_status_progress_summary_results_and_assumptions(api, done_report):
    body = api("viewer").get(f"/api/v1/reports/{done_report.pk}/").json()
    assert body["status"] == "DONE"
    assert body["summary"]["totals"]["mods"] == 7
    assert body["results"]["throughput"][0]["table_name"] == "Orders"
    assert body["assumptions"][0]["note"] == "list price, verify for your contract"


@pytest.mark.parametrize("url", ["/api/v1/reports/{pk}/?format=csv&table=throughput",
                                 "/api/v1/reports/{pk}/csv/?table=throughput"])  # fmt: skip
def test_one_table_as_csv(api, done_report, url):
    response = api("viewer").get(url.format(pk=done_report.pk))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["table_name"], r["mods"]) for r in rows] == [("Orders", "5"), ("Items", "2")]


def test_csv_of_an_unknown_or_unnamed_table_is_404_or_400(api, done_report):
    viewer = api("viewer")
    assert viewer.get(f"/api/v1/reports/{done_report.pk}/csv/?table=nosuch").status_code == 404
    assert viewer.get(f"/api/v1/reports/{done_report.pk}/csv/").status_code == 400
    assert viewer.get("/api/v1/reports/999/csv/?table=cost").status_code == 404


def test_reports_are_in_the_openapi_schema(api, users):
    schema = api("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {"/api/v1/reports/", "/api/v1/reports/{id}/", "/api/v1/reports/{id}/csv/"} <= set(schema["paths"])


def test_an_operator_may_ask_for_one_report_only(api, new_stream, sent):
    body = {**BODY, "stream": new_stream.pk, "kind": "cost"}
    assert api("operator").post("/api/v1/reports/", body, format="json").json()["kind"] == "cost"
    bad = api("operator").post("/api/v1/reports/", {**body, "kind": "everything"}, format="json")
    assert (bad.status_code, list(bad.json())) == (400, ["kind"])
